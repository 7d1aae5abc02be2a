/*
 * One JSON request (the Rekor API): its options and what its end means,
 * shared by the engine's lookups (lookup.c, transfers of its multi handle)
 * and fetch_request(), one request outside the engine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "fetch/engine.h"
#include "lib/envlimits.h"

/* ---- one request: its options and what its end means ------------------
 * (fetch_request below; the engine's lookups, lookup.c) */

static size_t on_answer(char *data, size_t sz, size_t nmemb, void *ud)
{
	struct request_answer *a = ud;
	size_t n = sz * nmemb;

	if (a->b->len + n > a->max) {
		a->too_big = 1;
		return 0;
	}
	buf_add(a->b, data, n);
	return n;
}

struct curl_slist *request_setopts(CURL *h, const struct request_conf *c, const char *url,
				   const char *post_json, struct request_answer *a,
				   char *errbuf)
{
	struct curl_slist *hdr = NULL;

	buf_reset(a->b);
	a->too_big = 0;
	errbuf[0] = '\0';
	hop_transport_setopts(h, c->policy, c->cacert, c->user_agent, c->connect_timeout, url);
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
	curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)a->max);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, c->low_speed_limit);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, c->low_speed_time);
	return hdr;
}

static int request_error(struct wb_err *e, int code, const char *url, const char *what)
{
	char *shown = xfer_shown_url(url);

	wb_error(e, code, "'%s': %s", shown, what);
	free(shown);
	return -1;
}

long request_backoff_ms(long base_ms, int tries)
{
	long ms = base_ms;

	for (int i = 1; i < tries && ms < 60000; i++)
		ms *= 2;
	return ms > 60000 ? 60000 : ms;
}

/*
 * @where where a Rekor entry is looked up online (`verify.cosign` at fetch
 *   time, `sig sigstore --rekor`) -- every answer judged: the hop policy,
 *   retries, the cap, the statuses
 * @where where a redirect hop is checked (followed by winbuild, never by
 *   libcurl) -- Rekor and the registry client
 */
enum request_next request_judge(const struct request_conf *c, const struct request_end *r,
				int no_redirect, int hops, int *tries, struct wb_err *e)
{
	const char *why;

	if (r->too_big || r->rc == CURLE_FILESIZE_EXCEEDED) {
		char what[64];

		snprintf(what, sizeof(what), "answer larger than %zu bytes", r->max);
		request_error(e, WB_ENET, r->url, what);
		return REQ_FAILED;
	}
	if (r->rc != CURLE_OK && xfer_retryable(r->rc, r->code) && ++*tries < c->max_tries)
		return REQ_RETRY;
	if (r->rc != CURLE_OK) {
		request_error(e, WB_ENET, r->url, r->errbuf[0] ? r->errbuf :
			      curl_easy_strerror(r->rc));
		return REQ_FAILED;
	}
	if (r->code >= 300 && r->code < 400) {
		switch (hop_judge(c->policy, no_redirect, r->url, r->to, hops, &why)) {
		case HOP_NEVER:
			request_error(e, WB_ENET, r->url, "redirect refused (a Rekor API "
				      "answer is never a redirect)");
			return REQ_FAILED;
		case HOP_NO_LOCATION:
			request_error(e, WB_ENET, r->url, "a redirect without a Location");
			return REQ_FAILED;
		case HOP_REFUSED: {
			char *shown = xfer_shown_url(r->to), msg[600];

			snprintf(msg, sizeof(msg), "redirects to '%s', which is refused: %s",
				 shown, why);
			free(shown);
			request_error(e, WB_EVERIFY, r->url, msg);
			return REQ_FAILED;
		}
		case HOP_TOO_MANY:
			request_error(e, WB_ENET, r->url, "too many redirects");
			return REQ_FAILED;
		case HOP_FOLLOW:
			*tries = 0;
			return REQ_FOLLOW;
		}
	}
	if (r->code >= 500 && ++*tries < c->max_tries)
		return REQ_RETRY;
	if (r->code != 200 && r->code != 404) {
		char what[64];

		snprintf(what, sizeof(what), "HTTP status %ld", r->code);
		request_error(e, WB_ENET, r->url, what);
		return REQ_FAILED;
	}
	return REQ_OK;
}

/* ---- the one blocking request loop ------------------------------------- */

int request_run(const struct request_conf *c, long backoff_ms, const char *url,
		int no_redirect, const struct request_hooks *hk, long *status, char **final,
		struct wb_err *e)
{
	char errbuf[CURL_ERROR_SIZE], *cur = xstrdup(url);
	int hops = 0, tries = 0, ret = -1;

	*status = 0;
	for (;;) {
		struct request_end end;
		struct curl_slist *hdr = NULL;
		CURL *h = curl_easy_init();
		char *to = NULL;
		struct timespec ts;
		long ms;
		int r;

		if (!h) {
			wb_error(e, WB_EIO, "cannot create a curl handle");
			break;
		}
		errbuf[0] = '\0';
		if (hk->setup(h, cur, errbuf, &hdr, hk->ud, e) < 0) {
			curl_slist_free_all(hdr);
			curl_easy_cleanup(h);
			break;
		}
		memset(&end, 0, sizeof(end));
		end.rc = curl_easy_perform(h);
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &end.code);
		curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &to);
		to = to ? xstrdup(to) : NULL;
		curl_slist_free_all(hdr);
		curl_easy_cleanup(h);
		*status = end.code;
		end.url = cur;
		end.to = to;
		end.errbuf = errbuf;
		r = hk->ended(&end, hk->ud, e);
		if (r != 0) {
			free(to);
			if (r > 0)
				continue;
			break;
		}
		switch (request_judge(c, &end, no_redirect, hops, &tries, e)) {
		case REQ_RETRY:
			free(to);
			ms = request_backoff_ms(backoff_ms, tries);
			ts.tv_sec = ms / 1000;
			ts.tv_nsec = (ms % 1000) * 1000000L;
			nanosleep(&ts, NULL);   /* a signal ends it early: fine */
			continue;
		case REQ_FOLLOW:
			hops++;
			free(cur);
			cur = to;
			continue;
		case REQ_OK:
			ret = 0;
			if (final) {
				*final = cur;
				cur = NULL;
			}
			break;
		case REQ_FAILED:
			break;
		}
		free(to);
		break;
	}
	free(cur);
	return ret;
}

/* ---- one request outside the engine (sig sigstore --rekor) ------------ */

struct json_req {
	const struct request_conf *c;
	const char *post_json;
	struct request_answer a;
};

static int json_setup(CURL *h, const char *url, char *errbuf, struct curl_slist **hdr,
		      void *ud, struct wb_err *e)
{
	struct json_req *q = ud;

	(void)e;
	*hdr = request_setopts(h, q->c, url, q->post_json, &q->a, errbuf);
	return 0;
}

static int json_ended(struct request_end *end, void *ud, struct wb_err *e)
{
	struct json_req *q = ud;

	(void)e;
	end->too_big = q->a.too_big;
	end->max = q->a.max;
	return 0;
}

int fetch_request(const struct fetch_transport *t, const char *url, const char *post_json,
		  size_t max, int no_redirect, struct buf *out, long *status,
		  struct wb_err *e)
{
	struct env_limits lim;
	struct request_conf c;
	struct json_req q = { &c, post_json, { out, max, 0 } };
	const struct request_hooks hk = { json_setup, json_ended, &q };
	char ua[64];

	*status = 0;
	if (env_limits_read(&lim, e) < 0)
		return -1;
	snprintf(ua, sizeof(ua), "winbuild/%s", WB_VERSION);
	c.policy = t->policy;
	c.cacert = t->cacert;
	c.user_agent = ua;
	c.max_tries = (int)lim.retries;
	c.connect_timeout = lim.connect_timeout;
	c.low_speed_time = lim.low_speed_time;
	c.low_speed_limit = lim.low_speed_limit;
	return request_run(&c, lim.backoff_ms, url, no_redirect, &hk, status, NULL, e);
}
