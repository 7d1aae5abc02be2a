/* trust/rekor.h: the Rekor v1 API lookups, over the caller's transport. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/buf.h"
#include "lib/text.h"
#include "trust/rekor.h"

/* A Rekor entry UUID: 64 hex digits, or 80 (a tree ID before them). */
static int uuid_ok(const char *s)
{
	size_t n = strlen(s);

	if (n != 64 && n != 80)
		return 0;
	return strspn(s, "0123456789abcdef") == n;
}

static int answer_error(struct wb_err *e, const char *url, const char *what)
{
	char *shown = text_printable(url);

	wb_error(e, WB_EVERIFY, "rekor '%s': %s", shown, what);
	free(shown);
	return -1;
}

/* HTTP's request, its error prefixed with "rekor". */
static int ask(const struct trust_http *http, const char *url, const char *body,
	       struct buf *out, long *status, struct wb_err *e)
{
	buf_reset(out);
	if (http->request(http->ctx, url, body, REKOR_ANSWER_MAX, body != NULL, out, status,
			  e) == 0)
		return 0;
	{
		char msg[WB_ERR_MAX];

		snprintf(msg, sizeof(msg), "%s", e->msg);
		wb_error(e, e->code, "rekor %s", msg);
	}
	return -1;
}

int rekor_lookup(const struct trust_http *http, const char *base, const char *sha256_hex,
		 struct wb_strlist *entries, struct wb_err *e)
{
	size_t blen = strlen(base);
	char *url = NULL, *body = NULL;
	struct buf ans = BUF_INIT;
	json_t *arr = NULL;
	json_error_t je;
	long status;
	size_t n;
	int ret = -1;

	while (blen && base[blen - 1] == '/')
		blen--;
	url = xasprintf("%.*s/api/v1/index/retrieve", (int)blen, base);
	body = xasprintf("{\"hash\":\"sha256:%s\"}", sha256_hex);
	if (ask(http, url, body, &ans, &status, e) < 0)
		goto out;
	if (status == 404) {
		char *shown = text_printable(url);

		wb_error(e, WB_ENET, "rekor '%s': HTTP status 404 (not a Rekor v1 API)", shown);
		free(shown);
		goto out;
	}
	arr = json_loadb(ans.ptr ? ans.ptr : "", ans.len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_array(arr)) {
		answer_error(e, url, "the index answer is not a list of entry UUIDs");
		goto out;
	}
	n = json_array_size(arr);
	for (size_t i = 0; i < n; i++) {
		const char *uuid = json_string_value(json_array_get(arr, i));
		char what[96];

		if (!uuid || !uuid_ok(uuid)) {
			snprintf(what, sizeof(what), "entry %zu of the index answer is not an "
				 "entry UUID", i);
			answer_error(e, url, what);
			goto out;
		}
	}
	/* Rekor lists the newest first and its log is append-only: anyone
	 * can log more entries for a public digest, never older ones. So the
	 * oldest are fetched first, and a flood of later entries cannot push
	 * the genuine one out of reach (issue 25); past REKOR_MAX_ENTRIES the
	 * newest are left, and the note says so. */
	for (size_t k = 0; k < n && k < REKOR_MAX_ENTRIES; k++) {
		const char *uuid = json_string_value(json_array_get(arr, n - 1 - k));

		free(url);
		url = xasprintf("%.*s/api/v1/log/entries/%s", (int)blen, base, uuid);
		if (ask(http, url, NULL, &ans, &status, e) < 0)
			goto out;
		if (status == 404)
			continue;         /* listed, then gone: the others may do */
		wb_strlist_push(entries, ans.ptr ? ans.ptr : "");
	}
	if (n > REKOR_MAX_ENTRIES) {
		char *shown = text_printable(base);

		e->code = 0;
		snprintf(e->msg, sizeof(e->msg), "rekor '%s' lists %zu entries for sha256:%s; "
			 "only the %d oldest were fetched (REKOR_MAX_ENTRIES)", shown, n,
			 sha256_hex, REKOR_MAX_ENTRIES);
		free(shown);
	}
	ret = 0;
out:
	json_decref(arr);
	buf_release(&ans);
	free(url);
	free(body);
	return ret;
}

int rekor_lookup_merged(const struct trust_http *http, const char *base,
			const char *sha256_hex, struct buf *out, struct wb_err *e)
{
	struct wb_strlist entries = WB_STRLIST_INIT;
	json_t *all = json_object();
	int ret = -1;

	if (rekor_lookup(http, base, sha256_hex, &entries, e) < 0)
		goto out;
	for (size_t i = 0; i < entries.nr; i++) {
		json_t *one = json_loads(entries.v[i], JSON_REJECT_DUPLICATES, NULL);
		const char *k;
		json_t *v;

		/* not an object: kept whole, so the check reports what it is */
		if (!json_is_object(one) || json_object_size(one) != 1) {
			char key[32];

			snprintf(key, sizeof(key), "unparsed-%zu", i);
			json_object_set_new(all, key, json_string(entries.v[i]));
		} else {
			json_object_foreach(one, k, v)
				json_object_set(all, k, v);
		}
		json_decref(one);
	}
	if (json_object_size(all)) {
		char *s = json_dumps(all, JSON_COMPACT);

		buf_adds(out, s);
		free(s);
	}
	ret = 0;
out:
	json_decref(all);
	wb_strlist_release(&entries);
	return ret;
}
