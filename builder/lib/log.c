#include <stdarg.h>
#include <stdio.h>

#include "log.h"

void wb_log(struct wb_log *log, int level, const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	if (!log || !log->emit || level > log->level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log->emit(log, level, msg);
}
