/*
 * The transfer engine. One struct job per artifact walks its targets in
 * order: the auxiliary file of each requirement of its verify spec (a
 * checksum file, a signature, a bundle: whatever its method of the table
 * in trust/method.h asks for, capped at the method's size), then the
 * artifact, each through the URL try order, with one transfer at a time;
 * jobs run in parallel on one curl multi handle. Nothing here knows a
 * method by name.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "fetch/fetch.h"
#include "fetch/sink.h"
#include "lib/buf.h"
#include "lib/envlimits.h"
#include "lib/text.h"
#include "lib/fs.h"

#define FETCH_BUFFER_SIZE (512L * 1024)
#define FETCH_MAX_REDIRS 10

enum job_state {
	J_WAIT,      /* ready to start (or waiting for its backoff) */
	J_RUNNING,   /* a transfer is in the multi handle */
	J_DONE,
};

struct job {
	struct fetch_item *it;
	struct verify_needs needs;
	enum job_state state;
	size_t target;                 /* a slot: one auxiliary file of one
					* requirement (slot_req, slot_k), or
					* nslots: the artifact itself (T_MAIN) */
	size_t nslots;                 /* every file of every requirement, in
					* the spec's order (trust_spec_slot) */
	size_t *slot_req, *slot_k;
	struct wb_strlist *urls;       /* allowed URLs per target (nslots + 1) */
	size_t url_idx;
	char *hop_url;                 /* where the current URL redirected us
					* (checked by hop_refused), or NULL */
	int hops;                      /* redirects followed from the URL */
	int tries;                     /* failed attempts on this URL */
	int resumes;                   /* resumed attempts (progress made) */
	double not_before;             /* backoff: monotonic seconds */
	int saw_verify_failure;
	struct wb_err first_verify;    /* the first verification failure */
	int offline_blocked;           /* --offline: a needed file has no
					* file:// URL, so only the cache can help */
	size_t absent;                 /* URLs of this target that said the
					  file does not exist (404, 410) */

	/* the current transfer */
	CURLM *multi;                  /* the engine's, for wake_engine */
	CURL *h;
	char errbuf[CURL_ERROR_SIZE];
	int too_big;
	int io_error;
	unsigned long long attempt_bytes;

	/* aux targets: fetched text (NULL text_url: not fetched) */
	struct buf *text;
	char **text_url;

	/* main target: the temp file and the running digests */
	char *tmp_path;
	int fd;
	struct digest_ctx dc;
	int dc_live;
	struct sink sink;              /* writes and hashes on worker threads */
	int tee_fd;                    /* the opts' tee_open file, or -1 */
	int tee_asked, tee_bad;        /* tee_open called; the tee failed */
	int paused;                    /* the sink refused bytes: paused until
					* it has room (run_engine resumes it) */
	int can_pause;                 /* not file://: libcurl fails a paused
					* FILE transfer, so that one waits */
	unsigned long long have;       /* bytes written to the temp file */
	unsigned long long total;      /* expected size, 0 when unknown */
	unsigned long long max_size;   /* WINBUILD_MAX_SIZE */

	/* the download lock around the artifact target (dl_lock) */
	struct cache_dl_lock dl;
	enum { DL_NONE, DL_WAITING, DL_HELD, DL_SKIP } dl_state;
	double dl_since;               /* when the wait began */
	long dl_holder;                /* the other winbuild's pid, 0 unknown */
};

#define T_MAIN(j) ((j)->nslots)

/* The requirement of slot T, and its file's definition. */
static const struct trust_req *slot_req(const struct job *j, size_t t)
{
	return &j->it->art->verify.reqs[j->slot_req[t]];
}

static struct trust_aux_def slot_def(const struct job *j, size_t t)
{
	return trust_method_aux(slot_req(j, t)->method, j->slot_k[t]);
}

/* The file target T of J is, for messages. */
static const char *target_what(const struct job *j, size_t t)
{
	const struct trust_req *q;

	if (t == T_MAIN(j))
		return "artifact";
	q = slot_req(j, t);
	return q->layered ? "signature of a further requirement" :
		trust_method_aux(q->method, j->slot_k[t]).what;
}

struct engine {
	const struct plan *plan;
	const struct fetch_opts *o;
	struct cache *c;
	CURLM *multi;
	struct job *jobs;
	size_t njobs;
	size_t *order;                 /* the order jobs start in */
	int running;
	double t0;
	double last_progress;
	unsigned long long bytes_now;
	size_t done;
	/* tunables */
	int max_tries;
	long backoff_ms;
	long connect_timeout, low_speed_time, low_speed_limit;
	unsigned long long max_size;
	long lock_timeout;             /* WINBUILD_LOCK_TIMEOUT */
	char user_agent[64];
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void elog(struct engine *en, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void elog(struct engine *en, int level, const char *fmt, ...)
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

/* ---- ref spec and refs ------------------------------------------------ */

static void spec_list(struct buf *b, const char *what, const struct wb_strlist *l)
{
	for (size_t i = 0; i < l->nr; i++)
		buf_addf(b, "%s %s\n", what, l->v[i]);
}

static void spec_keys(struct buf *b, const struct trust_key *keys, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char pk[65];
		digest_hex(keys[i].pk.pk, 32, pk);
		buf_addf(b, "key %s %s legacy=%d file_check=%d\n", keys[i].keyid_hex,
			 pk, keys[i].pk.allow_legacy, keys[i].pk.file_check);
	}
}

char *fetch_ref_spec(const struct plan *plan, const struct fetch_item *it)
{
	const struct plan_artifact *a = it->art;
	const struct trust_spec *v = &a->verify;
	struct buf b = BUF_INIT;

	buf_addf(&b, "winbuild-ref 3\nartifact %s\nfilename %s\n", a->name, a->filename);
	spec_list(&b, "url", &a->urls);
	buf_addf(&b, "sha256 %s\nsha512 %s\nneeds_pin %s\n", v->sha256 ? v->sha256 : "-",
		 v->sha512 ? v->sha512 : "-", v->needs_pin ? "yes" : "no");
	for (size_t i = 0; i < v->nreqs; i++) {
		const struct trust_req *q = &v->reqs[i];

		buf_addf(&b, "req %zu %s layered=%d\n", i + 1, q->method->name, q->layered);
		for (size_t k = 0; k < trust_method_naux(q->method); k++)
			spec_list(&b, k ? "aux_url_more" : "aux_url", trust_req_urls(q, k));
		spec_list(&b, "lookup", &q->lookup);
		spec_keys(&b, q->keys, q->nkeys);
		for (size_t k = 0; k < q->nparams; k++)
			buf_addf(&b, "param %s %s\n", q->params[k].key, q->params[k].value);
	}
	buf_addf(&b, "policy require_signature=%d allow_http=%d forbid_checksum_urls=%d\n",
		 plan->policy.require_signature, plan->policy.allow_http,
		 plan->policy.forbid_checksum_urls);
	/* No lock pin: `lock` writes the refs a later `--locked` run must
	 * find (README, "Everyday use"). A ref never decides which bytes are
	 * used: a pinned artifact is looked up by its pin, and every hit
	 * passes verify_pins() with the lock's pin too (try_cache). */
	return buf_detach(&b, NULL);
}

static void ref_key(const struct engine *en, const struct fetch_item *it, char key[65])
{
	char *spec = fetch_ref_spec(en->plan, it);

	cache_ref_key(spec, key);
	free(spec);
}

static int write_ref(struct engine *en, struct fetch_item *it, struct wb_err *e)
{
	struct cache_ref ref;
	char key[65];
	int ret;

	memset(&ref, 0, sizeof(ref));
	ref.artifact = it->art->name;
	memcpy(ref.sha256, it->sha256, 65);
	memcpy(ref.sha512, it->sha512, 129);
	memcpy(ref.blake2b512, it->blake2b512, 129);
	ref.size = it->size;
	ref.url = it->url;
	ref.methods = it->ev.methods;
	ref.evidence = verify_evidence_to_json(&it->ev);
	ref_key(en, it, key);
	ret = cache_ref_store(en->c, key, &ref, e);
	json_decref(ref.evidence);
	return ret;
}

/* Whether URL may name file K of requirement Q in a ref: one of the
 * plan's URLs for it, or (the file a lookup fills) one below a lookup
 * service's URL. A ref's URLs reach the lock and the SBOM. */
static int kept_url_ok(const struct trust_req *q, size_t k, const char *url,
		       const char *text)
{
	const struct wb_strlist *l = trust_req_urls(q, k);

	if (!url)
		return !text;
	for (size_t i = 0; i < l->nr; i++)
		if (!strcmp(l->v[i], url))
			return 1;
	for (size_t i = 0; q->method->lookup && k == q->method->lookup_aux &&
	     i < q->lookup.nr; i++) {
		size_t n = strlen(q->lookup.v[i]);

		while (n && q->lookup.v[i][n - 1] == '/')
			n--;
		if (!strncmp(url, q->lookup.v[i], n) && (url[n] == '/' || !url[n]))
			return 1;
	}
	return 0;
}

/*
 * Every requirement of J's plan checked again on the entry's bytes (DR,
 * open as FD) from the files the ref kept (KEPT: the checksum file, the
 * signature, the bundle...), with the plan's keys and settings. A ref is
 * only a hint written by whoever could write the cache: what it says
 * verified the bytes counts for nothing; *EV, what verified them now, is
 * what the lock, the SBOM and `fetch --json` record.
 */
static int ref_reverify(struct engine *en, struct job *j,
			const struct verify_evidence *kept, const char *entry, int fd,
			const struct digest_result *dr, struct verify_evidence *ev,
			struct wb_err *e)
{
	const struct trust_spec *v = &j->it->art->verify;
	struct trust_aux *aux = xcalloc(j->nslots + 1, sizeof(*aux));
	struct verify_needs needs;
	struct verify_input in;
	char data[64];
	int ret;

	memset(&needs, 0, sizeof(needs));
	for (size_t i = 0; i < kept->nr; i++) {
		const struct trust_ev *x = &kept->v[i];
		size_t s0 = trust_spec_slot(v, x->req), naux = trust_method_naux(x->method);

		needs.reqs |= 1ULL << x->req;
		for (size_t k = 0; k < naux; k++)
			if (!kept_url_ok(&v->reqs[x->req], k, k ? x->more[k - 1].url : x->url,
					 k ? x->more[k - 1].text : x->text)) {
				free(aux);
				return wb_error(e, WB_EVERIFY, "artifact '%s': the cache ref "
						"names a %s URL the plan does not",
						v->name, target_what(j, s0 + k));
			}
		aux[s0].url = x->url ? x->url : "(kept in the cache ref)";
		aux[s0].text = x->text;
		aux[s0].len = x->len;
		for (size_t k = 1; k < naux; k++) {
			aux[s0 + k].url = x->more[k - 1].url ? x->more[k - 1].url :
				"(kept in the cache ref)";
			aux[s0 + k].text = x->more[k - 1].text;
			aux[s0 + k].len = x->more[k - 1].len;
		}
		if (!x->text) {
			free(aux);
			return wb_error(e, WB_EVERIFY, "artifact '%s': the cache ref keeps "
					"no %s", v->name, target_what(j, s0));
		}
	}
	needs.methods = j->needs.methods & (VERIFY_REQS | VERIFY_SIGNATURE);
	needs.digest_algs = dr->algs;
	memset(&in, 0, sizeof(in));
	in.spec = v;
	in.policy = &en->plan->policy;
	in.needs = &needs;
	in.dr = dr;
	in.url = entry;
	/* the bytes as a file, for a check that reads them (a legacy
	 * signature): the very file that was hashed, not the entry's name */
	snprintf(data, sizeof(data), "/proc/self/fd/%d", fd);
	in.data_path = fd >= 0 ? data : entry;
	in.aux = aux;
	ret = verify_artifact(&in, ev, e);
	free(aux);
	return ret;
}

/*
 * IT's SHA-512 and BLAKE2b-512, for the ref and the SBOM: those of WANT (the
 * ones a pin or method checks; never an extra pass for them) that DR
 * computed. Never from a ref: its digests are whatever its writer put there.
 */
static void record_digests(struct fetch_item *it, const struct digest_result *dr,
			   unsigned want)
{
	it->sha512[0] = it->blake2b512[0] = '\0';
	if ((want & DIGEST_SHA512) && (dr->algs & DIGEST_SHA512))
		digest_hex(dr->sha512, 64, it->sha512);
	if ((want & DIGEST_BLAKE2B512) && (dr->algs & DIGEST_BLAKE2B512))
		digest_hex(dr->blake2b512, 64, it->blake2b512);
}

/* Whether URL is one of IT's plan URLs (a ref's "url" is only believed
 * then: it reaches the manifest, the lock and the SBOM). */
static int plan_url(const struct fetch_item *it, const char *url)
{
	for (size_t i = 0; url && i < it->art->urls.nr; i++)
		if (!strcmp(it->art->urls.v[i], url))
			return 1;
	return 0;
}

/*
 * 1 on a verified cache hit, 0 on a miss, -1 on error.
 *
 * Which entry: the artifact's sha256 pin (the recipe's, else the lock's)
 * when it has one, else the digest its ref recorded. A ref is only a hint:
 * a ref that names other bytes than the pin, or keeps files for other
 * requirements than the plan's, is ignored, and whatever entry is chosen
 * must satisfy every pin (verify_pins, the same check a download passes)
 * and every requirement of the plan, checked again from the files the ref
 * kept (ref_reverify), pinned or not. Without a ref, the pins must be the
 * artifact's only methods. The entry is opened once, without following a
 * link; the item keeps that descriptor (it->fd), so its consumer reads
 * what was checked here, hashing it when this did not (defer_rehash).
 */
static int try_cache(struct engine *en, struct job *j, struct wb_err *e)
{
	struct fetch_item *it = j->it;
	const char *pin = verify_pinned_sha256(&it->art->verify, it->lock_sha256);
	char key[65], *entry = NULL;
	const char *sha = NULL;
	unsigned char raw256[32];
	struct digest_result dr;
	struct cache_ref ref;
	struct verify_evidence kept, ev;
	int r, fd = -1, have_ref = 0, reverify, hash_now;
	unsigned algs = j->needs.digest_algs | DIGEST_SHA256;

	memset(&kept, 0, sizeof(kept));
	memset(&ev, 0, sizeof(ev));
	ref_key(en, it, key);
	r = cache_ref_load(en->c, key, &ref, e);
	if (r < 0)
		return -1;
	if (r) {
		sha = ref.sha256;
		if ((pin && strcasecmp(sha, pin)) ||
		    verify_evidence_from_json(&it->art->verify, &j->needs, ref.evidence,
					      &kept) < 0) {
			if (pin && strcasecmp(sha, pin))
				elog(en, WB_LOG_WARN,
				     "artifact '%s': ignoring a cache ref that names sha256 %.64s, "
				     "not the pinned %s", it->art->name, sha, pin);
			cache_ref_release(&ref);
			sha = NULL;
		} else {
			have_ref = 1;
		}
	}
	if (!sha) {
		/* No usable ref: a pin alone is enough to trust an entry. */
		if ((j->needs.methods & VERIFY_REQS) || !pin)
			goto miss;
		sha = pin;
	}
	reverify = have_ref && (j->needs.methods & VERIFY_REQS);
	/* hashed here unless the caller hashes every byte it reads and
	 * SHA-256 (the entry's name, which that read checks) is all the pins
	 * and requirements need */
	hash_now = !en->o->defer_rehash || (algs & ~(unsigned)DIGEST_SHA256);
	memset(&dr, 0, sizeof(dr));
	if (!hash_now) {
		r = cache_entry_open(en->c, sha, &dr.size, &fd, &it->quarantined, e);
		if (r > 0) {
			digest_unhex(sha, dr.sha256, 32);
			dr.algs = DIGEST_SHA256;
		}
	} else {
		r = cache_lookup_digests(en->c, sha, algs, &dr, &it->quarantined, &fd, e);
	}
	if (r <= 0) {
		if (it->quarantined)
			elog(en, WB_LOG_WARN,
			     "cache entry for '%s' was corrupt (sha256 %s); moved to '%s', fetching again",
			     it->art->name, sha, it->quarantined);
		goto out;
	}
	/* every pin, on the bytes of the entry chosen */
	digest_unhex(sha, raw256, 32);
	entry = cache_entry_path(en->c, sha);
	r = verify_pins(&it->art->verify, it->lock_sha256, entry, raw256,
			(dr.algs & DIGEST_SHA512) ? dr.sha512 : NULL, e);
	if (!r && reverify)
		r = ref_reverify(en, j, &kept, entry, fd, &dr, &ev, e);
	if (r < 0) {
		if (have_ref && (e->code == WB_EVERIFY || e->code == WB_EUSAGE)) {
			/* a ref is a hint, and this one was wrong: fetch again */
			elog(en, WB_LOG_WARN, "ignoring a cache ref: %s", e->msg);
			wb_err_clear(e);
			r = 0;
			goto out;
		}
		/* a pin names bytes that another pin refuses */
		if (it->lock_sha256 && e->code == WB_EVERIFY)
			wb_error_prefix(e, "the lock file pins sha256 %s, but", it->lock_sha256);
		goto out;
	}
	memcpy(it->sha256, sha, 65);
	it->size = dr.size;
	it->from_cache = 1;
	it->unverified_hit = !hash_now;
	free(it->path);
	it->path = entry;
	entry = NULL;
	it->fd = fd;
	it->has_fd = 1;
	{
		struct stat st;

		/* hashed here, and only winbuild's user could change it since
		 * (whoever has that user can change the tree as well) */
		it->hashed = hash_now && fstat(fd, &st) == 0 &&
			st.st_uid == geteuid() && !(st.st_mode & 0222) &&
			st.st_nlink == 1;
	}
	fd = -1;
	record_digests(it, &dr, j->needs.digest_algs);
	verify_evidence_release(&it->ev);
	it->ev = ev;
	memset(&ev, 0, sizeof(ev));
	it->ev.methods = j->needs.methods;
	free(it->url);
	it->url = xstrdup(have_ref && plan_url(it, ref.url) ? ref.url :
			  it->art->urls.nr ? it->art->urls.v[0] : "");
	r = 1;
out:
	if (fd >= 0)
		close(fd);
	free(entry);
	verify_evidence_release(&kept);
	verify_evidence_release(&ev);
	if (have_ref)
		cache_ref_release(&ref);
	return r;
miss:
	return 0;
}

/* ---- transfers -------------------------------------------------------- */

/* A sink has room again (called on one of its threads). */
static void wake_engine(void *multi)
{
	curl_multi_wakeup(multi);
}

static void tee_close(struct job *j, int bad)
{
	if (j->tee_fd >= 0)
		close(j->tee_fd);
	j->tee_fd = -1;
	j->tee_bad |= bad;
}

/* Start J's sink, with the tee when there is one. */
static int sink_begin(CURLM *multi, struct job *j)
{
	if (sink_start(&j->sink, j->fd, &j->dc, wake_engine, multi) < 0)
		return -1;
	if (j->tee_fd >= 0)
		sink_tee(&j->sink, j->tee_fd);
	return 0;
}

static void main_reset(struct job *j)
{
	int tee_ok = !j->sink.started || j->tee_fd < 0 || sink_tee_ok(&j->sink);
	int err = sink_stop(&j->sink);

	if (!tee_ok)
		tee_close(j, 1);

	if (err && !j->io_error)
		j->io_error = err;
	if (j->fd >= 0) {
		if (ftruncate(j->fd, 0) < 0 || lseek(j->fd, 0, SEEK_SET) < 0)
			j->io_error = errno;
	}
	if (j->tee_fd >= 0 && (err || ftruncate(j->tee_fd, 0) < 0 ||
			       lseek(j->tee_fd, 0, SEEK_SET) < 0))
		tee_close(j, 1);
	if (j->dc_live)
		digest_release(&j->dc);
	j->dc_live = 0;
	j->have = 0;
}

static int main_begin(struct engine *en, struct job *j, struct wb_err *e)
{
	if (!j->tmp_path && cache_tmp_create(en->c, &j->tmp_path, &j->fd, e) < 0)
		return -1;
	if (!j->tee_asked && en->o->tee_open) {
		/* asked once: after a failed tee, the caller copies the entry */
		j->tee_asked = 1;
		j->tee_fd = en->o->tee_open(en->o->ctx, j->it);
	}
	if (!j->dc_live) {
		memset(&j->dc, 0, sizeof(j->dc));
		if (digest_init(&j->dc, j->needs.digest_algs, e) < 0)
			return -1;
		j->dc_live = 1;
	}
	if (!j->sink.started && sink_begin(en->multi, j) < 0)
		return wb_error(e, WB_EIO, "cannot start a writer thread: %s",
				strerror(errno));
	return 0;
}

static void main_discard(struct job *j)
{
	main_reset(j);
	tee_close(j, 0);
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	if (j->tmp_path)
		unlink(j->tmp_path);
	free(j->tmp_path);
	j->tmp_path = NULL;
}

static unsigned long long target_cap(const struct job *j, size_t t)
{
	if (t == T_MAIN(j))
		return j->max_size;
	return slot_def(j, t).max;
}

static size_t on_write(char *data, size_t sz, size_t nmemb, void *ud)
{
	struct job *j = ud;
	int r;
	size_t n = sz * nmemb;
	long code = 0;

	curl_easy_getinfo(j->h, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 300)
		return n;   /* an error body: never part of the artifact */
	if (j->target != T_MAIN(j)) {
		if (j->text[j->target].len + n > target_cap(j, j->target)) {
			j->too_big = 1;
			return 0;
		}
		buf_add(&j->text[j->target], data, n);
		j->attempt_bytes += n;
		return n;
	}
	if (j->have > 0 && code == 200 && j->attempt_bytes == 0) {
		/* We asked for a range and got the whole body: start over. */
		struct wb_err e = WB_ERR_INIT;

		main_reset(j);
		memset(&j->dc, 0, sizeof(j->dc));
		if (digest_init(&j->dc, j->needs.digest_algs, &e) < 0) {
			j->io_error = EIO;
			return 0;
		}
		j->dc_live = 1;
		if (sink_begin(j->multi, j) < 0) {
			j->io_error = errno;
			return 0;
		}
	}
	if (j->have + n > target_cap(j, T_MAIN(j))) {
		j->too_big = 1;
		return 0;
	}
	/* written and hashed on the sink's thread; errors surface here or at
	 * the end of the transfer (transfer_done drains) */
	r = j->can_pause ? sink_offer(&j->sink, data, n) : sink_add(&j->sink, data, n);
	if (r < 0) {
		j->io_error = j->sink.err;
		return 0;
	}
	if (r > 0) {
		/* the ring is full: serve the other transfers meanwhile */
		j->paused = 1;
		return CURL_WRITEFUNC_PAUSE;
	}
	j->have += n;
	j->attempt_bytes += n;
	return n;
}

/*
 * What the user can do about a failed request, appended to its message
 * ("" when there is nothing to add): a TLS failure names the CA options,
 * 401/403 the credentials (a 404 names the version where it is reported).
 */
static const char *remedy(CURLcode rc, long code)
{
	switch (rc) {
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_ISSUER_ERROR:
		return " (TLS: if this server or a proxy uses its own CA, give its "
		       "certificate with --cacert FILE or SSL_CERT_FILE=FILE)";
	case CURLE_HTTP_RETURNED_ERROR:
		if (code == 401 || code == 403)
			return " (the server wants credentials winbuild does not send: "
			       "allow this host without them, or mirror the artifacts "
			       "where the build host can read them (winbuild mirror))";
		return "";
	default:
		return "";
	}
}

static int retryable(CURLcode rc, long code)
{
	if (rc == CURLE_HTTP_RETURNED_ERROR)
		return code >= 500 || code == 408 || code == 429;
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return 1;
	default:
		return 0;
	}
}

/* A server's URL for a message: at most 300 bytes, escaped (lib/text.h). */
static char *shown_url(const char *url)
{
	struct buf b = BUF_INIT;
	size_t n = strlen(url);

	text_add_printable(&b, url, n > 300 ? 300 : n);
	if (n > 300)
		buf_adds(&b, "...");
	return buf_detach(&b, NULL);
}

/* ---- transport policy on every hop ------------------------------------ */

/* URL's scheme, lowercased, in OUT; "" when it has none. */
static void url_scheme(const char *url, char out[16])
{
	size_t i = 0;

	for (; url[i] && url[i] != ':' && i < 15; i++)
		out[i] = (char)(url[i] >= 'A' && url[i] <= 'Z' ? url[i] - 'A' + 'a' : url[i]);
	out[url[i] == ':' ? i : 0] = '\0';
}

/*
 * Whether a redirect from FROM to TO breaks the transport policy: the
 * reason, or NULL when the hop is allowed. Every hop obeys what the URL
 * the plan named obeys: only http and https (never file, ftp, ...), no
 * http at all unless policy.allow_http, and never down from https to
 * http (the https in a recipe or mirror is a promise a server must not
 * take back).
 */
static const char *hop_refused(const struct trust_policy *policy, const char *from,
			       const char *to)
{
	char fs[16], ts[16];

	url_scheme(from, fs);
	url_scheme(to, ts);
	if (strcmp(ts, "https") && strcmp(ts, "http"))
		return "a redirect may lead only to http or https";
	if (!strcmp(ts, "http") && !verify_url_allowed(policy, to))
		return "plain http, and policy forbids it (policy.allow_http: false)";
	if (!strcmp(ts, "http") && strcmp(fs, "http"))
		return "a redirect from https never leads to plain http";
	return NULL;
}

/* The protocols libcurl may use for URL (and, were it to follow one, for
 * a redirect from it): the same rule as hop_refused, enforced twice. */
static const char *hop_protocols(const struct trust_policy *policy, const char *url)
{
	char sc[16];

	url_scheme(url, sc);
	if (!strcmp(sc, "file"))
		return "file";
	if (!strcmp(sc, "https") || !verify_url_allowed(policy, "http://"))
		return "https";
	return "http,https";
}

static void hop_reset(struct job *j)
{
	free(j->hop_url);
	j->hop_url = NULL;
	j->hops = 0;
}

/* What every request for URL on H obeys: the transport policy (no
 * redirect followed by libcurl: transfer_done, probe_sizes and
 * fetch_request follow them, one checked hop at a time), TLS verification,
 * the User-Agent. */
static void transport_setopts(CURL *h, const struct trust_policy *policy, const char *cacert,
			      const char *user_agent, long connect_timeout, const char *url)
{
	const char *protos = hop_protocols(policy, url);

	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 0L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, protos);
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, protos);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	if (cacert && *cacert)
		curl_easy_setopt(h, CURLOPT_CAINFO, cacert);
	curl_easy_setopt(h, CURLOPT_USERAGENT, user_agent);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, connect_timeout);
}

static void transport_opts(struct engine *en, CURL *h, const char *url, void *priv)
{
	transport_setopts(h, &en->plan->policy, en->o->cacert, en->user_agent,
			  en->connect_timeout, url);
	curl_easy_setopt(h, CURLOPT_PRIVATE, priv);
}

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
	char *shown = shown_url(url);

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
		transport_setopts(h, t->policy, t->cacert, ua, connect_timeout, cur);
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
		} else if (rc != CURLE_OK && retryable(rc, code) && ++tries < max_tries) {
			free(to);
			backoff_sleep(backoff_ms, tries);
			continue;
		} else if (rc != CURLE_OK) {
			request_error(e, WB_ENET, cur, errbuf[0] ? errbuf : curl_easy_strerror(rc));
		} else if (code >= 300 && code < 400) {
			if (no_redirect)
				request_error(e, WB_ENET, cur, "redirect refused (a Rekor API "
					      "answer is never a redirect)");
			else if (!to)
				request_error(e, WB_ENET, cur, "a redirect without a Location");
			else if ((why = hop_refused(t->policy, cur, to))) {
				char *shown = shown_url(to), msg[600];

				snprintf(msg, sizeof(msg), "redirects to '%s', which is refused: %s",
					 shown, why);
				free(shown);
				request_error(e, WB_EVERIFY, cur, msg);
			} else if (++hops > FETCH_MAX_REDIRS)
				request_error(e, WB_ENET, cur, "too many redirects");
			else {
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

static int start_transfer(struct engine *en, struct job *j, struct wb_err *e)
{
	const char *url = j->hop_url ? j->hop_url : j->urls[j->target].v[j->url_idx];
	char range[48];
	CURL *h;

	if (j->target == T_MAIN(j) && main_begin(en, j, e) < 0)
		return -1;
	if (j->target != T_MAIN(j))
		buf_reset(&j->text[j->target]);
	h = curl_easy_init();
	if (!h)
		return wb_error(e, WB_EIO, "cannot create a curl handle");
	j->h = h;
	j->multi = en->multi;
	j->paused = 0;
	j->can_pause = strncasecmp(url, "file:", 5) != 0;
	j->errbuf[0] = '\0';
	j->too_big = j->io_error = 0;
	j->attempt_bytes = 0;
	transport_opts(en, h, url, j);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, j);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, j->errbuf);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, en->low_speed_limit);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, en->low_speed_time);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, NULL);
	/* fewer, larger write callbacks: one write(2) and one digest update
	 * per 512 KiB instead of per 16 KiB */
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, FETCH_BUFFER_SIZE);
	if (j->target == T_MAIN(j)) {
		curl_off_t left = (curl_off_t)(en->max_size - j->have);
		curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, left);
		if (j->have > 0 && !strncasecmp(url, "http", 4)) {
			snprintf(range, sizeof(range), "%llu-", j->have);
			curl_easy_setopt(h, CURLOPT_RANGE, range);
		} else {
			main_reset(j);
			if (main_begin(en, j, e) < 0) {
				curl_easy_cleanup(h);
				j->h = NULL;
				return -1;
			}
		}
	} else {
		curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
				 (curl_off_t)target_cap(j, j->target));
	}
	if (curl_multi_add_handle(en->multi, h) != CURLM_OK) {
		curl_easy_cleanup(h);
		j->h = NULL;
		return wb_error(e, WB_EIO, "cannot add a curl transfer");
	}
	j->state = J_RUNNING;
	en->running++;
	return 0;
}

/* ---- job progression -------------------------------------------------- */

static void finish_job(struct engine *en, struct job *j, int code, const struct wb_err *err)
{
	struct fetch_item *it = j->it;

	if (code) {
		it->status = code;
		if (err && err != &it->err)
			it->err = *err;
		it->err.code = code;
	}
	main_discard(j);
	if (j->dc_live)
		digest_release(&j->dc);
	j->dc_live = 0;
	cache_dl_unlock(en->c, &j->dl);   /* after the ref is written */
	j->state = J_DONE;
	en->done++;
	if (en->o->on_done)
		en->o->on_done(en->o->ctx, it);
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
		main_reset(j);
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
				j->it->art->name, target_what(j, j->target));
		finish_job(en, j, code, &e2);
	} else {
		finish_job(en, j, code, why);
	}
}

/* The engine's transport, for a method's lookup (fetch_request). */
static int engine_request(void *ctx, const char *url, const char *post_json, size_t max,
			  int no_redirect, struct buf *out, long *status, struct wb_err *e)
{
	struct engine *en = ctx;
	struct fetch_transport t;

	t.policy = &en->plan->policy;
	t.cacert = en->o->cacert;
	return fetch_request(&t, url, post_json, max, no_redirect, out, status, e);
}

/*
 * The lookups after the download (trust_method.lookup: the Rekor search
 * by the artifact's SHA-256) of every requirement J checks that has a
 * lookup service and no URL for the file the lookup fills. The answer is
 * that file's text (its URL the service's); nothing found leaves it
 * unfetched, for the method to judge. Each base URL in turn, the next on a
 * network error. A blocking request sequence on the engine's thread: the
 * other transfers wait meanwhile (a lookup is a few small requests).
 */
static int lookups(struct engine *en, struct job *j, const struct digest_result *dr,
		   struct wb_err *e)
{
	const struct trust_spec *v = &j->it->art->verify;
	struct trust_http http = { engine_request, en };
	char hex[65];

	digest_hex(dr->sha256, 32, hex);
	for (size_t i = 0; i < v->nreqs; i++) {
		const struct trust_req *q = &v->reqs[i];
		size_t slot = trust_spec_slot(v, i) + q->method->lookup_aux;
		int r = -1;

		if (!(j->needs.reqs & (1ULL << i)) || !q->method->lookup || !q->lookup.nr ||
		    j->urls[slot].nr)
			continue;
		for (size_t u = 0; u < q->lookup.nr && r < 0; u++) {
			/* --offline: no network, so no lookup */
			if (en->o->offline) {
				wb_error(e, WB_ENET, "artifact '%s': '%s' is not asked "
					 "(--offline)", j->it->art->name, q->lookup.v[u]);
				continue;
			}
			wb_err_clear(e);
			buf_reset(&j->text[slot]);
			r = q->method->lookup(q, q->lookup.v[u], hex, &http, &j->text[slot], e);
			if (r == 0 && e->msg[0]) {
				/* a cap the lookup hit (rekor.h): reported, not an error */
				elog(en, WB_LOG_WARN, "artifact '%s': %s", j->it->art->name, e->msg);
				wb_err_clear(e);
			}
			if (r < 0 && e->code == WB_ENET && u + 1 < q->lookup.nr)
				elog(en, WB_LOG_WARN, "artifact '%s': %s; trying the next one",
				     j->it->art->name, e->msg);
			if (r == 0 && j->text[slot].len) {
				free(j->text_url[slot]);
				j->text_url[slot] = xstrdup(q->lookup.v[u]);
			}
			if (r < 0 && e->code != WB_ENET)
				break;
		}
		if (r == 0 && !j->text[slot].len && q->lookup.nr)
			/* the log answered and has nothing for these bytes: they
			 * are not what was signed (tampered, or never released);
			 * said first, before any word about the log */
			return wb_error(e, WB_EVERIFY, "artifact '%s': the bytes differ from what "
					"was signed: no transparency-log entry for sha256:%s in %s '%s'",
					j->it->art->name, hex, q->method->lookup_param,
					q->lookup.v[q->lookup.nr - 1]);
		if (r < 0) {
			wb_error_prefix(e, "artifact '%s': %s", j->it->art->name,
					trust_method_aux(q->method, q->method->lookup_aux).what);
			return -1;
		}
	}
	return 0;
}

static void fill_aux(const struct job *j, struct trust_aux *aux)
{
	for (size_t i = 0; i < j->nslots; i++) {
		aux[i].url = j->text_url[i];
		aux[i].text = j->text_url[i] ? j->text[i].ptr : NULL;
		aux[i].len = j->text[i].len;
	}
}

static void complete_main(struct engine *en, struct job *j, const char *url)
{
	struct fetch_item *it = j->it;
	struct digest_result dr;
	struct verify_input in;
	struct trust_aux *aux;
	struct wb_err e = WB_ERR_INIT;
	struct stat st;
	char data_path[64];
	int ret, teed;

	/* drained by transfer_done: the tee, if any, holds every byte */
	teed = j->tee_fd >= 0 && sink_tee_ok(&j->sink);
	sink_stop(&j->sink);
	digest_final(&j->dc, &dr);
	j->dc_live = 0;
	memset(&in, 0, sizeof(in));
	in.spec = &it->art->verify;
	in.policy = &en->plan->policy;
	in.needs = &j->needs;
	in.dr = &dr;
	in.url = url;
	/* a check that reads the bytes (a legacy signature) reads the inode
	 * that was written and hashed, not the temp file's name */
	snprintf(data_path, sizeof(data_path), "/proc/self/fd/%d", j->fd);
	in.data_path = data_path;
	in.lock_sha256 = it->lock_sha256;
	if (lookups(en, j, &dr, &e) < 0) {
		finish_job(en, j, e.code ? e.code : WB_EIO, &e);
		return;
	}
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
				finish_job(en, j, WB_EVERIFY, &e);
				return;
			}
			if (j->url_idx + 1 < j->urls[T_MAIN(j)].nr) {
				elog(en, WB_LOG_WARN, "%s; trying the next URL", e.msg);
				next_url(en, j, &e);
				return;
			}
		}
		finish_job(en, j, e.code ? e.code : WB_EIO, &e);
		return;
	}
	digest_hex(dr.sha256, 32, it->sha256);
	record_digests(it, &dr, j->needs.digest_algs);
	it->size = dr.size;
	it->teed = teed && fstat(j->tee_fd, &st) == 0 &&
		   (unsigned long long)st.st_size == dr.size;
	tee_close(j, 0);
	free(it->url);
	it->url = xstrdup(url);
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
		ret = write_ref(en, it, &e);
	} else {
		close(j->fd);
	}
	j->fd = -1;
	finish_job(en, j, ret ? e.code : 0, ret ? &e : NULL);
}

/* Whether H's transfer ended on the scheme of URL (the one requested):
 * libcurl normalises the rest (dot segments, case). */
static int same_scheme(CURL *h, const char *url)
{
	char *eff = NULL, a[16], b[16];

	curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &eff);
	if (!eff)
		return 0;
	url_scheme(eff, a);
	url_scheme(url, b);
	return !strcmp(a, b);
}

/*
 * The current transfer (of URL, the plan's) answered with a redirect:
 * check the hop against the transport policy and follow it as a new
 * transfer, or refuse it (WB_EVERIFY: nothing from that URL is used; the
 * next URL is tried). Cleans up H.
 */
static void follow_redirect(struct engine *en, struct job *j, CURL *h, const char *url,
			    long code)
{
	const char *from = j->hop_url ? j->hop_url : url, *why;
	struct wb_err e = WB_ERR_INIT;
	char *to = NULL, *shown;

	curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &to);
	if (!to) {
		wb_error(&e, WB_ENET, "artifact '%s': %s '%s': HTTP %ld without a Location",
			 j->it->art->name, target_what(j, j->target), url, code);
		curl_easy_cleanup(h);
		next_url(en, j, &e);
		return;
	}
	shown = shown_url(to);
	why = hop_refused(&en->plan->policy, from, to);
	if (why || j->hops >= FETCH_MAX_REDIRS) {
		if (why)
			wb_error(&e, WB_EVERIFY,
				 "artifact '%s': %s '%s' redirects to '%s', which is refused: %s",
				 j->it->art->name, target_what(j, j->target), url, shown, why);
		else
			wb_error(&e, WB_ENET,
				 "artifact '%s': %s '%s': more than %d redirects (the last to '%s')",
				 j->it->art->name, target_what(j, j->target), url,
				 FETCH_MAX_REDIRS, shown);
		if (why)
			note_verify_failure(j, &e);
		if (j->url_idx + 1 < j->urls[j->target].nr)
			elog(en, WB_LOG_WARN, "%s; trying the next URL", e.msg);
		free(shown);
		curl_easy_cleanup(h);
		next_url(en, j, &e);
		return;
	}
	elog(en, WB_LOG_INFO, "artifact '%s': '%s' redirects to '%s'", j->it->art->name,
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

static void transfer_done(struct engine *en, CURL *h, CURLcode rc)
{
	struct job *j;
	struct wb_err e = WB_ERR_INIT;
	const char *url;
	char *priv = NULL;
	long code = 0;

	curl_easy_getinfo(h, CURLINFO_PRIVATE, &priv);
	j = (struct job *)priv;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_multi_remove_handle(en->multi, h);
	en->running--;
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
			 target_what(j, j->target), url);
		j->saw_verify_failure = 1;
		curl_easy_cleanup(h);
		next_url(en, j, &e);
		return;
	}
	if (rc == CURLE_OK && (code == 0 || (code >= 200 && code < 300)) &&
	    !j->io_error) {
		curl_easy_cleanup(h);
		if (j->target == T_MAIN(j)) {
			complete_main(en, j, url);
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
		finish_job(en, j, WB_EIO, &e);
		return;
	}
	if (j->too_big || rc == CURLE_FILESIZE_EXCEEDED) {
		wb_error(&e, WB_ENET, "artifact '%s': %s '%s' is larger than the limit of %llu bytes",
			 j->it->art->name, target_what(j, j->target), url,
			 target_cap(j, j->target));
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
			 target_what(j, j->target), url, code, j->it->art->version,
			 j->it->art->component);
	} else if (rc == CURLE_HTTP_RETURNED_ERROR && (code == 404 || code == 410))
		wb_error(&e, WB_ENET, "artifact '%s': %s '%s': HTTP %ld (no such file: is "
			 "version '%s' of %s right? 'winbuild plan --explain' shows where "
			 "it was set)", j->it->art->name, target_what(j, j->target), url, code,
			 j->it->art->version, j->it->art->component);
	else if (rc == CURLE_HTTP_RETURNED_ERROR)
		wb_error(&e, WB_ENET, "artifact '%s': %s '%s': HTTP %ld%s", j->it->art->name,
			 target_what(j, j->target), url, code, remedy(rc, code));
	else
		wb_error(&e, WB_ENET, "artifact '%s': %s '%s': %s%s", j->it->art->name,
			 target_what(j, j->target), url,
			 j->errbuf[0] ? j->errbuf : curl_easy_strerror(rc), remedy(rc, code));
	if (j->target == T_MAIN(j) && code == 416)
		main_reset(j);   /* our range was bad: start over next time */

	if (!retryable(rc, code)) {
		next_url(en, j, &e);
		return;
	}
	if (j->target == T_MAIN(j) && j->attempt_bytes > 0 && j->resumes < 8 &&
	    rc != CURLE_OPERATION_TIMEDOUT && !strncasecmp(url, "http", 4)) {
		/* Progress was made: resume at once, without spending a try.
		 * Not after a stall (low-speed timeout): a server that trickles
		 * a few bytes per attempt must not buy itself 8 free rounds. */
		j->resumes++;
		elog(en, WB_LOG_INFO, "%s; resuming at byte %llu", e.msg, j->have);
		j->state = J_WAIT;
		j->not_before = 0;
		return;
	}
	if (++j->tries >= en->max_tries) {
		next_url(en, j, &e);
		return;
	}
	j->not_before = now_s() + (double)(en->backoff_ms << (j->tries - 1)) / 1000.0;
	elog(en, WB_LOG_INFO, "%s; retrying (%d of %d)", e.msg, j->tries + 1, en->max_tries);
	j->state = J_WAIT;
}

/* ---- progress --------------------------------------------------------- */

static void report_progress(struct engine *en, int force)
{
	struct fetch_xfer_progress *xs;
	struct fetch_progress p;
	double t = now_s();
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
			elog(en, WB_LOG_WARN,
			     "artifact '%s': skipping '%s' (policy.allow_http: false)",
			     j->it->art->name, from->v[i]);
	}
}

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
			 !(slot_def(j, t).flags & TRUST_AUX_OPTIONAL));

		if (wanted && !j->urls[t].nr && en->o->offline) {
			j->offline_blocked = 1;
			break;
		}
		if (wanted && !j->urls[t].nr)
			return wb_error(e, a->urls.nr || t != T_MAIN(j) ? WB_EVERIFY : WB_EUSAGE,
					"artifact '%s': no URL for its %s is allowed%s",
					a->name, target_what(j, t),
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
	cache_dl_unlock(c, &j->dl);
	main_discard(j);
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

/* ---- sizes up front, for the progress totals ------------------------- */

#define PROBE_SECONDS 5

struct probe {
	struct job *j;
	CURL *h;
	char *url;                     /* the current hop */
	int hops;
};

static CURL *probe_start(struct engine *en, CURLM *m, struct probe *p)
{
	CURL *h = curl_easy_init();

	if (!h)
		return NULL;
	transport_opts(en, h, p->url, p);
	curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, (long)PROBE_SECONDS);
	if (curl_multi_add_handle(m, h) != CURLM_OK) {
		curl_easy_cleanup(h);
		return NULL;
	}
	return h;
}

/* A HEAD answered: its Content-Length, or the next hop of a redirect the
 * transport policy allows. 1 while the probe goes on. */
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
	if (rc == CURLE_OK && code >= 300 && code < 400 && to &&
	    p->hops < FETCH_MAX_REDIRS && !hop_refused(&en->plan->policy, p->url, to)) {
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
 */
static void probe_sizes(struct engine *en)
{
	struct probe *pv = xcalloc(en->njobs + 1, sizeof(*pv));
	CURLM *m = curl_multi_init();
	double deadline = now_s() + PROBE_SECONDS;
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
	while (live && now_s() < deadline &&
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
		free(pv[i].url);
	}
	if (m)
		curl_multi_cleanup(m);
	free(pv);
}

/* ---- one download per artifact across processes ---------------------- */

/* What names the bytes of IT, for its download lock: its pinned SHA-256
 * (recipe or lock file) when it has one, so runs that reach the same bytes
 * through other URLs (a mirror, upstream) share one download; else the ref
 * spec, the exact question whose answer the downloading run writes into
 * refs/ (the URL list alone would make a run wait for bytes its own
 * verification then does not find in a ref). */
static void dl_lock_key(const struct engine *en, const struct fetch_item *it,
			char key[65])
{
	const char *pin = verify_pinned_sha256(&it->art->verify, it->lock_sha256);
	char *spec;

	if (pin) {
		spec = xasprintf("winbuild-download 1\nsha256 %s\n", pin);
		for (char *p = spec; *p; p++)
			if (*p >= 'A' && *p <= 'F')
				*p = (char)(*p - 'A' + 'a');
	} else {
		spec = fetch_ref_spec(en->plan, it);
	}
	cache_ref_key(spec, key);
	free(spec);
}

/*
 * Before J's artifact transfer: take its download lock. 0: go ahead (held,
 * or given up on). 1: the job does not start now: another process holds
 * the lock (J polls again in 100 ms, shown as waiting in the progress), or
 * J finished, because once the lock was free the cache held its bytes.
 * After WINBUILD_LOCK_TIMEOUT seconds of waiting J downloads anyway: a
 * hung winbuild must not stop this one, and two downloads of the same
 * bytes are safe (cache_insert keeps the first).
 */
static int dl_lock(struct engine *en, struct job *j)
{
	struct wb_err e = WB_ERR_INIT;
	double t = now_s();
	char key[65], *quarantined;
	int r;

	if (j->dl_state == DL_HELD || j->dl_state == DL_SKIP)
		return 0;
	dl_lock_key(en, j->it, key);
	r = cache_dl_trylock(en->c, &j->dl, key, &j->dl_holder, &e);
	if (r < 0) {
		elog(en, WB_LOG_WARN, "artifact '%s': %s; downloading without it",
		     j->it->art->name, e.msg);
		cache_dl_unlock(en->c, &j->dl);
		j->dl_state = DL_SKIP;
		return 0;
	}
	if (r == 0) {
		if (j->dl_state != DL_WAITING) {
			j->dl_state = DL_WAITING;
			j->dl_since = t;
			if (j->dl_holder == (long)getpid())   /* two artifacts, one pin */
				elog(en, WB_LOG_INFO, "artifact '%s': waiting for another "
				     "artifact of this run with the same bytes", j->it->art->name);
			else
				elog(en, WB_LOG_INFO, "artifact '%s': waiting for another "
				     "winbuild (pid %ld) that is downloading it",
				     j->it->art->name, j->dl_holder);
		}
		if (t - j->dl_since < (double)en->lock_timeout) {
			j->not_before = t + 0.1;
			return 1;
		}
		elog(en, WB_LOG_WARN, "artifact '%s': still locked by another winbuild "
		     "(pid %ld) after %ld s (WINBUILD_LOCK_TIMEOUT); downloading it too",
		     j->it->art->name, j->dl_holder, en->lock_timeout);
		cache_dl_unlock(en->c, &j->dl);
		j->dl_state = DL_SKIP;
		return 0;
	}
	j->dl_state = DL_HELD;
	/* Whoever held the lock may have cached the bytes since try_cache
	 * looked (also when it let go just before we tried): use them, through
	 * the same checks as any cache hit. The first look's quarantine report
	 * is kept (a second one was logged). */
	quarantined = j->it->quarantined;
	j->it->quarantined = NULL;
	r = try_cache(en, j, &j->it->err);
	if (quarantined) {
		free(j->it->quarantined);
		j->it->quarantined = quarantined;
	}
	if (r < 0)
		finish_job(en, j, j->it->err.code ? j->it->err.code : WB_EIO, &j->it->err);
	else if (r > 0)
		finish_job(en, j, 0, NULL);
	return r != 0;
}

/* A job that may start a transfer at time T (its backoff is over). */
static int startable(const struct engine *en, double t)
{
	if (en->running >= en->o->jobs)
		return 0;
	for (size_t i = 0; i < en->njobs; i++)
		if (en->jobs[i].state == J_WAIT && en->jobs[i].not_before <= t)
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

static int run_engine(struct engine *en, struct wb_err *e)
{
	int ret = 0;

	while (en->done < en->njobs) {
		double t = now_s(), wait = 0.2;
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
			if (j->state != J_WAIT)
				continue;
			if (j->not_before > t) {
				if (j->not_before - t < wait)
					wait = j->not_before - t;
				continue;
			}
			if (j->target == T_MAIN(j) && dl_lock(en, j))
				continue;
			if (start_transfer(en, j, &j->it->err) < 0)
				finish_job(en, j, j->it->err.code ? j->it->err.code : WB_EIO,
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
		if (startable(en, now_s()))
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
	en.t0 = now_s();
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
			finish_job(&en, j, it->err.code, &it->err);
			continue;
		}
		r = try_cache(&en, j, &it->err);
		if (r < 0) {
			finish_job(&en, j, it->err.code ? it->err.code : WB_EIO, &it->err);
		} else if (r > 0) {
			finish_job(&en, j, 0, NULL);
		} else if (o->offline && j->offline_blocked) {
			wb_error(&it->err, WB_ENET, "artifact '%s' is not in the cache (--offline)",
				 it->art->name);
			finish_job(&en, j, WB_ENET, &it->err);
			buf_addf(&missing, "\n  %s (%s)", it->art->name,
				 it->art->urls.nr ? it->art->urls.v[0] : it->art->upstream_url);
			nmissing++;
		}
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
	for (size_t i = 0; i < n; i++)
		job_release(c, &en.jobs[i]);
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
