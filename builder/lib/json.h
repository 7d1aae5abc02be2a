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

/*
 * The base64 field NAME of OBJ (protobuf-JSON bytes: standard base64, line
 * breaks skipped), malloc'd, its length in *LEN. NULL with WB_EUSAGE
 * "WHAT: 'NAME' is missing or not a string" or "WHAT: 'NAME' is not base64".
 */
unsigned char *json_get_b64(const json_t *obj, const char *name, const char *what,
			    size_t *len, struct wb_err *e);

/* A JSON string of S as text_record() keeps it (lib/text.h): never a
 * dropped field for text that is not UTF-8. NULL for a NULL S (as
 * json_string(NULL)). */
json_t *json_text(const char *s);

/*
 * Bytes read from outside (a checksum file, a signature, an attestation)
 * as a record keeps them, byte-exact: a JSON string when they are UTF-8
 * without a NUL (JSON text is UTF-8, RFC 8259 section 8.1, and jansson
 * refuses anything else), else {"base64": "..."} of all LEN bytes.
 * json_bytes_get reads either form back: malloc'd, NUL-terminated, the
 * length in *LEN; NULL when V is neither. The one way such bytes go into
 * a record and come back (a cache ref's kept files: fetch/refs.c).
 */
json_t *json_bytes(const char *p, size_t len);
char *json_bytes_get(const json_t *v, size_t *len);

/* A URL as every record keeps it: redact_url() (lib/redact.h: no
 * userinfo, no signed query value), then json_text. NULL for NULL. The
 * only way a URL goes into a record (tests/cli/layers.bats checks). */
json_t *json_url(const char *url);

#endif
