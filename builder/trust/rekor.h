/*
 * Rekor v1 lookups: the transparency-log entries that record an artifact's
 * SHA-256 (`POST /api/v1/index/retrieve` {"hash": "sha256:<hex>"} gives
 * entry UUIDs, `GET /api/v1/log/entries/<uuid>` each entry). Nothing here
 * is trusted: each entry is the Rekor API's JSON for it, checked by
 * sigstore_verify() (trust/tlog.c) against the pinned Rekor key of the
 * trusted root.
 *
 * The protocol only: it names the requests, the caller answers them — the
 * fetch engine as transfers beside the downloads (fetch/lookup.c), or
 * through a struct trust_http (trust/method.h; fetch_request() in
 * fetch/request.c) one by one — under the caller's transport (TLS and
 * --cacert, proxy, timeouts, retries, the transport policy). The
 * index POST is never redirected (a redirect is refused, WB_ENET); an
 * entry's GET follows redirects hop by hop under the transport policy.
 * Every answer is capped (REKOR_ANSWER_MAX); the index answer is read
 * whole, and its REKOR_MAX_ENTRIES oldest entries are fetched, oldest
 * first (Rekor lists newest first; later entries, which anyone can add,
 * cannot push the genuine one out).
 */
#ifndef WB_REKOR_H
#define WB_REKOR_H

#include "lib/err.h"
#include "lib/strlist.h"
#include "trust/method.h"

#define REKOR_ANSWER_MAX (1024 * 1024)
#define REKOR_MAX_ENTRIES 64

/*
 * The lookup as rounds (trust_method.lookup_step, trust/method.h): round 0
 * asks the index (LK->base, LK->sha256_hex: 64 lowercase hex digits), round
 * 1 reads its answer and asks for each listed entry (at most
 * REKOR_MAX_ENTRIES, the oldest), round 2 merges them into OUT as one JSON
 * object ({"<uuid>": {...}, ...}, each entry as the API gives it; OUT stays
 * empty when there is none — not an error). When the index lists more than
 * REKOR_MAX_ENTRIES, the lookup still succeeds and leaves a note in E
 * (code 0, msg set) for the caller to report. Errors: WB_ENET
 * (unreachable, refused, an HTTP error, a refused redirect; the message
 * names the URL), WB_EVERIFY (an answer that is not the API's form).
 * The fetch engine runs the rounds as its own transfers (fetch/lookup.c).
 */
int rekor_lookup_step(struct trust_lookup *lk, struct buf *out, struct wb_err *e);

/* The whole lookup of SHA256_HEX at BASE (e.g. "https://rekor.sigstore.dev"),
 * each request through HTTP in turn (`winbuild sig sigstore --rekor`). */
int rekor_lookup_merged(const struct trust_http *http, const char *base,
			const char *sha256_hex, struct buf *out, struct wb_err *e);

#endif
