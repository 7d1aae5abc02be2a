/*
 * A container registry client on the build host (OCI distribution API,
 * issue 33): one image, pinned by digest, pulled into the cache with every
 * manifest and blob verified by its digest.
 *
 * Transport: the download's (fetch_request's) rules and loop
 * (request_run), one request at a time: TLS verification with the CA bundle, proxies from the environment,
 * WINBUILD_RETRIES with backoff on connection errors and 5xx,
 * WINBUILD_CONNECT_TIMEOUT and the low-speed abort, every redirect one hop
 * at a time under the transport policy (hop_judge: a blob store on another
 * https host is fine, a step down to http is not).
 *
 * Auth: anonymous, and the token flow of distribution's token spec (a 401
 * with `WWW-Authenticate: Bearer realm=...,service=...,scope=...`: GET the
 * realm for a token, with the credentials given for the realm's origin if
 * any, ask again with it), and Basic (a 401 with `WWW-Authenticate:
 * Basic`: ask again with the credentials given for the registry's origin;
 * registry_opts.creds). The token goes only to the registry's own origin
 * (scheme, host and port), credentials only to the origin they were given
 * for, never to a host a redirect leads to, never over plain http.
 *
 * The image: REF's digest names an image manifest, or a manifest list / OCI
 * index whose windows/amd64 entry for the wanted Windows build is taken
 * (platform.os.version equal to OS_VERSION or starting with OS_VERSION
 * "."); the image's config must say the same (windows, amd64, that build).
 * Foreign layers (descriptors with `urls`, Windows base images before
 * mid-2023) are refused unless ALLOW_FOREIGN, then fetched from their URLs
 * (in order, then the registry), by digest as every blob.
 *
 * The cache first: a manifest or blob already there (re-hashed as it is
 * read; a changed entry is quarantined and fetched again) is not asked
 * for, so a warm pull makes no request at all.
 *
 * Nothing reaches the cache unless everything verified: manifests and blobs
 * wait in memory or in temp files of the cache until the whole image did,
 * then each is inserted under its SHA-256 (a manifest's digest is the
 * SHA-256 of its bytes, so the cache holds them as any entry). A failure
 * leaves the cache as it was (its temp files removed).
 *
 * Nothing here prints; messages name the image, the URL, the expected and
 * the actual digest.
 */
#ifndef WB_FETCH_REGISTRY_H
#define WB_FETCH_REGISTRY_H

#include "fetch/cache.h"
#include "fetch/creds.h"
#include "fetch/fetch.h"
#include "lib/err.h"
#include "lib/imageref.h"
#include "trust/ocisig.h"

#define REGISTRY_DIGEST_LEN IMAGEREF_DIGEST_LEN

struct registry_blob {
	char *media_type;
	char digest[REGISTRY_DIGEST_LEN + 1];
	unsigned long long size;
	int foreign;                 /* it had urls (a foreign layer) */
};

/* What registry_pull fetched (every digest is in the cache). */
struct registry_image {
	char pinned[REGISTRY_DIGEST_LEN + 1];    /* the digest pulled: REF's, or
						  * the one its tag resolved to */
	char list_digest[REGISTRY_DIGEST_LEN + 1];      /* the pinned list or
							  * index; "" when the
							  * pin named the image
							  * manifest itself */
	char *list_media_type;       /* its mediaType (NULL when none) */
	unsigned long long list_size;
	char manifest_digest[REGISTRY_DIGEST_LEN + 1];  /* the image manifest */
	char *manifest_media_type;
	unsigned long long manifest_size;
	char *os_version;            /* the config's os.version */
	struct registry_blob config;
	struct registry_blob *layers;
	size_t nlayers;
	unsigned long long bytes_downloaded;   /* body bytes of this pull (0
						* when everything was cached) */
	/* with registry_opts.cosign: the signature manifest that verified
	 * (the tag's answer, or the cache's ref offline) and what it proved */
	char sig_digest[REGISTRY_DIGEST_LEN + 1];
	struct ocisig_evidence sig;
	int accepted_new;            /* the caller's: a tag resolved by lock */
};

/* Where a pull's bytes come from when not from a registry over the
 * network (an image source on disk: fetch/imgsource.c). GET answers one
 * request of the pull, named by its PATH under the image's repository
 * ("manifests/<digest>", "manifests/<tag>", "blobs/<digest>"): its bytes
 * handed to WRITE (which fails once more arrive than the request may
 * have) and 1, or 0 where a registry would answer 404, or -1 (E). What
 * it hands over is checked as a registry's answer is (digests, sizes,
 * the platform, the signature), and reaches the cache the same way. */
struct registry_reader {
	int (*get)(void *ctx, const char *path,
		   int (*write)(void *sink, const void *p, size_t n), void *sink,
		   struct wb_err *e);
	void *ctx;
};

struct registry_opts {
	const struct fetch_transport *t;
	const char *os_version;      /* "10.0.20348" */
	int allow_foreign;           /* fetch foreign layers from their urls */
	int offline;                 /* the cache only: anything missing is
				      * WB_ENET, no request is made */
	/* NULL, or the cosign signature the pin must carry: the signature
	 * manifest under the tag sha256-<hex of the pin>.sig and its payloads
	 * are fetched and verified (trust/ocisig.h) right after the pinned
	 * manifest, before any blob is asked for; a missing tag is
	 * WB_EVERIFY. They are cached with the image, and a cache ref
	 * (registry_sig_ref_key) names the signature manifest, so an offline
	 * pull verifies the same signature again. */
	const struct ocisig_policy *cosign;
	/* REF may have a tag and no digest: the tag is resolved (the digest
	 * of the manifest it names now) and that digest pulled, its signature
	 * checked first as any pin's; never offline. For `lock --accept-new`
	 * only. */
	int resolve_tag;
	/* NULL, or where the registry is mirrored: "https://HOST[:PORT][/PATH]"
	 * (a recipe's mirror rule for https://REF-HOST/; `winbuild mirror`
	 * writes a static tree such a URL serves) */
	const char *base;
	/* the plan's mirror_only: every request goes to BASE, and a foreign
	 * layer's `urls` (another origin, Microsoft's CDN) are never asked:
	 * the layer comes from BASE like any blob, or not at all */
	int mirror_only;
	/* NULL, or the run's credentials (fetch/creds.h, loaded once by the
	 * caller): what creds_for() gives for a request's own origin goes
	 * along after that origin asked for it (a 401 with a Basic
	 * challenge), to a token realm from the first request (Docker's
	 * token flow), a client certificate always; never over plain http,
	 * never to another origin a redirect leads to */
	const struct creds *creds;
	/* NULL, or what answers the pull's requests instead of the network
	 * (above); BASE then only names them in messages */
	const struct registry_reader *reader;
	/* the pin's signature manifest verified earlier in this run (the
	 * seam's memo, fetch/imgsource.c): read through its cache ref as an
	 * offline pull does, not asked of the registry again; its payloads
	 * and ocisig_verify() against COSIGN run as always */
	int sig_known;
};

/*
 * Pull REF (its digest is required) into the open cache C as described
 * above; IMG filled (registry_image_release). Errors: WB_EVERIFY a digest,
 * size or platform that does not match, no entry for the wanted build, a
 * refused foreign layer or redirect; WB_ENET the network or the registry
 * (an HTTP error, a 401 after the token); WB_EUSAGE a reference without a
 * digest or an answer winbuild cannot read; WB_EIO the cache.
 */
int registry_pull(struct cache *c, const struct image_ref *ref,
		  const struct registry_opts *o, struct registry_image *img,
		  struct wb_err *e);
void registry_image_release(struct registry_image *img);

/* The cache ref key under which the signature manifest of HOST/REPO@DIGEST
 * is recorded (64 hex + NUL in OUT). */
void registry_sig_ref_key(const struct image_ref *ref, char out[65]);

#endif
