/*
 * Errors: modules never print and never exit. A failing function fills a
 * struct wb_err with an exit class and a message and returns -1; only the
 * CLI layer (main.c, cmd/) prints err->msg and exits with err->code.
 */
#ifndef WB_ERR_H
#define WB_ERR_H

#include <stdarg.h>

/* Exit codes, documented in docs/exit-codes.md and winbuild(1). */
enum wb_exit {
	WB_OK = 0,
	WB_EVERIFY = 1,  /* a digest or signature did not match */
	WB_EUSAGE = 2,   /* usage, recipe, override, parse: could not even check */
	WB_ENET = 3,     /* network / fetch error */
	WB_ESTAGE = 4,   /* archive / staging error (hostile entry, limits) */
	WB_EIO = 5,      /* I/O or internal error */
	WB_EINTR = 130,  /* interrupted by SIGINT/SIGTERM; temp files removed */
};

#define WB_ERR_MAX 4096

struct wb_err {
	int code;              /* enum wb_exit; 0 when no error was recorded */
	char msg[WB_ERR_MAX];  /* lowercase, no full stop, subject in quotes */
};

#define WB_ERR_INIT { 0, { 0 } }

/* Record an error of class CODE and return -1 (so `return wb_error(...)`). */
int wb_error(struct wb_err *e, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int wb_verror(struct wb_err *e, int code, const char *fmt, va_list ap);

/* Prefix the recorded message with "PREFIX: " (context added by a caller). */
void wb_error_prefix(struct wb_err *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Clear a recorded error. */
void wb_err_clear(struct wb_err *e);

#endif
