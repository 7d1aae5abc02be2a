/*
 * The fetch engine's private state, shared by the files of builder/fetch/
 * that make up fetch_all() (fetch.h); nothing outside builder/fetch/
 * includes this. One struct engine per fetch_all() call, one struct job per
 * artifact. Who does what:
 *   engine.c    the engine: setup, job progression (a target's end, the
 *               next URL, the checks after a download), progress, the
 *               run loop and fetch_all()
 *   transfer.c  one transfer of the engine: its curl handle, the write
 *               callback and the sink, what a failure means (remedy, retry)
 *   hop.c       the transport policy on every request and every redirect hop
 *   lookup.c    a method's lookup after a download (the Rekor search) as
 *               transfers of the multi handle, beside the downloads
 *   request.c   one JSON request: its options and what its end means
 *               (lookup.c's transfers; fetch_request outside the engine);
 *               request_run, the one blocking loop (fetch_request's and
 *               the registry client's, registry_http.c)
 *   refs.c      the cache refs and cache hits (refs_try_cache)
 *   probe.c     sizes up front for the progress totals (HEAD)
 *   dlock.c     one download per artifact across processes
 *
 * @where downloads: libcurl multi, `-j N`, retries, Range resume, size caps,
 *   TLS -- the private state shared by the fetch files, and which file does
 *   what
 */
#ifndef WB_FETCH_ENGINE_H
#define WB_FETCH_ENGINE_H

#include <curl/curl.h>

#include "fetch/creds.h"
#include "fetch/fetch.h"
#include "fetch/sink.h"
#include "trust/sigstore_root.h"
#include "lib/buf.h"

#define FETCH_BUFFER_SIZE (512L * 1024)
#define FETCH_MAX_REDIRS 10

enum job_state {
	J_WAIT,      /* ready to start (or waiting for its backoff) */
	J_RUNNING,   /* a transfer is in the multi handle */
	J_LOOKUP,    /* downloaded and hashed; its lookups' transfers are in
		      * the multi handle (lookup.c), then engine_verify */
	J_DONE,
};

/* What a transfer's CURLOPT_PRIVATE points at: the first member of a
 * struct job (a download or an auxiliary file) or of a lookup's request
 * (lookup.c), so transfer_done knows which ended. */
struct xfer_tag {
	enum { XT_JOB, XT_LOOKUP } kind;
};

struct job_lookup;

struct job {
	struct xfer_tag tag;           /* XT_JOB (first member) */
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
	const struct creds_entry *sent;  /* the credential the current request
					  * carries (hop_creds), or NULL */
	const struct creds_entry *held;  /* one for the plan's URL that the
					  * current request does not carry
					  * (another host: a hop, a mirror) */
	struct curl_slist *hdr;        /* the current request's extra headers */
	int tries;                     /* failed attempts on this URL */
	int resumes;                   /* resumed attempts (progress made) */
	double not_before;             /* backoff: monotonic seconds */
	int saw_verify_failure;
	struct wb_err first_verify;    /* the first verification failure */
	int offline_blocked;           /* --offline: a needed file has no
					* file:// URL, so only the cache can help */
	int cache_refused;             /* a cache ref named an entry whose
					* kept evidence failed this run's
					* checks (refs_try_cache) */
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
	struct digest_result dr;       /* the artifact's digests, once hashed */
	int teed;                      /* the tee holds every byte */
	struct job_lookup *lookup;     /* its lookups (lookup.c), or NULL */
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
static inline const struct trust_req *slot_req(const struct job *j, size_t t)
{
	return &j->it->art->verify.reqs[j->slot_req[t]];
}

static inline struct trust_aux_def slot_def(const struct job *j, size_t t)
{
	return trust_method_aux(slot_req(j, t)->method, j->slot_k[t]);
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
	struct sigstore_roots roots;   /* each trusted root parsed once */
	struct creds creds;            /* credentials per host (fetch/creds.h) */
	char user_agent[64];
};

/* engine.c */
/* Monotonic seconds. */
double engine_now(void);
/* A message to opts->log (when there is one) at LEVEL (lib/log.h). */
void engine_log(struct engine *en, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* What file target T of J is, for messages ("artifact", "checksum file"...). */
const char *job_target_what(const struct job *j, size_t t);
/* The checks after J's download and lookups: the verdict, then the cache
 * entry, the ref and engine_finish_job (or the next URL). */
void engine_verify(struct engine *en, struct job *j);
/* J is done: CODE 0 (verified and cached) or its class, with ERR; calls
 * opts->on_done. */
void engine_finish_job(struct engine *en, struct job *j, int code, const struct wb_err *err);

/* refs.c */
/* 1 on a verified cache hit (J's item filled), 0 on a miss, -1 on error. */
int refs_try_cache(struct engine *en, struct job *j, struct wb_err *e);
/* Store IT's cache ref (refs/<key>) after a verified download. */
int refs_write(struct engine *en, struct fetch_item *it, struct wb_err *e);
/* IT's SHA-512 and BLAKE2b-512 from DR, those of WANT only. */
void refs_record_digests(struct fetch_item *it, const struct digest_result *dr,
			 unsigned want);

/* transfer.c */
/* Start J's transfer of its current target and URL (or hop) on the multi. */
int xfer_start(struct engine *en, struct job *j, struct wb_err *e);
/* The artifact target's temp file, digests and tee back to empty. */
void xfer_main_reset(struct job *j);
/* ... and the temp file removed, the tee closed. */
void xfer_main_discard(struct job *j);
void xfer_tee_close(struct job *j, int bad);
/* The size cap of target T of J. */
unsigned long long xfer_target_cap(const struct job *j, size_t t);
/* What the user can do about a failed request ("" when nothing). */
const char *xfer_remedy(CURLcode rc);
/* What a 401/403 for URL (J's current request) means, into OUT: which
 * credential was sent and from where, or why none was, and what to do;
 * never the secret. */
void xfer_auth_hint(const struct job *j, const char *url, char *out, size_t n);
/* Whether a request that ended so is worth another try. */
int xfer_retryable(CURLcode rc, long code);
/* A server's URL for a message: at most 300 bytes, escaped. New string. */
char *xfer_shown_url(const char *url);

/* request.c: one JSON request (the Rekor API) */
struct request_conf {
	const struct trust_policy *policy;
	const char *cacert;
	const char *user_agent;
	int max_tries;                 /* WINBUILD_RETRIES */
	long connect_timeout, low_speed_time, low_speed_limit;
};
/* The answer of a request, capped at MAX bytes. */
struct request_answer {
	struct buf *b;
	size_t max;
	int too_big;
};
/* How a request for URL ended. */
struct request_end {
	CURLcode rc;
	long code;                     /* HTTP status */
	const char *url, *to;          /* asked; its Location, or NULL */
	int too_big;
	size_t max;
	const char *errbuf;
};
enum request_next {
	REQ_OK,        /* answered: 200 or 404 (the caller's to judge) */
	REQ_RETRY,     /* again after request_backoff_ms(*TRIES) */
	REQ_FOLLOW,    /* the redirect to END->to: ask it next, one hop more */
	REQ_FAILED,    /* E says why, naming the URL */
};
/* Set H up to ask URL (POST_JSON, or a GET) under C, into A; the header
 * list is the caller's to free once the transfer is over. */
struct curl_slist *request_setopts(CURL *h, const struct request_conf *c, const char *url,
				   const char *post_json, struct request_answer *a,
				   char *errbuf);
/* What END means: retries (*TRIES counts them; reset on a hop), the hop
 * policy (hop_judge; NO_REDIRECT: a redirect is refused), the size cap,
 * the statuses; fetch_request and the engine's lookups alike. */
enum request_next request_judge(const struct request_conf *c, const struct request_end *end,
				int no_redirect, int hops, int *tries, struct wb_err *e);
/* The wait before try TRIES + 1: BASE_MS doubled per failed try, at most a
 * minute. */
long request_backoff_ms(long base_ms, int tries);

/* What one client of request_run() does beside the loop. */
struct request_hooks {
	/* set H up to ask URL this try (hop_transport_setopts, its headers in
	 * *HDR, freed after the try; the answer's sink; ERRBUF as the error
	 * buffer): 0, or -1 with E */
	int (*setup)(CURL *h, const char *url, char *errbuf, struct curl_slist **hdr,
		     void *ud, struct wb_err *e);
	/* the try ended; END is filled but for too_big and max, which this
	 * sets: 1 to ask URL again at once (a token was fetched for it), 0 to
	 * judge END, -1 failed (E) */
	int (*ended)(struct request_end *end, void *ud, struct wb_err *e);
	void *ud;
};
/*
 * The one blocking request loop (fetch_request's and the registry
 * client's): ask URL, and every hop and retry request_judge() calls for
 * (BACKOFF_MS between tries; NO_REDIRECT as request_judge's). 0 when
 * answered (200 or 404: *STATUS; *FINAL, when not NULL, the URL that
 * answered, a new string), or -1 with E.
 */
int request_run(const struct request_conf *c, long backoff_ms, const char *url,
		int no_redirect, const struct request_hooks *hk, long *status, char **final,
		struct wb_err *e);

/* lookup.c */
/* Start J's lookups after its download (J->dr): 0 they are in flight (J is
 * J_LOOKUP; engine_verify or engine_finish_job follows from lookup_done),
 * 1 none to make, -1 failed (E). */
int lookup_begin(struct engine *en, struct job *j, struct wb_err *e);
/* Start J's lookup requests that may start at time T; *WAIT shortened to
 * the next backoff's end. */
void lookup_start(struct engine *en, struct job *j, double t, double *wait);
/* Whether J has a lookup request that may start at time T. */
int lookup_startable(const struct job *j, double t);
/* The lookup request TAG's transfer on H ended with RC (removed from the
 * multi handle already). */
void lookup_done(struct engine *en, struct xfer_tag *tag, CURL *h, CURLcode rc);
/* Free J's lookups (their transfers too). */
void lookup_release(struct job *j);

/* hop.c (a URL's scheme: wb_url_scheme, lib/url.h, libcurl's own reading) */
/*
 * The hop policy: what a client does with a redirect (an HTTP 3xx) from
 * FROM (the URL just requested: the plan's, or the last hop) whose
 * Location is TO (NULL: none), after HOPS redirects followed from the
 * plan's URL. libcurl never follows one itself (hop_transport_setopts).
 * Every client that follows redirects asks this, and words the refusal
 * for its own context: the engine's transfers (follow_redirect in
 * engine.c), a request outside the engine (fetch_request), the size
 * probe (probe.c, which only stops).
 *   HOP_NEVER        NO_REDIRECT: the answer is never a redirect (the
 *                    Rekor API); WB_ENET
 *   HOP_NO_LOCATION  a 3xx without a Location; WB_ENET
 *   HOP_REFUSED      the transport policy forbids the hop (hop_refused;
 *                    *WHY, when WHY is not NULL, says why); WB_EVERIFY:
 *                    nothing from that URL is used
 *   HOP_TOO_MANY     FETCH_MAX_REDIRS followed already; WB_ENET
 *   HOP_FOLLOW       request TO next (and count the hop)
 */
enum hop_verdict {
	HOP_FOLLOW,
	HOP_NEVER,
	HOP_NO_LOCATION,
	HOP_REFUSED,
	HOP_TOO_MANY,
};
enum hop_verdict hop_judge(const struct trust_policy *policy, int no_redirect,
			   const char *from, const char *to, int hops, const char **why);
/*
 * The credential a request for URL carries, when the plan named PLAN_URL
 * (URL: PLAN_URL itself, or a redirect hop from it): the one creds_for()
 * finds for PLAN_URL (NAME: the artifact's `credential:`), and only when
 * URL's scheme, host and port are the credential's. A hop to another
 * host, or a mirror on another host, never carries it (*HELD says which
 * was held back, for the 401 message). Sets it on H and returns the URL
 * to request (a new string: URL, or URL with a query credential).
 */
char *hop_creds(const struct creds *c, CURL *h, const char *plan_url, const char *url,
		const char *name, const struct creds_entry **sent,
		const struct creds_entry **held, struct curl_slist **hdr);
/* J's current URL back to the plan's (no hop followed). */
void hop_reset(struct job *j);
/* The transport policy, TLS and User-Agent of a request for URL on H. */
void hop_transport_setopts(CURL *h, const struct trust_policy *policy, const char *cacert,
			   const char *user_agent, long connect_timeout, const char *url);
/* hop_transport_setopts with the engine's settings, PRIV as CURLOPT_PRIVATE. */
void hop_transport_opts(struct engine *en, CURL *h, const char *url, void *priv);

/* probe.c */
/* HEAD the artifacts whose size is unknown, for the progress totals. */
void probe_sizes(struct engine *en);

/* dlock.c */
/* Take J's download lock before its artifact transfer: 0 go ahead, 1 not now. */
int dl_lock(struct engine *en, struct job *j);

#endif
