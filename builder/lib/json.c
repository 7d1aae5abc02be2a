#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "lib/redact.h"
#include "lib/base64.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/json.h"
#include "lib/text.h"

int json_write_file(const char *path, const json_t *root, size_t flags,
		    struct wb_err *e)
{
	struct buf b = BUF_INIT;
	char *text = json_dumps(root, flags);
	int ret;

	if (!text)
		return wb_error(e, WB_EIO, "cannot format '%s'", path);
	/* a record leaves the process: lib/redact.h, as stdout and stderr */
	{
		char *r = redact_text_dup(text, strlen(text));

		buf_adds(&b, r);
		free(r);
	}
	buf_addc(&b, '\n');
	free(text);
	ret = fs_write_atomic(path, b.ptr, b.len, 0644, e);
	buf_release(&b);
	return ret;
}

unsigned char *json_get_b64(const json_t *obj, const char *name, const char *what,
			    size_t *len, struct wb_err *e)
{
	const json_t *v = json_object_get(obj, name);
	unsigned char *r;

	if (!json_is_string(v)) {
		wb_error(e, WB_EUSAGE, "%s: '%s' is missing or not a string", what, name);
		return NULL;
	}
	r = b64_decode(json_string_value(v), json_string_length(v), len);
	if (!r)
		wb_error(e, WB_EUSAGE, "%s: '%s' is not base64", what, name);
	return r;
}

/*
 * @where the signature file that verified an artifact, kept byte-exact for
 *   `mirror` -- a JSON string when UTF-8 without a NUL, else base64
 */
json_t *json_bytes(const char *p, size_t len)
{
	json_t *j;
	char *b64;

	if (!p || len > (size_t)INT_MAX / 2)   /* EVP_EncodeBlock's int; files are capped far below */
		return NULL;
	if (text_utf8_valid(p, len))
		return json_stringn(p, len);
	b64 = xmalloc(4 * ((len + 2) / 3) + 1);
	EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)p, (int)len);
	j = json_pack("{s:s}", "base64", b64);
	free(b64);
	return j;
}

char *json_bytes_get(const json_t *v, size_t *len)
{
	const char *s;

	if (json_is_string(v)) {
		*len = json_string_length(v);
		return xstrndup(json_string_value(v), *len);   /* no NUL: json_bytes */
	}
	s = json_string_value(json_object_get(v, "base64"));
	return s ? (char *)b64_decode(s, strlen(s), len) : NULL;
}

json_t *json_url(const char *url)
{
	char *r = redact_url(url);
	json_t *j = json_text(r);

	free(r);
	return j;
}

/*
 * @where text from outside in a record (lock, SBOM, manifest, `--json`):
 *   kept, escaped when it is not UTF-8
 */
json_t *json_text(const char *s)
{
	char *t;
	json_t *j;

	if (!s)
		return NULL;        /* as json_string(NULL): no field */
	t = text_record(s);
	j = json_string(t);

	free(t);
	return j;
}
