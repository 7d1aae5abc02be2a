/*
 * Test-only helpers for the Sigstore unit tests (test_tlog.c,
 * test_timestamp.c): where the conformance vectors are, and a minimal
 * reader of a trusted root's "tlogs" and "timestampAuthorities" (the
 * product's reader is trust/sigstore_root.c; these tests exercise tlog.c
 * and timestamp.c on their own).
 *
 * Vectors: $WB_SIGSTORE_VECTORS, else tests/vectors/sigstore (the copy of
 * ../shared/vectors/sigstore in the repository; tests run from the root).
 */
#ifndef WB_TEST_SIGSTORE_FIXTURES_H
#define WB_TEST_SIGSTORE_FIXTURES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "lib/base64.h"
#include "lib/buf.h"
#include "trust/timestamp.h"
#include "trust/tlog.h"

/* An error of class CODE_ whose message holds NEEDLE (cmocka). */
#define assert_err(e, code_, needle) do { \
	if ((e)->code != (code_) || !strstr((e)->msg, (needle))) \
		fail_msg("want code %d and \"%s\", got code %d: %s", (code_), (needle), \
			 (e)->code, (e)->msg); \
} while (0)

/* each test file uses some of these */
#define FX_FN static __attribute__((unused))

FX_FN const char *vec_dir(void)
{
	const char *d = getenv("WB_SIGSTORE_VECTORS");

	return d && *d ? d : "tests/vectors/sigstore";
}

/* A path under the vectors directory; the caller frees it. */
FX_FN char *vec_path(const char *rel)
{
	return xasprintf("%s/%s", vec_dir(), rel);
}

FX_FN json_t *vec_json(const char *rel)
{
	char *p = vec_path(rel);
	json_error_t err;
	json_t *j = json_load_file(p, 0, &err);

	if (!j)
		fprintf(stderr, "cannot load %s: %s\n", p, err.text);
	free(p);
	return j;
}

/* RFC 3339 "YYYY-MM-DDTHH:MM:SS[.frac]Z" to Unix seconds; -1 on error. */
FX_FN int fx_time(const char *s, int64_t *out)
{
	struct tm tm;
	int n = 0;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*out = (int64_t)timegm(&tm);
	return 0;
}

FX_FN unsigned char *fx_b64(const json_t *v, size_t *n)
{
	return json_is_string(v) ? b64_decode(json_string_value(v), json_string_length(v), n) : NULL;
}

FX_FN void fx_window(const json_t *vf, int64_t *from, int64_t *to)
{
	const char *s = json_string_value(json_object_get(vf, "start"));
	const char *e = json_string_value(json_object_get(vf, "end"));

	*from = TLOG_TIME_MIN;
	*to = TLOG_TIME_MAX;
	if (s)
		fx_time(s, from);
	if (e)
		fx_time(e, to);
}

/* The trusted root's tlogs as struct tlog_key; NULL on error. */
FX_FN struct tlog_key *fx_tlogs(const json_t *root, size_t *n)
{
	const json_t *tl = json_object_get(root, "tlogs"), *one;
	struct tlog_key *keys = xcalloc(json_array_size(tl) + 1, sizeof(*keys));
	size_t i;

	*n = 0;
	json_array_foreach(tl, i, one) {
		struct tlog_key *k = &keys[(*n)++];
		const json_t *pk = json_object_get(one, "publicKey");
		size_t len;
		unsigned char *der = fx_b64(json_object_get(pk, "rawBytes"), &len);
		unsigned char *id = fx_b64(json_object_get(json_object_get(one, "logId"), "keyId"), &len);
		const unsigned char *p = der;

		if (!der || !id || len != TLOG_HASH_LEN)
			abort();
		memcpy(k->log_id, id, TLOG_HASH_LEN);
		free(id);
		k->pkey = d2i_PUBKEY(NULL, &p, 100000);
		free(der);
		fx_window(json_object_get(pk, "validFor"), &k->valid_from, &k->valid_to);
		k->base_url = xstrdup(json_string_value(json_object_get(one, "baseUrl")));
	}
	return keys;
}

FX_FN void fx_tlogs_free(struct tlog_key *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tlog_key_release(&keys[i]);
	free(keys);
}

FX_FN X509 *fx_x509(const json_t *rawbytes_holder)
{
	size_t len;
	unsigned char *der = fx_b64(json_object_get(rawbytes_holder, "rawBytes"), &len);
	const unsigned char *p = der;
	X509 *x = der ? d2i_X509(NULL, &p, (long)len) : NULL;

	free(der);
	return x;
}

/* The trusted root's timestamp authorities; NULL-safe count. */
FX_FN struct timestamp_authority *fx_tsas(const json_t *root, size_t *n)
{
	const json_t *ta = json_object_get(root, "timestampAuthorities"), *one;
	struct timestamp_authority *a = xcalloc(json_array_size(ta) + 1, sizeof(*a));
	size_t i, j;

	*n = 0;
	json_array_foreach(ta, i, one) {
		struct timestamp_authority *t = &a[(*n)++];
		const json_t *certs = json_object_get(json_object_get(one, "certChain"), "certificates");
		const json_t *c;

		t->chain = sk_X509_new_null();
		json_array_foreach(certs, j, c)
			sk_X509_push(t->chain, fx_x509(c));
		fx_window(json_object_get(one, "validFor"), &t->valid_from, &t->valid_to);
		if (json_string_value(json_object_get(one, "uri")))
			t->uri = xstrdup(json_string_value(json_object_get(one, "uri")));
	}
	return a;
}

FX_FN void fx_tsas_free(struct timestamp_authority *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		timestamp_authority_release(&a[i]);
	free(a);
}

/* cases.json entry named NAME ("conformance/<case>"), borrowed. */
FX_FN const json_t *fx_case(const json_t *cases, const char *name)
{
	const json_t *c;
	size_t i;

	json_array_foreach(cases, i, c)
		if (!strcmp(json_string_value(json_object_get(c, "case")), name))
			return c;
	return NULL;
}

#endif
