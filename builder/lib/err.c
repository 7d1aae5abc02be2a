#include <stdio.h>
#include <string.h>

#include "err.h"
#include "redact.h"

int wb_verror(struct wb_err *e, int code, const char *fmt, va_list ap)
{
	if (!e)
		return -1;
	e->code = code;
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	/* a URL's userinfo or signed query never reaches a message (issue 31) */
	redact_text(e->msg, sizeof(e->msg));
	return -1;
}

int wb_error(struct wb_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	wb_verror(e, code, fmt, ap);
	va_end(ap);
	return -1;
}

void wb_error_prefix(struct wb_err *e, const char *fmt, ...)
{
	char old[WB_ERR_MAX];
	va_list ap;
	int n;

	if (!e)
		return;
	memcpy(old, e->msg, sizeof(old));
	va_start(ap, fmt);
	n = vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(e->msg) - 3) {
		redact_text(e->msg, sizeof(e->msg));
		return;
	}
	e->msg[n++] = ':';
	e->msg[n++] = ' ';
	memcpy(e->msg + n, old, sizeof(e->msg) - (size_t)n - 1);
	e->msg[sizeof(e->msg) - 1] = '\0';
	redact_text(e->msg, sizeof(e->msg));
}

void wb_err_clear(struct wb_err *e)
{
	e->code = 0;
	e->msg[0] = '\0';
}
