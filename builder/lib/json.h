/* JSON glue: every JSON file winbuild writes goes through here. */
#ifndef WB_JSON_H
#define WB_JSON_H

#include <jansson.h>

#include "lib/err.h"

/*
 * Serialise ROOT with jansson FLAGS (e.g. JSON_INDENT(2) | JSON_SORT_KEYS),
 * add a final newline and write PATH atomically (fs_write_atomic, 0644).
 * ROOT stays owned by the caller. Errors are WB_EIO naming PATH.
 */
int json_write_file(const char *path, const json_t *root, size_t flags,
		    struct wb_err *e);

#endif
