/* lib/origin.h: naming where a recipe value came from. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/origin.h"

void wb_origin_format(const struct wb_origin *o, char *out, size_t len)
{
	if (!o || !o->file)
		snprintf(out, len, "default");
	else if (o->file[0] == '-' || !strncmp(o->file, "env ", 4))
		snprintf(out, len, "%s #%d", o->file, o->line);
	else
		snprintf(out, len, "%s:%d:%d", o->file, o->line, o->col);
}

int wb_origin_error(struct wb_err *e, const struct wb_origin *o, const char *fmt, ...)
{
	char where[512], msg[1536];
	va_list ap;

	wb_origin_format(o, where, sizeof(where));
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return wb_error(e, WB_EUSAGE, "%s: %s", where, msg);
}
