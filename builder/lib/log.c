/* @where buffers, allocation, string lists, logging */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"
#include "redact.h"

void wb_log(struct wb_log *log, int level, const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	if (!log || !log->emit || level > log->level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	redact_text(msg, sizeof(msg));   /* issue 31: no secret in a URL shown */
	log->emit(log, level, msg);
}
