/*
 * One request outside the engine (a method's lookup: the Rekor API).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <curl/curl.h>

#include "fetch/engine.h"
#include "lib/envlimits.h"

/* ---- one request outside the engine (lookups) ------------------------- */

struct answer {
	struct buf *b;
	size_t max;
	int too_big;
};

static size_t on_answer(char *data, size_t sz, size_t nmemb, void *ud)
{
	struct answer *a = ud;
	size_t n = sz * nmemb;

	if (a->b->len + n > a->max) {
		a->too_big = 1;
		return 0;
	}
	buf_add(a->b, data, n);
	return n;
}

static int request_error(struct wb_err *e, int code, const char *url, const char *what)
{
	char *shown = xfer_shown_url(url);

	wb_error(e, code, "'%s': %s", shown, what);
	free(shown);
	return -1;
}

/* The wait before try TRIES + 1: BASE_MS doubled per failed try, at most
 * a minute (the engine's backoff, for a request outside it). */
static void backoff_sleep(long base_ms, int tries)
{
	long ms = base_ms;
	struct timespec ts;

	for (int i = 1; i < tries && ms < 60000; i++)
		ms *= 2;
	if (ms > 60000)
		ms = 60000;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);   /* a signal ends it early: fine */
}

int fetch_request(const struct fetch_transport *t, const char *url, const char *post_json,
		  size_t max, int no_redirect, struct buf *out, long *status,
		  struct wb_err *e)
{
	struct env_limits lim;
	int max_tries;
	long backoff_ms, connect_timeout, low_speed_time, low_speed_limit;
	char ua[64], errbuf[CURL_ERROR_SIZE];
	char *cur;
	int hops = 0, tries = 0, ret = -1;

	*status = 0;
	if (env_limits_read(&lim, e) < 0)
		return -1;
	max_tries = (int)lim.retries;
	backoff_ms = lim.backoff_ms;
	connect_timeout = lim.connect_timeout;
	low_speed_time = lim.low_speed_time;
	low_speed_limit = lim.low_speed_limit;
	cur = xstrdup(url);

	snprintf(ua, sizeof(ua), "winbuild/%s", WB_VERSION);
	*status = 0;
	for (;;) {
		struct curl_slist *hdr = NULL;
		struct answer a = { out, max, 0 };
		CURL *h = curl_easy_init();
		CURLcode rc;
		long code = 0;
		char *to = NULL;
		const char *why;

		if (!h) {
			wb_error(e, WB_EIO, "cannot create a curl handle");
			break;
		}
		buf_reset(out);
		errbuf[0] = '\0';
		hop_transport_setopts(h, t->policy, t->cacert, ua, connect_timeout, cur);
		/* a 404 is the caller's to judge: read it, do not fail on it */
		curl_easy_setopt(h, CURLOPT_FAILONERROR, 0L);
		hdr = curl_slist_append(hdr, "Accept: application/json");
		if (post_json) {
			hdr = curl_slist_append(hdr, "Content-Type: application/json");
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, post_json);
		}
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_answer);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
		curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max);
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, low_speed_limit);
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, low_speed_time);
		rc = curl_easy_perform(h);
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &to);
		to = to ? xstrdup(to) : NULL;
		curl_slist_free_all(hdr);
		curl_easy_cleanup(h);
		*status = code;
		if (a.too_big || rc == CURLE_FILESIZE_EXCEEDED) {
			char what[64];

			snprintf(what, sizeof(what), "answer larger than %zu bytes", max);
			request_error(e, WB_ENET, cur, what);
		} else if (rc != CURLE_OK && xfer_retryable(rc, code) && ++tries < max_tries) {
			free(to);
			backoff_sleep(backoff_ms, tries);
			continue;
		} else if (rc != CURLE_OK) {
			request_error(e, WB_ENET, cur, errbuf[0] ? errbuf : curl_easy_strerror(rc));
		} else if (code >= 300 && code < 400) {
			switch (hop_judge(t->policy, no_redirect, cur, to, hops, &why)) {
			case HOP_NEVER:
				request_error(e, WB_ENET, cur, "redirect refused (a Rekor API "
					      "answer is never a redirect)");
				break;
			case HOP_NO_LOCATION:
				request_error(e, WB_ENET, cur, "a redirect without a Location");
				break;
			case HOP_REFUSED: {
				char *shown = xfer_shown_url(to), msg[600];

				snprintf(msg, sizeof(msg), "redirects to '%s', which is refused: %s",
					 shown, why);
				free(shown);
				request_error(e, WB_EVERIFY, cur, msg);
				break;
			}
			case HOP_TOO_MANY:
				request_error(e, WB_ENET, cur, "too many redirects");
				break;
			case HOP_FOLLOW:
				hops++;
				free(cur);
				cur = to;
				tries = 0;
				continue;
			}
		} else if (code >= 500 && ++tries < max_tries) {
			free(to);
			backoff_sleep(backoff_ms, tries);
			continue;
		} else if (code != 200 && code != 404) {
			char what[64];

			snprintf(what, sizeof(what), "HTTP status %ld", code);
			request_error(e, WB_ENET, cur, what);
		} else {
			ret = 0;
		}
		free(to);
		break;
	}
	free(cur);
	return ret;
}
