/*
 * Fetch every artifact of a plan into the cache, verified.
 *
 * libcurl multi interface, at most OPTS->jobs transfers at once. Per
 * artifact: a cache hit (the entry its pinned/locked SHA-256 names, else
 * the one its ref names; every pin checked by verify_pins, every kept
 * signature checked again) makes no request; otherwise each requirement's
 * auxiliary file (checksum file, signature, bundle: trust/method.h) is
 * fetched first (small, capped by its method), then the artifact itself,
 * each through the plan's URL try order. The digests verification needs are
 * computed in the write callback (one pass); the bytes go to a temp file in
 * the cache, are verified (trust/verify.h) and only then renamed into
 * place.
 *
 * Network behaviour: retries with exponential backoff on 5xx and
 * connection errors (WINBUILD_RETRIES tries per URL, default 3; backoff
 * base WINBUILD_RETRY_BACKOFF_MS, default 1000), the next URL on 4xx or
 * when the tries are used up; an interrupted body is resumed with a Range
 * request, the digest contexts carry on over the bytes already written;
 * connect timeout WINBUILD_CONNECT_TIMEOUT (s, default 30); low-speed abort
 * below 1 byte/s for WINBUILD_LOW_SPEED_TIME (s, default 60); at most 10
 * redirects, followed here one checked hop at a time (only http/https, no
 * http without policy.allow_http, never https to http; a refused hop is
 * WB_EVERIFY); TLS verification always on; User-Agent
 * winbuild/VERSION; proxies from the environment (libcurl's default); a
 * maximum size per artifact (WINBUILD_MAX_SIZE bytes, default 2 GiB).
 *
 * One download per artifact across processes: before the artifact's own
 * transfer (not its checksum and signature files) a job takes the
 * artifact's download lock in the cache (cache_dl_trylock; keyed by the
 * pinned SHA-256, else the ref spec). While another process holds it, the
 * job waits (polled, other jobs go on; shown in the progress as waiting),
 * then looks in the cache again, so it uses the bytes the other process
 * verified and cached, through the normal cache-hit checks (pins, kept
 * signatures). After WINBUILD_LOCK_TIMEOUT seconds (default 900; 0: never
 * wait) it downloads the artifact itself. A holder that dies loses the lock
 * with its process.
 *
 * Nothing here prints: progress and results go through the callbacks.
 */
#ifndef WB_FETCH_H
#define WB_FETCH_H

#include <signal.h>
#include <stddef.h>

#include "fetch/cache.h"
#include "lib/err.h"
#include "lib/log.h"
#include "recipe/plan.h"
#include "trust/verify.h"

struct fetch_item {
	/* in */
	const struct plan_artifact *art;
	const char *lock_sha256;   /* pin from the lock file, or NULL */
	unsigned long long expect_size;   /* its size if known beforehand (the
					   * lock file), for progress; 0 unknown */

	/* out */
	int status;                /* 0 verified and cached, else enum wb_exit */
	struct wb_err err;
	int from_cache;            /* no request was made */
	int unverified_hit;        /* from_cache with opts->defer_rehash: the
				    * entry was not re-hashed; the caller must
				    * hash what it reads (and quarantine on a
				    * mismatch) */
	char sha256[65];
	char sha512[129];          /* when a pin or method checked SHA-512:
				      from the download's pass or the ref;
				      else "" */
	char blake2b512[129];      /* the same for BLAKE2b-512 (minisign) */
	unsigned long long size;
	int teed;                  /* downloaded in this run, and every byte of
				    * it also went to the file opts->tee_open
				    * gave, in order (its size checked) */
	char *url;                 /* the plan URL the bytes came from */
	char *path;                /* the cache entry (for messages) */
	int hashed;                /* HAS_FD, and every byte of FD was hashed
				    * by this run and matched: a download, or
				    * a hit re-hashed here whose file is
				    * winbuild's user's own and read-only (a
				    * cache writer of another user cannot
				    * change it); the caller need not hash
				    * it again */
	int fd, has_fd;            /* when HAS_FD: FD is open on the very file
				    * that was verified (the download's inode,
				    * hashed as written; or the entry as it was
				    * hashed or opened for a hit). A consumer
				    * reads the bytes from it, never by PATH,
				    * which a cache writer may have swapped
				    * since. fetch_item_release closes it */
	struct verify_evidence ev; /* what verified the bytes in this run (on
				    * a hit: re-verified from the files the
				    * ref kept, never the ref's own record) */
	char *quarantined;         /* a corrupt entry was moved here (reported) */
};

struct fetch_xfer_progress {
	const char *name;          /* artifact */
	unsigned long long now, total;   /* total 0 when unknown */
	int waiting;               /* not started: another process holds its
				    * download lock (pid HOLDER, 0 unknown) */
	long holder;
};

struct fetch_progress {
	const struct fetch_xfer_progress *xfers;   /* active transfers */
	size_t nxfers;
	size_t items_done, items_total;
	unsigned long long bytes_now;    /* body bytes received in this run */
	unsigned long long bytes_total;  /* known sizes of the artifacts this run
					  * downloads (expect_size before a
					  * transfer starts, then its length) */
	double elapsed;                  /* seconds since fetch_all started */
};

struct fetch_opts {
	int jobs;                  /* parallel transfers, >= 1 */
	int offline;               /* cache only; misses are errors */
	int accept_new;            /* lock --accept-new: needs_pin may be pinned */
	const char *cacert;        /* CA bundle, or NULL for the system's */
	const char *credentials;   /* --credentials, --netrc-file, or NULL: */
	const char *netrc_file;    /* the defaults (fetch/creds.h) */
	struct wb_log *log;        /* warnings (quarantine, retries); may be NULL */
	/* A cache hit through a ref is checked by size only, not re-hashed:
	 * for a caller that hashes every byte it reads anyway (stage), so each
	 * byte is hashed once. Hits trusted by a pin alone are still hashed. */
	int defer_rehash;
	/* HEAD the artifacts to download whose size is not known beforehand
	 * (expect_size), so the progress has totals from the start: worth a
	 * request only when progress is shown. */
	int probe_sizes;
	/* Called about five times a second while transfers run. */
	void (*on_progress)(void *ctx, const struct fetch_progress *p);
	/* When not NULL, called once per item as its download begins: a file
	 * descriptor, open for writing at offset 0, that gets a second copy
	 * of the bytes as they are written to the cache (item->teed tells
	 * whether it holds them all), or -1 for none. The caller owns the
	 * file; fetch closes the descriptor before on_done. A failed write
	 * to it only ends the copy, never the download. I is the item's
	 * index in fetch_all's ITEMS, so a caller routes it without a
	 * search (the image matrix: one item, several images). */
	int (*tee_open)(void *ctx, size_t i, const struct fetch_item *it);
	/* Called once per item when it is done (ok or not); I as above. */
	void (*on_done)(void *ctx, size_t i, const struct fetch_item *it);
	void *ctx;
	/* Set (to nonzero) from a signal handler to stop: transfers are
	 * abandoned, temp files removed, fetch_all returns -1 with WB_EINTR.
	 * May be NULL. */
	volatile sig_atomic_t *interrupted;
};

/*
 * Fetch ITEMS (N of them, ITEMS[i].art set) of PLAN into the open cache C.
 * Every item gets a status; returns 0 when all are ok, else -1 with E
 * summarising (its code is the most severe item class: 1 before 2 before 3
 * before 5). With OPTS->offline every missing artifact is named in one
 * WB_ENET error.
 */
int fetch_all(const struct plan *plan, struct fetch_item *items, size_t n,
	      struct cache *c, const struct fetch_opts *opts, struct wb_err *e);

void fetch_item_release(struct fetch_item *it);

/* The transport of one request outside the engine: POLICY (allow_http on
 * every hop) and the CA bundle (NULL: the system's). */
struct fetch_transport {
	const struct trust_policy *policy;
	const char *cacert;
};

/*
 * One request through the engine's transport (TLS verification and
 * CACERT, proxies from the environment, WINBUILD_CONNECT_TIMEOUT and the
 * low-speed abort, WINBUILD_RETRIES with backoff on connection errors and
 * 5xx, the User-Agent): GET URL, or POST the JSON POST_JSON. Redirects
 * are followed one hop at a time under the transport policy
 * (hop_refused: a refused hop is WB_EVERIFY), or refused when NO_REDIRECT
 * (WB_ENET). The answer, at most MAX bytes, in OUT; the status in
 * *STATUS. 200 and 404 are answers (the caller judges a 404); anything
 * else is WB_ENET "'URL': why". For trust_http (trust/method.h): the
 * Rekor lookups of `sig sigstore --rekor` (the engine runs its own as
 * transfers of its multi handle, fetch/lookup.c, under the same rules:
 * request_judge).
 */
int fetch_request(const struct fetch_transport *t, const char *url, const char *post_json,
		  size_t max, int no_redirect, struct buf *out, long *status,
		  struct wb_err *e);

/* The ref key spec of an item: everything that decides whether earlier
 * verified bytes still count (name, URLs, verify spec, policy, lock pin).
 * New string. */
char *fetch_ref_spec(const struct plan *plan, const struct fetch_item *it);

#endif
