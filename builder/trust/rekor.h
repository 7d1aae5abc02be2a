/*
 * Rekor v1 lookups: the transparency-log entries that record an artifact's
 * SHA-256 (`POST /api/v1/index/retrieve` {"hash": "sha256:<hex>"} gives
 * entry UUIDs, `GET /api/v1/log/entries/<uuid>` each entry). Nothing here
 * is trusted: each entry is the Rekor API's JSON for it, checked by
 * sigstore_verify() (trust/tlog.c) against the pinned Rekor key of the
 * trusted root.
 *
 * The protocol only: every request goes through the caller's transport
 * (struct trust_http, trust/method.h; fetch_request() in fetch/request.c:
 * TLS and --cacert, proxy, timeouts, retries, the transport policy). The
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
 * Append to ENTRIES the text of every entry Rekor at BASE (e.g.
 * "https://rekor.sigstore.dev") lists for SHA256_HEX (64 lowercase hex
 * digits), asked through HTTP. No entry is not an error (ENTRIES stays
 * empty). When the index lists more than REKOR_MAX_ENTRIES, the call still
 * succeeds and leaves a note in E (code 0, msg set) for the caller to
 * report. Errors: WB_ENET (unreachable, refused, an HTTP error, a refused
 * redirect; the message names the URL), WB_EVERIFY (an answer that is not
 * the API's form).
 */
int rekor_lookup(const struct trust_http *http, const char *base, const char *sha256_hex,
		 struct wb_strlist *entries, struct wb_err *e);

/*
 * The same, as one JSON object holding every entry found ({"<uuid>":
 * {...}, ...}: the entries merged, each as the API gives it) in OUT; OUT
 * stays empty when there is none. The cosign method's lookup.
 */
int rekor_lookup_merged(const struct trust_http *http, const char *base,
			const char *sha256_hex, struct buf *out, struct wb_err *e);

#endif
