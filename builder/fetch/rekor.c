/* fetch/rekor.h: the Rekor v1 API lookups. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "fetch/rekor.h"
#include "lib/buf.h"
#include "lib/text.h"

struct answer {
	struct buf b;
	int too_big;
};

static size_t on_data(char *data, size_t sz, size_t nmemb, void *ud)
{
	struct answer *a = ud;
	size_t n = sz * nmemb;

	if (a->b.len + n > REKOR_ANSWER_MAX) {
		a->too_big = 1;
		return 0;
	}
	buf_add(&a->b, data, n);
	return n;
}

/* A message's URL: escaped (it may come from a recipe or the command line). */
static int net_error(struct wb_err *e, const char *url, const char *what)
{
	char *shown = text_printable(url);

	wb_error(e, WB_ENET, "rekor '%s': %s", shown, what);
	free(shown);
	return -1;
}

/*
 * GET URL, or POST the JSON BODY to it; the answer in OUT. *STATUS is the
 * HTTP status (404 is the caller's to judge); anything but 200 and 404 is
 * an error.
 */
static int http_json(const char *url, const char *body, struct buf *out, long *status,
		     struct wb_err *e)
{
	struct answer a = { BUF_INIT, 0 };
	struct curl_slist *hdr = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	CURL *h = curl_easy_init();
	CURLcode rc;
	int ret = -1;

	if (!h)
		return wb_error(e, WB_EIO, "cannot start a transfer");
	hdr = curl_slist_append(hdr, "Accept: application/json");
	if (body)
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 15L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "winbuild");
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
	if (body)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	rc = curl_easy_perform(h);
	*status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	if (a.too_big)
		net_error(e, url, "answer larger than 1 MiB");
	else if (rc != CURLE_OK)
		net_error(e, url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
	else if (*status >= 300 && *status < 400)
		net_error(e, url, "redirect refused (a Rekor API answer is never a redirect)");
	else if (*status != 200 && *status != 404) {
		char what[64];

		snprintf(what, sizeof(what), "HTTP status %ld", *status);
		net_error(e, url, what);
	} else {
		buf_add(out, a.b.ptr ? a.b.ptr : "", a.b.len);
		ret = 0;
	}
	buf_release(&a.b);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	return ret;
}

/* A Rekor entry UUID: 64 hex digits, or 80 (a tree ID before them). */
static int uuid_ok(const char *s)
{
	size_t n = strlen(s);

	if (n != 64 && n != 80)
		return 0;
	return strspn(s, "0123456789abcdef") == n;
}

int rekor_lookup(const char *base, const char *sha256_hex, struct wb_strlist *entries,
		 struct wb_err *e)
{
	size_t blen = strlen(base);
	char *url = NULL, *body = NULL;
	struct buf ans = BUF_INIT;
	json_t *arr = NULL;
	json_error_t je;
	long status;
	int ret = -1;

	while (blen && base[blen - 1] == '/')
		blen--;
	url = xasprintf("%.*s/api/v1/index/retrieve", (int)blen, base);
	body = xasprintf("{\"hash\":\"sha256:%s\"}", sha256_hex);
	if (http_json(url, body, &ans, &status, e) < 0)
		goto out;
	if (status == 404) {
		net_error(e, url, "HTTP status 404 (not a Rekor v1 API)");
		goto out;
	}
	arr = json_loadb(ans.ptr ? ans.ptr : "", ans.len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_array(arr)) {
		char *shown = text_printable(url);

		wb_error(e, WB_EVERIFY, "rekor '%s': the index answer is not a list of "
			 "entry UUIDs", shown);
		free(shown);
		goto out;
	}
	for (size_t i = 0; i < json_array_size(arr) && i < REKOR_MAX_ENTRIES; i++) {
		const char *uuid = json_string_value(json_array_get(arr, i));

		if (!uuid || !uuid_ok(uuid)) {
			char *shown = text_printable(url);

			wb_error(e, WB_EVERIFY, "rekor '%s': entry %zu of the index answer "
				 "is not an entry UUID", shown, i);
			free(shown);
			goto out;
		}
		free(url);
		url = xasprintf("%.*s/api/v1/log/entries/%s", (int)blen, base, uuid);
		buf_reset(&ans);
		if (http_json(url, NULL, &ans, &status, e) < 0)
			goto out;
		if (status == 404)
			continue;         /* listed, then gone: the others may do */
		wb_strlist_push(entries, ans.ptr ? ans.ptr : "");
	}
	ret = 0;
out:
	json_decref(arr);
	buf_release(&ans);
	free(url);
	free(body);
	return ret;
}
