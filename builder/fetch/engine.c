/*
 * The transfer engine. One struct job per artifact walks its targets in
 * order: the auxiliary file of each requirement of its verify spec (a
 * checksum file, a signature, a bundle: whatever its method of the table
 * in trust/method.h asks for, capped at the method's size), then the
 * artifact, each through the URL try order, with one transfer at a time,
 * then a method's lookup that needs the artifact's digest (lookup.c: its
 * rounds of requests, each a transfer); jobs run in parallel on one curl
 * multi handle. Nothing here knows a method by name. The files beside
 * this one: fetch/engine.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "fetch/engine.h"
#include "lib/url.h"
#include "lib/redact.h"
#include "lib/envlimits.h"

/* The file target T of J is, for messages. */
const char *job_target_what(const struct job *j, size_t t)
{
	const struct trust_req *q;

	if (t == T_MAIN(j))
		return "artifact";
	q = slot_req(j, t);
	return q->layered ? "signature of a further requirement" :
		trust_method_aux(q->method, j->slot_k[t]).what;
}

double engine_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void engine_log(struct engine *en, int level, const char *fmt, ...)
{
	char msg[WB_ERR_MAX];
	va_list ap;

	if (!en->o->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	wb_log(en->o->log, level, "%s", msg);
}

/* ---- job progression -------------------------------------------------- */

void engine_finish_job(struct engine *en, struct job *j, int code, const struct wb_err *err)
{
	struct fetch_item *it = j->it;

	if (code) {
		it->status = code;
		if (err && err != &it->err)
			it->err = *err;
		it->err.code = code;
	}
	xfer_main_discard(j);
	if (j->dc_live)
		digest_release(&j->dc);
	j->dc_live = 0;
	cache_dl_unlock(en->c, &j->dl);   /* after the ref is written */
	j->state = J_DONE;
	en->done++;
	if (en->o->on_done)
		en->o->on_done(en->o->ctx, (size_t)(j - en->jobs), it);
}

/* Move to the first target (from T) that has URLs; T_MAIN always has. */
static void goto_target(struct job *j, size_t t)
{
	while (t < T_MAIN(j) && !j->urls[t].nr)
		t++;
	j->target = t;
	j->url_idx = 0;
	j->absent = 0;
	hop_reset(j);
	j->tries = 0;
	j->resumes = 0;
	j->not_before = 0;
	j->state = J_WAIT;
}

static void note_verify_failure(struct job *j, const struct wb_err *e)
{
	if (!j->saw_verify_failure)
		j->first_verify = *e;
	j->saw_verify_failure = 1;
}

/* The current URL failed for good: the next one, or give up. */
static void next_url(struct engine *en, struct job *j, const struct wb_err *why)
{
	int code = why->code;

	if (j->target == T_MAIN(j))
		xfer_main_reset(j);
	j->url_idx++;
	hop_reset(j);
	j->tries = 0;
	j->resumes = 0;
	j->not_before = 0;
	if (j->url_idx < j->urls[j->target].nr) {
		j->state = J_WAIT;
		return;
	}
	/* A signature the recipe requires that every one of its URLs says
	 * does not exist fails verification (docs/exit-codes.md); one that
	 * could not be reached stays a network error. */
	if (j->saw_verify_failure ||
	    (j->target != T_MAIN(j) &&
	     (slot_req(j, j->target)->method->flags & TRUST_ABSENT_FAILS) &&
	     j->absent == j->urls[j->target].nr))
		code = WB_EVERIFY;
	if (j->urls[j->target].nr > 1) {
		struct wb_err e2 = *why;

		if (j->saw_verify_failure && j->first_verify.code &&
		    strcmp(j->first_verify.msg, why->msg))
			wb_error(&e2, WB_EVERIFY, "%s\n  last: %s", j->first_verify.msg, why->msg);
		wb_error_prefix(&e2, j->saw_verify_failure && strcmp(e2.msg, why->msg) ?
				"artifact '%s': every URL of the %s failed; first verification failure" :
				"artifact '%s': every URL of the %s failed; last",
				j->it->art->name, job_target_what(j, j->target));
		engine_finish_job(en, j, code, &e2);
	} else {
		engine_finish_job(en, j, code, why);
	}
}

static void fill_aux(const struct job *j, struct trust_aux *aux)
{
	for (size_t i = 0; i < j->nslots; i++) {
		aux[i].url = j->text_url[i];
		aux[i].text = j->text_url[i] ? j->text[i].ptr : NULL;
		aux[i].len = j->text[i].len;
	}
}

/*
 * The artifact's transfer ended: its digests, then the lookups
 * that need them (trust_method.lookup_step: cosign's Rekor search), which
 * run as transfers beside the other jobs' (lookup.c), then engine_verify.
 */
static void complete_main(struct engine *en, struct job *j)
{
	struct wb_err e = WB_ERR_INIT;
	int r;

	/* drained by transfer_done: the tee, if any, holds every byte */
	j->teed = j->tee_fd >= 0 && sink_tee_ok(&j->sink);
	sink_stop(&j->sink);
	digest_final(&j->dc, &j->dr);
	j->dc_live = 0;
	r = lookup_begin(en, j, &e);
	if (r < 0)
		engine_finish_job(en, j, e.code ? e.code : WB_EIO, &e);
	else if (r > 0)
		engine_verify(en, j);
}

void engine_verify(struct engine *en, struct job *j)
{
	struct fetch_item *it = j->it;
	const struct digest_result *dr = &j->dr;
	const char *url = j->urls[T_MAIN(j)].v[j->url_idx];
	struct verify_input in;
	struct trust_aux *aux;
	struct wb_err e = WB_ERR_INIT;
	struct stat st;
	char data_path[64];
	int ret, teed = j->teed;

	j->state = J_RUNNING;   /* not J_LOOKUP: its lookups are over */
	memset(&in, 0, sizeof(in));
	in.spec = &it->art->verify;
	in.policy = &en->plan->policy;
	in.needs = &j->needs;
	in.dr = dr;
	in.url = url;
	/* a check that reads the bytes (a legacy signature) reads the inode
	 * that was written and hashed, not the temp file's name */
	snprintf(data_path, sizeof(data_path), "/proc/self/fd/%d", j->fd);
	in.data_path = data_path;
	in.lock_sha256 = it->lock_sha256;
	in.roots = &en->roots;
	aux = xcalloc(j->nslots + 1, sizeof(*aux));
	fill_aux(j, aux);
	in.aux = aux;
	verify_evidence_release(&it->ev);
	ret = verify_artifact(&in, &it->ev, &e);
	free(aux);
	if (ret < 0) {
		if (e.code == WB_EVERIFY) {
			note_verify_failure(j, &e);
			it->err = e;
			/* Another URL may serve the right bytes; this one never
			 * will. Strict mirror mode (mirror_only) stops here: the
			 * site must learn that its mirror serves bad bytes. */
			if (en->plan->mirror_only) {
				wb_error_prefix(&e, "strict mirror (mirror_only), no fallback");
				engine_finish_job(en, j, WB_EVERIFY, &e);
				return;
			}
			if (j->url_idx + 1 < j->urls[T_MAIN(j)].nr) {
				engine_log(en, WB_LOG_WARN, "%s; trying the next URL", e.msg);
				next_url(en, j, &e);
				return;
			}
		}
		engine_finish_job(en, j, e.code ? e.code : WB_EIO, &e);
		return;
	}
	digest_hex(dr->sha256, 32, it->sha256);
	refs_record_digests(it, dr, j->needs.digest_algs);
	it->size = dr->size;
	it->teed = teed && fstat(j->tee_fd, &st) == 0 &&
		   (unsigned long long)st.st_size == dr->size;
	xfer_tee_close(j, 0);
	free(it->url);
	it->url = redact_url(url);   /* what is recorded: never the secret */
	ret = cache_insert(en->c, j->tmp_path, j->fd, it->sha256, &e);
	free(j->tmp_path);
	j->tmp_path = NULL;
	if (!ret) {
		/* the item keeps the file that was written and hashed: its
		 * consumer (stage) reads exactly the verified bytes */
		free(it->path);
		it->path = cache_entry_path(en->c, it->sha256);
		it->fd = j->fd;
		it->has_fd = 1;
		it->hashed = 1;
		ret = refs_write(en, it, &e);
	} else {
		close(j->fd);
	}
	j->fd = -1;
	engine_finish_job(en, j, ret ? e.code : 0, ret ? &e : NULL);
}

/* Whether H's transfer ended on the scheme of URL (the one requested):
 * libcurl normalises the rest (dot segments, case). */
static int same_scheme(CURL *h, const char *url)
{
	char *eff = NULL, a[16], b[16];

	curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &eff);
	if (!eff)
		return 0;
	wb_url_scheme(eff, a);
	wb_url_scheme(url, b);
	return !strcmp(a, b);
}

/*
 * The current transfer (of URL, the plan's) answered with a redirect:
 * judge the hop by the hop policy (hop_judge) and follow it as a new
 * transfer, or refuse it (WB_EVERIFY: nothing from that URL is used; the
 * next URL is tried). Cleans up H.
 * @where where a redirect hop is checked (followed by winbuild, never by
 *   libcurl) -- downloads and auxiliary files
 */
static void follow_redirect(struct engine *en, struct job *j, CURL *h, const char *url,
			    long code)
{
	const char *from = j->hop_url ? j->hop_url : url, *why;
	struct wb_err e = WB_ERR_INIT;
	char *to = NULL, *shown;
	enum hop_verdict v;

	curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &to);
	v = hop_judge(&en->plan->policy, 0, from, to, j->hops, &why);
	if (v == HOP_NO_LOCATION) {
		wb_error(&e, WB_ENET, "artifact '%s': %s '%s': HTTP %ld without a Location",
			 j->it->art->name, job_target_what(j, j->target), url, code);
		curl_easy_cleanup(h);
		next_url(en, j, &e);
		return;
	}
	shown = xfer_shown_url(to);
	if (v != HOP_FOLLOW) {
		if (v == HOP_REFUSED)
			wb_error(&e, WB_EVERIFY,
				 "artifact '%s': %s '%s' redirects to '%s', which is refused: %s",
				 j->it->art->name, job_target_what(j, j->target), url, shown, why);
		else
			wb_error(&e, WB_ENET,
				 "artifact '%s': %s '%s': more than %d redirects (the last to '%s')",
				 j->it->art->name, job_target_what(j, j->target), url,
				 FETCH_MAX_REDIRS, shown);
		if (v == HOP_REFUSED)
			note_verify_failure(j, &e);
		if (j->url_idx + 1 < j->urls[j->target].nr)
			engine_log(en, WB_LOG_WARN, "%s; trying the next URL", e.msg);
		free(shown);
		curl_easy_cleanup(h);
		next_url(en, j, &e);
		return;
	}
	engine_log(en, WB_LOG_INFO, "artifact '%s': '%s' redirects to '%s'", j->it->art->name,
	     url, shown);
	free(shown);
	to = xstrdup(to);
	curl_easy_cleanup(h);
	free(j->hop_url);
	j->hop_url = to;
	j->hops++;
	j->state = J_WAIT;
	j->not_before = 0;
}

/*
 * @where downloads: libcurl multi, `-j N`, retries, Range resume, size caps,
 *   TLS -- a transfer's end
 */
static void transfer_done(struct engine *en, CURL *h, CURLcode rc)
{
	struct job *j;
	struct wb_err e = WB_ERR_INIT;
	const char *url;
	char *priv = NULL;
	long code = 0;

	curl_easy_getinfo(h, CURLINFO_PRIVATE, &priv);
	curl_multi_remove_handle(en->multi, h);
	en->running--;
	if (((struct xfer_tag *)(void *)priv)->kind == XT_LOOKUP) {
		lookup_done(en, (struct xfer_tag *)(void *)priv, h, rc);
		return;
	}
	j = (struct job *)(void *)priv;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	j->h = NULL;
	url = j->urls[j->target].v[j->url_idx];
	if (j->target == T_MAIN(j)) {
		int err = sink_drain(&j->sink);

		if (err && !j->io_error)
			j->io_error = err;
	}

	if (rc == CURLE_OK && code >= 300 && code < 400 && !j->io_error) {
		follow_redirect(en, j, h, url, code);
		return;
	}
	if (rc == CURLE_OK && !j->io_error && !same_scheme(h, j->hop_url ? j->hop_url : url)) {
		/* never: libcurl follows nothing on its own here */
		wb_error(&e, WB_EVERIFY, "artifact '%s': %s '%s': the bytes came over "
			 "another scheme than the one requested", j->it->art->name,
			 job_target_what(j, j->target), url);
		j->saw_verify_failure = 1;
		curl_easy_cleanup(h);
		next_url(en, j, &e);
		return;
	}
	if (rc == CURLE_OK && (code == 0 || (code >= 200 && code < 300)) &&
	    !j->io_error) {
		curl_easy_cleanup(h);
		if (j->target == T_MAIN(j)) {
			complete_main(en, j);
			return;
		}
		j->text_url[j->target] = xstrdup(url);
		goto_target(j, j->target + 1);
		return;
	}
	curl_easy_cleanup(h);

	if (j->io_error) {
		wb_error(&e, WB_EIO, "artifact '%s': cannot write '%s': %s", j->it->art->name,
			 j->tmp_path ? j->tmp_path : "?", strerror(j->io_error));
		engine_finish_job(en, j, WB_EIO, &e);
		return;
	}
	if (j->too_big || rc == CURLE_FILESIZE_EXCEEDED) {
		wb_error(&e, WB_ENET, "artifact '%s': %s '%s' is larger than the limit of %llu bytes",
			 j->it->art->name, job_target_what(j, j->target), url,
			 xfer_target_cap(j, j->target));
		next_url(en, j, &e);
		return;
	}
	if (rc == CURLE_HTTP_RETURNED_ERROR && (code == 404 || code == 410) &&
	    j->target != T_MAIN(j) &&
	    (slot_req(j, j->target)->method->flags & TRUST_ABSENT_FAILS)) {
		j->absent++;
		/* a release that does not exist has no signature either: name
		 * the version before anyone suspects the signer */
		wb_error(&e, WB_ENET, "artifact '%s': %s '%s': HTTP %ld: the server "
			 "says there is no such signature (or no release '%s' of %s: "
			 "is the version right?)", j->it->art->name,
			 job_target_what(j, j->target), url, code, j->it->art->version,
			 j->it->art->component);
	} else if (rc == CURLE_HTTP_RETURNED_ERROR && (code == 404 || code == 410))
		wb_error(&e, WB_ENET, "artifact '%s': %s '%s': HTTP %ld (no such file: is "
			 "version '%s' of %s right? 'winbuild plan --explain' shows where "
			 "it was set)", j->it->art->name, job_target_what(j, j->target), url, code,
			 j->it->art->version, j->it->art->component);
	else if (rc == CURLE_HTTP_RETURNED_ERROR && (code == 401 || code == 403)) {
		char hint[1200];

		xfer_auth_hint(j, j->hop_url ? j->hop_url : url, hint, sizeof(hint));
		wb_error(&e, WB_ENET, "artifact '%s': %s '%s': HTTP %ld%s", j->it->art->name,
			 job_target_what(j, j->target), url, code, hint);
	} else if (rc == CURLE_HTTP_RETURNED_ERROR)
		wb_error(&e, WB_ENET, "artifact '%s': %s '%s': HTTP %ld%s", j->it->art->name,
			 job_target_what(j, j->target), url, code,
			 code == 400 && !j->sent && !strncasecmp(url, "https:", 6) ?
			 " (a server that wants a TLS client certificate answers 400 "
			 "without one: give it a client-cert entry in the credentials file)" : "");
	else
		wb_error(&e, WB_ENET, "artifact '%s': %s '%s': %s%s", j->it->art->name,
			 job_target_what(j, j->target), url,
			 j->errbuf[0] ? j->errbuf : curl_easy_strerror(rc), xfer_remedy(rc));
	if (j->target == T_MAIN(j) && code == 416)
		xfer_main_reset(j);   /* our range was bad: start over next time */

	if (!xfer_retryable(rc, code)) {
		next_url(en, j, &e);
		return;
	}
	if (j->target == T_MAIN(j) && j->attempt_bytes > 0 && j->resumes < 8 &&
	    rc != CURLE_OPERATION_TIMEDOUT && !strncasecmp(url, "http", 4)) {
		/* Progress was made: resume at once, without spending a try.
		 * Not after a stall (low-speed timeout): a server that trickles
		 * a few bytes per attempt must not buy itself 8 free rounds. */
		j->resumes++;
		engine_log(en, WB_LOG_INFO, "%s; resuming at byte %llu", e.msg, j->have);
		j->state = J_WAIT;
		j->not_before = 0;
		return;
	}
	if (++j->tries >= en->max_tries) {
		next_url(en, j, &e);
		return;
	}
	j->not_before = engine_now() + (double)(en->backoff_ms << (j->tries - 1)) / 1000.0;
	engine_log(en, WB_LOG_INFO, "%s; retrying (%d of %d)", e.msg, j->tries + 1, en->max_tries);
	j->state = J_WAIT;
}

/* ---- progress --------------------------------------------------------- */

/*
 * @where progress totals known up front (lock file sizes, HEAD) and the
 *   progress display
 */
static void report_progress(struct engine *en, int force)
{
	struct fetch_xfer_progress *xs;
	struct fetch_progress p;
	double t = engine_now();
	size_t n = 0;

	if (!en->o->on_progress || (!force && t - en->last_progress < 0.2))
		return;
	en->last_progress = t;
	xs = xcalloc(en->njobs + 1, sizeof(*xs));
	memset(&p, 0, sizeof(p));
	for (size_t i = 0; i < en->njobs; i++) {
		struct job *j = &en->jobs[i];
		curl_off_t cl = -1;

		if (j->state == J_WAIT && j->target == T_MAIN(j) && j->dl_state == DL_WAITING) {
			xs[n].name = j->it->art->name;
			xs[n].total = j->total;
			xs[n].waiting = 1;
			xs[n].holder = j->dl_holder;
			n++;
			continue;
		}
		if (j->state == J_LOOKUP) {   /* its bytes are in */
			p.bytes_now += j->have;
			p.bytes_total += j->have;
			continue;
		}
		if (j->state != J_DONE && (j->state != J_RUNNING || j->target != T_MAIN(j))) {
			p.bytes_total += j->total;   /* known up front, or 0 */
			continue;
		}
		if (j->state != J_RUNNING)
			continue;
		curl_easy_getinfo(j->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
		if (cl > 0)   /* the server's word beats a size known up front */
			j->total = (unsigned long long)cl + j->have - j->attempt_bytes;
		xs[n].name = j->it->art->name;
		xs[n].now = j->have;
		xs[n].total = j->total;
		p.bytes_now += j->have;
		p.bytes_total += j->total;
		n++;
	}
	for (size_t i = 0; i < en->njobs; i++)
		if (en->jobs[i].state == J_DONE && !en->jobs[i].it->status &&
		    !en->jobs[i].it->from_cache) {
			p.bytes_now += en->jobs[i].it->size;
			p.bytes_total += en->jobs[i].it->size;
		}
	p.xfers = xs;
	p.nxfers = n;
	p.items_done = en->done;
	p.items_total = en->njobs;
	p.elapsed = t - en->t0;
	en->o->on_progress(en->o->ctx, &p);
	free(xs);
}

/* ---- setup ------------------------------------------------------------ */

static void allowed_urls(struct engine *en, struct job *j, size_t t,
			 const struct wb_strlist *from)
{
	for (size_t i = 0; i < from->nr; i++) {
		/* --offline is "no network": only file:// URLs */
		if (en->o->offline && strncasecmp(from->v[i], "file:", 5))
			continue;
		if (verify_url_allowed(&en->plan->policy, from->v[i]))
			wb_strlist_push(&j->urls[t], from->v[i]);
		else
			engine_log(en, WB_LOG_WARN,
			     "artifact '%s': skipping '%s' (policy.allow_http: false)",
			     j->it->art->name, from->v[i]);
	}
}

/*
 * @where a method's auxiliary files (param, default URL, cap, mirror suffix,
 *   lock key) -- fetched as slots (requirement x file)
 */
static int setup_job(struct engine *en, struct job *j, struct wb_err *e)
{
	const struct plan_artifact *a = j->it->art;
	const struct trust_spec *v = &a->verify;

	j->nslots = trust_spec_slot(v, v->nreqs);
	j->slot_req = xcalloc(j->nslots + 1, sizeof(*j->slot_req));
	j->slot_k = xcalloc(j->nslots + 1, sizeof(*j->slot_k));
	for (size_t i = 0, t = 0; i < v->nreqs; i++)
		for (size_t k = 0; k < trust_method_naux(v->reqs[i].method); k++, t++) {
			j->slot_req[t] = i;
			j->slot_k[t] = k;
		}
	j->urls = xcalloc(j->nslots + 1, sizeof(*j->urls));
	j->text = xcalloc(j->nslots + 1, sizeof(*j->text));
	j->text_url = xcalloc(j->nslots + 1, sizeof(*j->text_url));
	for (size_t t = 0; t < j->nslots; t++)
		buf_init(&j->text[t]);
	if (verify_plan(v, &en->plan->policy, j->it->lock_sha256, en->o->accept_new,
			&j->needs, e) < 0)
		return -1;
	for (size_t t = 0; t < j->nslots; t++)
		if (j->needs.reqs & (1ULL << j->slot_req[t]))
			allowed_urls(en, j, t, trust_req_urls(slot_req(j, t), j->slot_k[t]));
	allowed_urls(en, j, T_MAIN(j), &a->urls);
	for (size_t t = 0; t <= T_MAIN(j); t++) {
		int wanted = t == T_MAIN(j) ||
			((j->needs.reqs & (1ULL << j->slot_req[t])) &&
			 trust_aux_required(slot_req(j, t), j->slot_k[t]));

		if (wanted && !j->urls[t].nr && en->o->offline) {
			j->offline_blocked = 1;
			break;
		}
		if (wanted && !j->urls[t].nr)
			return wb_error(e, a->urls.nr || t != T_MAIN(j) ? WB_EVERIFY : WB_EUSAGE,
					"artifact '%s': no URL for its %s is allowed%s",
					a->name, job_target_what(j, t),
					en->plan->policy.allow_http ? "" :
					" (policy.allow_http: false)");
	}
	goto_target(j, 0);
	return 0;
}

static void job_release(struct cache *c, struct job *j)
{
	for (size_t t = 0; j->urls && t <= j->nslots; t++)
		wb_strlist_release(&j->urls[t]);
	hop_reset(j);
	for (size_t t = 0; j->text && t < j->nslots; t++) {
		buf_release(&j->text[t]);
		free(j->text_url[t]);
	}
	free(j->slot_req);
	free(j->slot_k);
	free(j->urls);
	free(j->text);
	free(j->text_url);
	if (j->h)
		curl_easy_cleanup(j->h);
	curl_slist_free_all(j->hdr);
	lookup_release(j);
	cache_dl_unlock(c, &j->dl);
	xfer_main_discard(j);
	if (j->dc_live)
		digest_release(&j->dc);
}

static int severity(int code)
{
	/* lower is more severe */
	switch (code) {
	case WB_EVERIFY: return 0;
	case WB_EUSAGE: return 1;
	case WB_ENET: return 2;
	default: return 3;
	}
}

static void summarise(struct fetch_item *items, size_t n, struct wb_err *e)
{
	size_t failed = 0, first = 0;
	int code = 0;

	for (size_t i = 0; i < n; i++) {
		if (!items[i].status)
			continue;
		if (!failed || severity(items[i].status) < severity(code)) {
			code = items[i].status;
			first = i;
		}
		failed++;
	}
	if (failed == 1)
		wb_error(e, code, "%s", items[first].err.msg);
	else
		wb_error(e, code, "%zu of %zu artifacts failed; first: %s", failed, n,
			 items[first].err.msg);
}

/* A job that may start a transfer at time T (its backoff is over). */
static int startable(const struct engine *en, double t)
{
	if (en->running >= en->o->jobs)
		return 0;
	for (size_t i = 0; i < en->njobs; i++)
		if ((en->jobs[i].state == J_WAIT && en->jobs[i].not_before <= t) ||
		    (en->jobs[i].state == J_LOOKUP && lookup_startable(&en->jobs[i], t)))
			return 1;
	return 0;
}

/* Resume the transfers whose sinks have room again. curl_easy_pause may
 * deliver the held-back bytes at once, and on_write may pause again. */
static void resume_paused(struct engine *en)
{
	for (size_t i = 0; i < en->njobs; i++) {
		struct job *j = &en->jobs[i];

		if (j->state == J_RUNNING && j->paused && j->h && sink_has_room(&j->sink)) {
			j->paused = 0;
			curl_easy_pause(j->h, CURLPAUSE_CONT);
		}
	}
}

/*
 * @where downloads: libcurl multi, `-j N`, retries, Range resume, size caps,
 *   TLS -- the loop
 * @where SIGINT/SIGTERM during a fetch or an emit (flag, cleanup, exit 130)
 *   -- checked during a fetch
 */
static int run_engine(struct engine *en, struct wb_err *e)
{
	int ret = 0;

	while (en->done < en->njobs) {
		double t = engine_now(), wait = 0.2;
		int still, nq;
		CURLMsg *m;

		if (en->o->interrupted && *en->o->interrupted) {
			/* the caller's job_release() removes every temp file */
			ret = wb_error(e, WB_EINTR, "interrupted; %zu of %zu artifacts done, "
				       "partial downloads removed", en->done, en->njobs);
			break;
		}
		for (size_t k = 0; k < en->njobs && en->running < en->o->jobs; k++) {
			struct job *j = &en->jobs[en->order[k]];

			if (j->state == J_LOOKUP)
				lookup_start(en, j, t, &wait);
			if (j->state != J_WAIT)
				continue;
			if (j->not_before > t) {
				if (j->not_before - t < wait)
					wait = j->not_before - t;
				continue;
			}
			if (j->target == T_MAIN(j) && dl_lock(en, j))
				continue;
			if (xfer_start(en, j, &j->it->err) < 0)
				engine_finish_job(en, j, j->it->err.code ? j->it->err.code : WB_EIO,
					   &j->it->err);
		}
		if (en->done >= en->njobs)
			break;
		if (curl_multi_perform(en->multi, &still) != CURLM_OK) {
			ret = wb_error(e, WB_EIO, "curl multi handle failed");
			break;
		}
		while ((m = curl_multi_info_read(en->multi, &nq)) != NULL)
			if (m->msg == CURLMSG_DONE)
				transfer_done(en, m->easy_handle, m->data.result);
		report_progress(en, 0);
		if (startable(en, engine_now()))
			continue;   /* a transfer ended: start the next one now */
		if (en->running)
			curl_multi_poll(en->multi, NULL, 0, (int)(wait * 1000) + 1, NULL);
		else if (en->done < en->njobs)
			usleep((useconds_t)(wait * 1e6) + 1000);
		resume_paused(en);
	}
	report_progress(en, 1);
	return ret;
}

/*
 * @where downloads: libcurl multi, `-j N`, retries, Range resume, size caps,
 *   TLS -- the engine
 */
int fetch_all(const struct plan *plan, struct fetch_item *items, size_t n,
	      struct cache *c, const struct fetch_opts *o, struct wb_err *e)
{
	struct engine en;
	struct env_limits lim;
	struct buf missing = BUF_INIT;
	size_t nmissing = 0, k = 0;
	int ret = 0;

	memset(&en, 0, sizeof(en));
	if (env_limits_read(&lim, e) < 0)
		return -1;
	en.plan = plan;
	en.o = o;
	en.c = c;
	en.njobs = n;
	en.t0 = engine_now();
	en.max_tries = (int)lim.retries;
	en.backoff_ms = lim.backoff_ms;
	en.connect_timeout = lim.connect_timeout;
	en.low_speed_time = lim.low_speed_time;
	/* below this many bytes/s for low_speed_time seconds is a stall */
	en.low_speed_limit = lim.low_speed_limit;
	en.max_size = lim.max_size;
	en.lock_timeout = lim.lock_timeout;
	snprintf(en.user_agent, sizeof(en.user_agent), "winbuild/%s", WB_VERSION);
	en.jobs = xcalloc(n ? n : 1, sizeof(*en.jobs));
	/* Archives first: unpacking them is the longest work after the
	 * download (a stage starts it as soon as one is verified), so it
	 * overlaps the other downloads instead of trailing them. */
	en.order = xcalloc(n ? n : 1, sizeof(*en.order));
	for (size_t i = 0; i < n; i++)
		if (items[i].art->action == PLAN_UNPACK)
			en.order[k++] = i;
	for (size_t i = 0; i < n; i++)
		if (items[i].art->action != PLAN_UNPACK)
			en.order[k++] = i;

	for (size_t i = 0; i < n; i++) {
		struct job *j = &en.jobs[i];
		struct fetch_item *it = &items[i];
		int r;

		j->it = it;
		j->fd = -1;
		j->tee_fd = -1;
		j->dl = (struct cache_dl_lock)CACHE_DL_LOCK_INIT;
		j->total = it->expect_size;
		j->max_size = en.max_size;
		it->status = 0;
		wb_err_clear(&it->err);
		if (setup_job(&en, j, &it->err) < 0) {
			engine_finish_job(&en, j, it->err.code, &it->err);
			continue;
		}
		r = refs_try_cache(&en, j, &it->err);
		if (r < 0) {
			engine_finish_job(&en, j, it->err.code ? it->err.code : WB_EIO, &it->err);
		} else if (r > 0) {
			engine_finish_job(&en, j, 0, NULL);
		} else if (o->offline && j->offline_blocked) {
			/* a cached copy whose kept evidence this run's policy
			 * refuses (a higher policy.tlog_threshold, another
			 * signer) is not usable either; say so, not "absent" */
			const char *why = j->cache_refused ?
				": its cached copy does not meet this run's checks "
				"(the warning above says why)" : "";

			wb_error(&it->err, WB_ENET, "artifact '%s' is not in the cache (--offline)%s",
				 it->art->name, why);
			engine_finish_job(&en, j, WB_ENET, &it->err);
			buf_addf(&missing, "\n  %s (%s)%s", it->art->name,
				 it->art->urls.nr ? it->art->urls.v[0] : it->art->upstream_url, why);
			nmissing++;
		}
	}

	/* credentials only when a request will be made: an offline (the
	 * cache and file:// only) or all-cached run never reads them */
	if (en.done < n && !o->offline &&
	    creds_load(&en.creds, o->credentials, o->netrc_file, e) < 0) {
		ret = -1;
		for (size_t i = 0; i < n; i++)
			if (en.jobs[i].state != J_DONE) {
				items[i].err = *e;
				engine_finish_job(&en, &en.jobs[i], e->code, e);
			}
		goto out;
	}
	if (en.done < n) {
		en.multi = curl_multi_init();
		if (!en.multi) {
			ret = wb_error(e, WB_EIO, "cannot create a curl multi handle");
			goto out;
		}
		curl_multi_setopt(en.multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)o->jobs);
		if (o->probe_sizes && o->on_progress)
			probe_sizes(&en);
		ret = run_engine(&en, e);
	}
	if (ret)
		goto out;
	if (o->interrupted && *o->interrupted) {
		ret = wb_error(e, WB_EINTR, "interrupted");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (items[i].status)
			ret = -1;
	if (ret && nmissing) {
		int only_missing = 1;
		for (size_t i = 0; i < n; i++)
			if (items[i].status && items[i].status != WB_ENET)
				only_missing = 0;
		if (only_missing)
			wb_error(e, WB_ENET, "offline, and %zu artifact%s not in the cache:%s",
				 nmissing, nmissing == 1 ? " is" : "s are", missing.ptr);
		else
			summarise(items, n, e);
	} else if (ret) {
		summarise(items, n, e);
	}
out:
	/* a debug line (-v): the tests count the parses with it */
	if (en.roots.used)
		engine_log(&en, WB_LOG_DEBUG, "sigstore trusted roots: %u parsed for %u checks",
			   en.roots.parsed, en.roots.used);
	sigstore_roots_release(&en.roots);
	for (size_t i = 0; i < n; i++)
		job_release(c, &en.jobs[i]);
	creds_release(&en.creds);
	if (en.multi)
		curl_multi_cleanup(en.multi);
	free(en.jobs);
	free(en.order);
	buf_release(&missing);
	return ret;
}

void fetch_item_release(struct fetch_item *it)
{
	if (it->has_fd)
		close(it->fd);
	it->has_fd = it->hashed = 0;
	it->fd = -1;
	free(it->url);
	free(it->path);
	free(it->quarantined);
	verify_evidence_release(&it->ev);
	it->url = it->path = it->quarantined = NULL;
}
