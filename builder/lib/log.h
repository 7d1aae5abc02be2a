/*
 * The logger sink. Modules never print: they call wb_log() on the sink the
 * CLI layer gave them (through struct wb_run), and the CLI decides where it
 * goes (stderr, quiet, verbose, JSON).
 */
#ifndef WB_LOG_H
#define WB_LOG_H

enum wb_log_level {
	WB_LOG_ERROR = 0,
	WB_LOG_WARN = 1,
	WB_LOG_INFO = 2,
	WB_LOG_DEBUG = 3,
};

struct wb_log {
	/* Called with a formatted, newline-free message. May be NULL (silent). */
	void (*emit)(struct wb_log *log, int level, const char *msg);
	int level;   /* messages above this level are dropped */
	void *ctx;   /* for the emitter */
};

void wb_log(struct wb_log *log, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
