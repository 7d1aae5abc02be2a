/*
 * Sizes up front, for the progress totals.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "fetch/engine.h"

/* ---- sizes up front, for the progress totals ------------------------- */

#define PROBE_SECONDS 5

struct probe {
	struct job *j;
	CURL *h;
	char *url;                     /* the current hop */
	int hops;
	struct curl_slist *hdr;        /* its credential's headers */
};

static CURL *probe_start(struct engine *en, CURLM *m, struct probe *p)
{
	CURL *h = curl_easy_init();
	const struct creds_entry *sent, *held;
	char *req;

	if (!h)
		return NULL;
	hop_transport_opts(en, h, p->url, p);
	curl_slist_free_all(p->hdr);
	p->hdr = NULL;
	/* a HEAD carries what the download will, to the same host only */
	req = hop_creds(&en->creds, h, p->j->urls[T_MAIN(p->j)].v[0], p->url,
			p->j->it->art->credential, &sent, &held, &p->hdr);
	curl_easy_setopt(h, CURLOPT_URL, req);
	explicit_bzero(req, strlen(req));
	free(req);
	curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)PROBE_SECONDS);
	if (curl_multi_add_handle(m, h) != CURLM_OK) {
		curl_easy_cleanup(h);
		return NULL;
	}
	return h;
}

/* A HEAD answered: its Content-Length, or the next hop of a redirect the
 * transport policy allows. 1 while the probe goes on.
 * @where where a redirect hop is checked (followed by winbuild, never by
 *   libcurl) -- the size probe
 */
static int probe_done(struct engine *en, CURLM *m, struct probe *p, CURLcode rc)
{
	long code = 0;
	curl_off_t cl = -1;
	char *to = NULL;

	curl_easy_getinfo(p->h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(p->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
	curl_easy_getinfo(p->h, CURLINFO_REDIRECT_URL, &to);
	if (rc == CURLE_OK && code >= 200 && code < 300 && cl > 0 &&
	    (unsigned long long)cl <= en->max_size && !p->j->total)
		p->j->total = (unsigned long long)cl;
	if (rc == CURLE_OK && code >= 300 && code < 400 &&
	    hop_judge(&en->plan->policy, 0, p->url, to, p->hops, NULL) == HOP_FOLLOW) {
		char *next = xstrdup(to);

		curl_multi_remove_handle(m, p->h);
		curl_easy_cleanup(p->h);
		free(p->url);
		p->url = next;
		p->hops++;
		p->h = probe_start(en, m, p);
		return p->h != NULL;
	}
	curl_multi_remove_handle(m, p->h);
	curl_easy_cleanup(p->h);
	p->h = NULL;
	return 0;
}

/*
 * HEAD every artifact still to download whose size is not known (the lock
 * file gives none), at its first allowed http(s) URL, all at once and for
 * at most PROBE_SECONDS: a Content-Length becomes the job's total, so the
 * progress shows totals before the downloads start. Only the size is
 * taken (the bytes come later, verified, through the normal path), and
 * only when progress is shown (opts->probe_sizes). Redirects are followed
 * hop by hop under the transport policy, as for a download; a failure
 * leaves the size unknown.
 * @where progress totals known up front (lock file sizes, HEAD) and the
 *   progress display
 */
void probe_sizes(struct engine *en)
{
	struct probe *pv = xcalloc(en->njobs + 1, sizeof(*pv));
	CURLM *m = curl_multi_init();
	double deadline = engine_now() + PROBE_SECONDS;
	size_t np = 0, live = 0;

	for (size_t i = 0; m && i < en->njobs; i++) {
		struct job *j = &en->jobs[i];
		struct probe *p = &pv[np];

		if (j->state == J_DONE || j->total || !j->urls[T_MAIN(j)].nr ||
		    strncasecmp(j->urls[T_MAIN(j)].v[0], "http", 4))
			continue;
		p->j = j;
		p->url = xstrdup(j->urls[T_MAIN(j)].v[0]);
		p->h = probe_start(en, m, p);
		live += p->h != NULL;
		np++;
	}
	while (live && engine_now() < deadline &&
	       !(en->o->interrupted && *en->o->interrupted)) {
		CURLMsg *msg;
		int still, q;

		if (curl_multi_perform(m, &still) != CURLM_OK)
			break;
		while ((msg = curl_multi_info_read(m, &q)) != NULL) {
			char *priv = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
			if (!probe_done(en, m, (struct probe *)priv, msg->data.result))
				live--;
		}
		if (live)
			curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	for (size_t i = 0; i < np; i++) {
		if (pv[i].h) {
			curl_multi_remove_handle(m, pv[i].h);
			curl_easy_cleanup(pv[i].h);
		}
		curl_slist_free_all(pv[i].hdr);
		free(pv[i].url);
	}
	if (m)
		curl_multi_cleanup(m);
	free(pv);
}
