/*
 * Online Rekor v1 lookups: the transparency-log entries that record an
 * artifact's SHA-256 (`POST /api/v1/index/retrieve` {"hash":
 * "sha256:<hex>"} gives entry UUIDs, `GET /api/v1/log/entries/<uuid>` each
 * entry). Nothing here is trusted: each entry is the Rekor API's JSON for
 * it, checked by sigstore_verify() (trust/tlog.c) against the pinned
 * Rekor key of the trusted root.
 *
 * Transport: http and https only, the system CA store, no redirect
 * followed (a 3xx is an error: a log's API has no reason to send one),
 * every answer capped (REKOR_ANSWER_MAX), at most REKOR_MAX_ENTRIES
 * entries fetched.
 */
#ifndef WB_REKOR_H
#define WB_REKOR_H

#include "lib/err.h"
#include "lib/strlist.h"

#define REKOR_ANSWER_MAX (1024 * 1024)
#define REKOR_MAX_ENTRIES 16

/*
 * Append to ENTRIES the text of every entry Rekor at BASE (e.g.
 * "https://rekor.sigstore.dev") lists for SHA256_HEX (64 lowercase hex
 * digits). No entry is not an error (ENTRIES stays empty). Errors:
 * WB_ENET (unreachable, refused, an HTTP error, a redirect; the message
 * names the URL), WB_EVERIFY (an answer that is not the API's form).
 */
int rekor_lookup(const char *base, const char *sha256_hex, struct wb_strlist *entries,
		 struct wb_err *e);

#endif
