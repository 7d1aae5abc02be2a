/* trust/rekor.h: the Rekor v1 API lookups, over the caller's transport. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/buf.h"
#include "lib/hex.h"
#include "lib/strlist.h"
#include "lib/text.h"
#include "trust/rekor.h"

/* A Rekor entry UUID: 64 hex digits, or 80 (a tree ID before them). */
static int uuid_ok(const char *s)
{
	return hex_is(s, 64, HEX_LOWER) || hex_is(s, 80, HEX_LOWER);
}

static int answer_error(struct wb_err *e, const char *url, const char *what)
{
	char *shown = text_printable(url);

	wb_error(e, WB_EVERIFY, "rekor '%s': %s", shown, what);
	free(shown);
	return -1;
}

/* Request RQ was not answered: its error, prefixed with "rekor". */
static int unanswered(const struct trust_lookup_req *rq, struct wb_err *e)
{
	wb_error(e, rq->err.code, "rekor %s", rq->err.msg);
	return -1;
}

/* BASE without its trailing slashes: its length. */
static int base_len(const char *base)
{
	size_t n = strlen(base);

	while (n && base[n - 1] == '/')
		n--;
	return (int)n;
}

/* Round 1: the index answer in LK's one request; asks for each entry. */
static int index_answered(struct trust_lookup *lk, struct buf *out, struct wb_err *e)
{
	const struct trust_lookup_req *rq = &lk->reqs[0];
	int blen = base_len(lk->base);
	json_t *arr;
	json_error_t je;
	struct wb_strlist urls = WB_STRLIST_INIT;
	size_t n;
	int ret = -1;

	(void)out;
	if (rq->err.code)
		return unanswered(rq, e);
	if (rq->status == 404) {
		char *shown = text_printable(rq->url);

		wb_error(e, WB_ENET, "rekor '%s': HTTP status 404 (not a Rekor v1 API)", shown);
		free(shown);
		return -1;
	}
	arr = json_loadb(rq->answer.ptr ? rq->answer.ptr : "", rq->answer.len,
			 JSON_REJECT_DUPLICATES, &je);
	if (!json_is_array(arr)) {
		answer_error(e, rq->url, "the index answer is not a list of entry UUIDs");
		goto out;
	}
	n = json_array_size(arr);
	for (size_t i = 0; i < n; i++) {
		const char *uuid = json_string_value(json_array_get(arr, i));
		char what[96];

		if (!uuid || !uuid_ok(uuid)) {
			snprintf(what, sizeof(what), "entry %zu of the index answer is not an "
				 "entry UUID", i);
			answer_error(e, rq->url, what);
			goto out;
		}
	}
	/* Rekor lists the newest first and its log is append-only: anyone
	 * can log more entries for a public digest, never older ones. So the
	 * oldest are fetched first, and a flood of later entries cannot push
	 * the genuine one out of reach (issue 25); past REKOR_MAX_ENTRIES the
	 * newest are left, and the note says so. */
	for (size_t k = 0; k < n && k < REKOR_MAX_ENTRIES; k++) {
		char *url = xasprintf("%.*s/api/v1/log/entries/%s", blen, lk->base,
				      json_string_value(json_array_get(arr, n - 1 - k)));

		wb_strlist_push(&urls, url);
		free(url);
	}
	lk->listed = n;
	trust_lookup_clear(lk);
	for (size_t k = 0; k < urls.nr; k++)
		trust_lookup_ask(lk, urls.v[k], NULL, REKOR_ANSWER_MAX, 0);
	ret = n ? 1 : 0;   /* none listed: OUT stays empty */
out:
	json_decref(arr);
	wb_strlist_release(&urls);
	return ret;
}

/* Round 2: every entry asked for, merged into OUT. */
static int entries_answered(struct trust_lookup *lk, struct buf *out, struct wb_err *e)
{
	json_t *all = json_object();

	for (size_t i = 0; i < lk->nreqs; i++) {
		const struct trust_lookup_req *rq = &lk->reqs[i];
		json_t *one;
		const char *k;
		json_t *v;

		if (rq->err.code) {
			json_decref(all);
			return unanswered(rq, e);
		}
		if (rq->status == 404)
			continue;         /* listed, then gone: the others may do */
		one = json_loads(rq->answer.ptr ? rq->answer.ptr : "", JSON_REJECT_DUPLICATES,
				 NULL);
		/* not an object: kept whole, so the check reports what it is */
		if (!json_is_object(one) || json_object_size(one) != 1) {
			char key[32];

			snprintf(key, sizeof(key), "unparsed-%zu", i);
			json_object_set_new(all, key, json_string(rq->answer.ptr ? rq->answer.ptr :
								  ""));
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
	json_decref(all);
	if (lk->listed > REKOR_MAX_ENTRIES) {
		char *shown = text_printable(lk->base);

		e->code = 0;
		snprintf(e->msg, sizeof(e->msg), "rekor '%s' lists %zu entries for sha256:%s; "
			 "only the %d oldest were fetched (REKOR_MAX_ENTRIES)", shown, lk->listed,
			 lk->sha256_hex, REKOR_MAX_ENTRIES);
		free(shown);
	}
	return 0;
}

/*
 * @where where a Rekor entry is looked up online (`verify.cosign` at fetch
 *   time, `sig sigstore --rekor`) -- the protocol as rounds of requests (the
 *   index POST, then each entry)
 */
int rekor_lookup_step(struct trust_lookup *lk, struct buf *out, struct wb_err *e)
{
	char *url, *body;

	switch (lk->round) {
	case 0:
		url = xasprintf("%.*s/api/v1/index/retrieve", base_len(lk->base), lk->base);
		body = xasprintf("{\"hash\":\"sha256:%s\"}", lk->sha256_hex);
		trust_lookup_clear(lk);
		/* the index POST is never redirected */
		trust_lookup_ask(lk, url, body, REKOR_ANSWER_MAX, 1);
		free(url);
		free(body);
		return 1;
	case 1:
		return index_answered(lk, out, e);
	default:
		return entries_answered(lk, out, e);
	}
}

/*
 * @where where a Rekor entry is looked up online (`verify.cosign` at fetch
 *   time, `sig sigstore --rekor`) -- `sig sigstore --rekor`: one request at a
 *   time through `fetch_request()`
 */
int rekor_lookup_merged(const struct trust_http *http, const char *base,
			const char *sha256_hex, struct buf *out, struct wb_err *e)
{
	return trust_lookup_run(rekor_lookup_step, NULL, base, sha256_hex, http, out, e);
}
