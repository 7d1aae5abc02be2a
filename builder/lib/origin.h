/*
 * Where a recipe value came from: "file:line:col", "--set #2", "env
 * WINBUILD_SET #1" or "default". Every layer that reports a recipe value
 * (recipe/ for the plan, trust/ for a verification requirement) names it
 * this way.
 */
#ifndef WB_ORIGIN_H
#define WB_ORIGIN_H

#include <stddef.h>

#include "lib/err.h"

/* FILE is "path" for files, "env WINBUILD_SET" or "--set" for flags (then
 * LINE is the 1-based index of the pair). */
struct wb_origin {
	const char *file;   /* interned, owned by the plan (or the loader) */
	int line, col;      /* 1-based; 0 when unknown (defaults) */
};

/* "file:line:col", "--set #2", or "default" into OUT. */
void wb_origin_format(const struct wb_origin *o, char *out, size_t len);

/* Record a WB_EUSAGE error "ORIGIN: message" and return -1. */
int wb_origin_error(struct wb_err *e, const struct wb_origin *o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
