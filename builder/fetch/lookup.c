/*
 * A method's lookup after a download (trust_method.lookup_step: cosign's
 * Rekor search by the artifact's SHA-256) as transfers of the engine's
 * multi handle. Each round's requests (the index POST, then one GET per
 * listed entry, in parallel) run beside the other jobs' downloads, under
 * the same rules as every request of the engine: the transport policy and
 * hop_judge() on every hop (the Rekor API: never a redirect), retries with
 * backoff, the answer's size cap, the connect and stall timeouts
 * (request_judge, request.c). Before, the lookup ran as blocking requests on
 * the engine's thread and every other transfer waited (issue 30).
 *
 * Per requirement that wants a lookup, its base URLs in turn (the next on a
 * network error); the answer is the text of the file the lookup fills.
 */
#include <stdlib.h>
#include <string.h>

#include "fetch/engine.h"

/* One request of the current round, as a transfer. */
struct lookup_xfer {
	struct xfer_tag tag;           /* XT_LOOKUP (first member) */
	struct job *j;
	struct trust_lookup_req *rq;   /* the method's request and answer */
	char *cur;                     /* the URL asked now (after hops) */
	int hops, tries;
	double not_before;             /* backoff: monotonic seconds */
	enum { LX_WAIT, LX_RUNNING, LX_DONE } state;
	CURL *h;
	struct curl_slist *hdr;
	struct request_answer a;
	char errbuf[CURL_ERROR_SIZE];
};

struct job_lookup {
	size_t req;                    /* the requirement looked up */
	int begun;                     /* its first base URL was asked */
	size_t base;                   /* its base URL asked now */
	int ended;                     /* the base URL's answer is in: R, E */
	int r;
	struct wb_err e;
	char hex[65];
	struct trust_lookup lk;
	struct lookup_xfer *x;         /* the round's transfers */
	size_t nx, left;
	unsigned gen;                  /* counts the rounds begun */
};

/* The slot of the file requirement I's lookup fills. */
static size_t lookup_slot(const struct job *j, size_t i)
{
	const struct trust_spec *v = &j->it->art->verify;

	return trust_spec_slot(v, i) + v->reqs[i].method->lookup_aux;
}

/* Whether J looks up requirement I: it checks it, its method has a lookup
 * service, and the recipe gives no URL for the file the lookup fills. */
static int wanted(const struct job *j, size_t i)
{
	const struct trust_req *q = &j->it->art->verify.reqs[i];

	return (j->needs.reqs & (1ULL << i)) && q->method->lookup_step && q->lookup.nr &&
	       !j->urls[lookup_slot(j, i)].nr;
}

static void round_release(struct job_lookup *jl)
{
	for (size_t i = 0; i < jl->nx; i++) {
		struct lookup_xfer *x = &jl->x[i];

		if (x->h)
			curl_easy_cleanup(x->h);
		curl_slist_free_all(x->hdr);
		free(x->cur);
	}
	free(jl->x);
	jl->x = NULL;
	jl->nx = jl->left = 0;
}

/* The round the method asked for in JL->lk, as transfers waiting to start. */
static void round_begin(struct job *j)
{
	struct job_lookup *jl = j->lookup;

	round_release(jl);
	jl->gen++;
	jl->x = xcalloc(jl->lk.nreqs, sizeof(*jl->x));
	jl->nx = jl->left = jl->lk.nreqs;
	for (size_t i = 0; i < jl->nx; i++) {
		jl->x[i].tag.kind = XT_LOOKUP;
		jl->x[i].j = j;
		jl->x[i].rq = &jl->lk.reqs[i];
		jl->x[i].cur = xstrdup(jl->lk.reqs[i].url);
		jl->x[i].state = LX_WAIT;
	}
	j->state = J_LOOKUP;
}

/* Base URL JL->base of requirement JL->req ended (JL->r, JL->e): what
 * the blocking lookups() of engine.c did after each base URL before issue
 * 30. 1: the requirement is settled (R, E), 0: ask the next base URL. */
static int base_ended(struct engine *en, struct job *j, struct buf *out)
{
	struct job_lookup *jl = j->lookup;
	const struct trust_req *q = &j->it->art->verify.reqs[jl->req];
	size_t u = jl->base, slot = lookup_slot(j, jl->req);

	jl->ended = 0;
	if (jl->r == 0 && jl->e.msg[0]) {
		/* a cap the lookup hit (rekor.h): reported, not an error */
		engine_log(en, WB_LOG_WARN, "artifact '%s': %s", j->it->art->name, jl->e.msg);
		wb_err_clear(&jl->e);
	}
	if (jl->r < 0 && jl->e.code == WB_ENET && u + 1 < q->lookup.nr)
		engine_log(en, WB_LOG_WARN, "artifact '%s': %s; trying the next one",
			   j->it->art->name, jl->e.msg);
	if (jl->r == 0 && out->len) {
		free(j->text_url[slot]);
		j->text_url[slot] = xstrdup(q->lookup.v[u]);
	}
	if (jl->r == 0 || jl->e.code != WB_ENET || u + 1 >= q->lookup.nr)
		return 1;
	jl->base++;
	return 0;
}

/* Run J's lookups from where they stand until a round waits for its
 * answers (0), every one is done (1) or one failed (-1, JL->e). */
static int advance(struct engine *en, struct job *j)
{
	struct job_lookup *jl = j->lookup;
	const struct trust_spec *v = &j->it->art->verify;

	while (jl->req < v->nreqs) {
		const struct trust_req *q = &v->reqs[jl->req];
		struct buf *out = &j->text[lookup_slot(j, jl->req)];

		if (!jl->begun && !wanted(j, jl->req)) {
			jl->req++;
			continue;
		}
		if (!jl->begun) {
			jl->begun = 1;
			jl->base = 0;
			jl->ended = 0;
		}
		if (!jl->ended) {
			/* ask base URL jl->base */
			if (en->o->offline) {
				/* --offline: no network, so no lookup */
				jl->r = wb_error(&jl->e, WB_ENET, "artifact '%s': '%s' is not "
						 "asked (--offline)", j->it->art->name,
						 q->lookup.v[jl->base]);
			} else {
				wb_err_clear(&jl->e);
				buf_reset(out);
				trust_lookup_clear(&jl->lk);
				memset(&jl->lk, 0, sizeof(jl->lk));
				jl->lk.req = q;
				jl->lk.base = q->lookup.v[jl->base];
				jl->lk.sha256_hex = jl->hex;
				jl->r = q->method->lookup_step(&jl->lk, out, &jl->e);
				if (jl->r == 1 && jl->lk.nreqs) {
					round_begin(j);
					return 0;
				}
				if (jl->r == 1)
					jl->r = wb_error(&jl->e, WB_EIO, "a lookup round without "
							 "a request");
			}
			jl->ended = 1;
		}
		if (!base_ended(en, j, out))
			continue;
		/* the requirement's lookup is settled: jl->r, jl->e */
		if (jl->r == 0 && !out->len)
			/* the log answered and has nothing for these bytes: they
			 * are not what was signed (tampered, or never released);
			 * said first, before any word about the log */
			return wb_error(&jl->e, WB_EVERIFY, "artifact '%s': the bytes differ from "
					"what was signed: no transparency-log entry for sha256:%s in "
					"%s '%s'", j->it->art->name, jl->hex, q->method->lookup_param,
					q->lookup.v[q->lookup.nr - 1]);
		if (jl->r < 0) {
			wb_error_prefix(&jl->e, "artifact '%s': %s", j->it->art->name,
					trust_method_aux(q->method, q->method->lookup_aux).what);
			return -1;
		}
		jl->req++;
		jl->begun = 0;
	}
	return 1;
}

/*
 * @where where a Rekor entry is looked up online (`verify.cosign` at fetch
 *   time, `sig sigstore --rekor`) -- at fetch time: each round's requests are
 *   transfers of the engine beside the downloads
 */
int lookup_begin(struct engine *en, struct job *j, struct wb_err *e)
{
	struct job_lookup *jl;
	int r;

	lookup_release(j);   /* an earlier URL's bytes */
	jl = j->lookup = xcalloc(1, sizeof(*jl));
	digest_hex(j->dr.sha256, 32, jl->hex);
	r = advance(en, j);
	if (r < 0)
		*e = jl->e;
	return r;
}

/* The round is answered: the method's next round, or the lookups go on
 * (the next requirement), or the job's checks follow. */
static void round_done(struct engine *en, struct job *j)
{
	struct job_lookup *jl = j->lookup;
	int r;

	jl->lk.round++;
	jl->r = jl->lk.req->method->lookup_step(&jl->lk, &j->text[lookup_slot(j, jl->req)],
						&jl->e);
	if (jl->r == 1 && jl->lk.nreqs) {
		round_begin(j);
		return;
	}
	if (jl->r == 1)
		jl->r = wb_error(&jl->e, WB_EIO, "a lookup round without a request");
	jl->ended = 1;
	round_release(jl);
	r = advance(en, j);
	if (r < 0)
		engine_finish_job(en, j, jl->e.code ? jl->e.code : WB_EIO, &jl->e);
	else if (r > 0)
		engine_verify(en, j);
}

static struct request_conf conf_of(const struct engine *en)
{
	struct request_conf c;

	c.policy = &en->plan->policy;
	c.cacert = en->o->cacert;
	c.user_agent = en->user_agent;
	c.max_tries = en->max_tries;
	c.connect_timeout = en->connect_timeout;
	c.low_speed_time = en->low_speed_time;
	c.low_speed_limit = en->low_speed_limit;
	return c;
}

/* X ended for good (answered, or E): the round ends with its last. */
static void xfer_settled(struct engine *en, struct lookup_xfer *x, const struct wb_err *e)
{
	struct job *j = x->j;

	if (e)
		x->rq->err = *e;
	x->state = LX_DONE;
	if (--j->lookup->left == 0)
		round_done(en, j);
}

static void xfer_begin(struct engine *en, struct lookup_xfer *x)
{
	struct request_conf c = conf_of(en);
	struct wb_err e = WB_ERR_INIT;

	x->h = curl_easy_init();
	if (!x->h) {
		wb_error(&e, WB_EIO, "cannot create a curl handle");
		xfer_settled(en, x, &e);
		return;
	}
	x->a.b = &x->rq->answer;
	x->a.max = x->rq->max;
	x->hdr = request_setopts(x->h, &c, x->cur, x->rq->post_json, &x->a, x->errbuf);
	curl_easy_setopt(x->h, CURLOPT_PRIVATE, (char *)&x->tag);
	if (curl_multi_add_handle(en->multi, x->h) != CURLM_OK) {
		curl_easy_cleanup(x->h);
		x->h = NULL;
		wb_error(&e, WB_EIO, "cannot add a curl transfer");
		xfer_settled(en, x, &e);
		return;
	}
	x->state = LX_RUNNING;
	en->running++;
}

void lookup_start(struct engine *en, struct job *j, double t, double *wait)
{
	struct job_lookup *jl = j->lookup;
	unsigned gen = jl ? jl->gen : 0;

	for (size_t i = 0; jl && i < jl->nx && en->running < en->o->jobs; i++) {
		struct lookup_xfer *x = &jl->x[i];

		if (x->state != LX_WAIT)
			continue;
		if (x->not_before > t) {
			if (x->not_before - t < *wait)
				*wait = x->not_before - t;
			continue;
		}
		xfer_begin(en, x);
		if (j->state != J_LOOKUP || jl->gen != gen)
			return;   /* the round ended (X is gone), or the job */
	}
}

int lookup_startable(const struct job *j, double t)
{
	for (size_t i = 0; j->lookup && i < j->lookup->nx; i++)
		if (j->lookup->x[i].state == LX_WAIT && j->lookup->x[i].not_before <= t)
			return 1;
	return 0;
}

void lookup_done(struct engine *en, struct xfer_tag *tag, CURL *h, CURLcode rc)
{
	struct lookup_xfer *x = (struct lookup_xfer *)tag;
	struct request_conf c = conf_of(en);
	struct request_end end;
	struct wb_err e = WB_ERR_INIT;
	char *to = NULL;
	int again = 0;

	memset(&end, 0, sizeof(end));
	end.rc = rc;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &end.code);
	curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &to);
	to = to ? xstrdup(to) : NULL;
	end.url = x->cur;
	end.to = to;
	end.too_big = x->a.too_big;
	end.max = x->rq->max;
	end.errbuf = x->errbuf;
	x->rq->status = end.code;
	switch (request_judge(&c, &end, x->rq->no_redirect, x->hops, &x->tries, &e)) {
	case REQ_RETRY:
		x->not_before = engine_now() +
			(double)request_backoff_ms(en->backoff_ms, x->tries) / 1000.0;
		again = 1;
		break;
	case REQ_FOLLOW:
		x->hops++;
		free(x->cur);
		x->cur = to;
		to = NULL;
		x->not_before = 0;
		again = 1;
		break;
	case REQ_OK:
	case REQ_FAILED:
		break;
	}
	curl_easy_cleanup(h);
	curl_slist_free_all(x->hdr);
	x->h = NULL;
	x->hdr = NULL;
	free(to);
	if (again) {
		x->state = LX_WAIT;   /* retried or redirected: starts again */
		return;
	}
	xfer_settled(en, x, e.code ? &e : NULL);
}

void lookup_release(struct job *j)
{
	if (!j->lookup)
		return;
	round_release(j->lookup);
	trust_lookup_clear(&j->lookup->lk);
	free(j->lookup);
	j->lookup = NULL;
}
