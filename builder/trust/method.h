/*
 * The table of verification methods. Each method is one file in trust/
 * (m_*.c) and one line in trust_methods[] (trust/method.c); everything
 * else — the recipe schema's `verify.<name>` key aside — iterates over the
 * table: fetch fetches each requirement's auxiliary file generically, the
 * cache ref and the lock keep its evidence, plan, --explain, the SBOM and
 * `winbuild mirror` show and export it (docs/architecture.md, "Adding a
 * verification method").
 *
 * Digest pins (sha256, sha512, the lock's) are not in the table: they are
 * fields of the spec, checked by verify_pins on every path to bytes.
 */
#ifndef WB_TRUST_METHOD_H
#define WB_TRUST_METHOD_H

#include <stddef.h>

struct json_t;

#include "lib/buf.h"
#include "lib/err.h"
#include "trust/digest.h"
#include "trust/spec.h"

/* A method's flags. */
enum {
	TRUST_SIGNATURE = 1 << 0,  /* counts for policy.require: signature; its
				      auxiliary file is kept in the cache ref
				      (checked again on a hit without a pin)
				      and exported by `winbuild mirror` */
	TRUST_CHECKSUM = 1 << 1,   /* policy.checksum_urls: forbid drops it */
	TRUST_ABSENT_FAILS = 1 << 2, /* every URL answering 404/410 is a
				      verification failure, not a network error */
	TRUST_NOT_IN_VERIFY = 1 << 3, /* no `verify:` key names it: winbuild
				      adds it to a kind of artifact itself
				      (authenticode, to windows.updates) */
};

/* An auxiliary file's flags. */
enum {
	TRUST_AUX_OPTIONAL = 1 << 0, /* no URL is fine: the method's lookup
				       fills it, or a setting opts out */
	TRUST_AUX_LOCK_JSON = 1 << 1, /* the lock holds the file itself (JSON)
				        under its lock_key's name less "_url" */
	TRUST_AUX_PREFERRED = 1 << 2, /* when the recipe names its URL, it is
				        the requirement's one file: the others
				        are not fetched (no default URL) and no
				        lookup is made (cosign's bundle) */
};

/*
 * One auxiliary file of a method (a method declares a list: trust_method.aux;
 * the older methods one file, from their single fields): fetched
 * generically by fetch/ (engine.c) before the artifact, through the URL list
 * trust_req_urls(r, k).
 * @where a method's auxiliary files (param, default URL, cap, mirror suffix,
 *   lock key)
 */
struct trust_aux_def {
	const char *param;         /* the recipe key of its URL ("signature") */
	const char *default_url;   /* URL template when the recipe gives none,
				      or NULL (then it is required, unless
				      TRUST_AUX_OPTIONAL) */
	const char *what;          /* in messages: "cosign certificate" */
	size_t max;                /* size cap */
	const char *suffix;        /* `winbuild mirror` exports it as
				      "<file><suffix>"; NULL: not exported */
	const char *lock_key;      /* the lock's key for its URL, or NULL */
	unsigned flags;            /* TRUST_AUX_* */
};

/*
 * The transport a lookup asks through (fetch/request.c's: TLS and --cacert,
 * proxy, timeouts, retries, the transport policy on every hop). GET URL, or
 * POST the JSON POST_JSON to it; the answer (at most MAX bytes) in OUT and
 * the HTTP status in *STATUS; anything but 200 and 404 is an error
 * (WB_ENET naming the URL). NO_REDIRECT refuses a redirect (WB_ENET).
 */
struct trust_http {
	int (*request)(void *ctx, const char *url, const char *post_json, size_t max,
		       int no_redirect, struct buf *out, long *status, struct wb_err *e);
	void *ctx;
};

/*
 * A method's lookup as rounds of requests (trust_method.lookup_step). The
 * method names a round's requests; whoever drives it answers them all —
 * the fetch engine as transfers of its multi handle, in parallel with the
 * downloads (fetch/lookup.c); trust_lookup_run() one after another over a
 * trust_http — then asks the method for the next round. Nothing here does
 * I/O.
 */
struct trust_lookup_req {
	char *url;                 /* owned */
	char *post_json;           /* owned; NULL: a GET */
	size_t max;                /* the answer's size cap */
	int no_redirect;           /* a redirect is refused (WB_ENET) */
	/* filled by the driver */
	struct buf answer;
	long status;               /* 200 or 404 (anything else is ERR) */
	struct wb_err err;         /* code != 0: not answered (WB_ENET or
				      WB_EVERIFY, the message names the URL) */
};

struct trust_lookup {
	const struct trust_req *req;
	const char *base;          /* the service's base URL */
	const char *sha256_hex;    /* the artifact's */
	int round;                 /* 0 on the first call, then 1, 2, ... */
	struct trust_lookup_req *reqs;   /* the round's requests */
	size_t nreqs;
	size_t listed;             /* the method's own, between rounds */
};

/* Add a request to LK's round (copies URL and POST_JSON). */
void trust_lookup_ask(struct trust_lookup *lk, const char *url, const char *post_json,
		      size_t max, int no_redirect);
/* Free LK's requests (the round is empty again). */
void trust_lookup_clear(struct trust_lookup *lk);
/*
 * Run STEP's lookup of SHA256_HEX at BASE for R to its end, each request
 * through HTTP in turn (a round stops at its first unanswered request,
 * which the step reports). For requests outside the fetch engine
 * (`winbuild sig sigstore --rekor`).
 */
int trust_lookup_run(int (*step)(struct trust_lookup *lk, struct buf *out, struct wb_err *e),
		     const struct trust_req *r, const char *base, const char *sha256_hex,
		     const struct trust_http *http, struct buf *out, struct wb_err *e);

/* The bytes under check. */
struct trust_subject {
	const char *name;          /* artifact */
	const char *filename;      /* its file name */
	const char *url;           /* where the bytes came from (messages) */
	const char *data_path;     /* the bytes as a file */
	const struct digest_result *dr;
	struct sigstore_roots *roots;   /* the run's parsed trusted roots, or
				      NULL: each check parses its own */
	unsigned tlog_threshold;   /* policy.tlog_threshold (0: one log) */
};

/* A fetched auxiliary file (check() gets one per file of the method's
 * list: AUX[0] ... AUX[naux - 1]). */
struct trust_aux {
	const char *url;
	const char *text;          /* NULL when it was not fetched */
	size_t len;
};

/* A setting of a method in the recipe's `verify.<name>` map. */
struct trust_param_def {
	const char *name;
	int file;                  /* a path, resolved against the recipe file
				      that names it; its contents are part of
				      the stage's inputs */
};

/* One evidence field: "key_id", "trusted_comment"; "identity", ... */
struct trust_field {
	char *key;
	char *value;
};

/* A further auxiliary file kept as evidence. */
struct trust_evfile {
	char *url;
	char *text;
	size_t len;
};

/* What one requirement's check showed. */
struct trust_ev {
	const struct trust_method *method;
	size_t req;                /* index of its requirement in spec->reqs */
	char *url;                 /* the auxiliary file's URL, or NULL */
	char *text;                /* the auxiliary file, when TRUST_SIGNATURE */
	size_t len;
	struct trust_evfile more[TRUST_AUX_MAX - 1];   /* files 1.. of the
				      method's list, the same way (a check
				      may set them itself: the Rekor entry
				      that verified, of those looked up) */
	struct trust_field *fields;
	size_t nfields, alloc_fields;
};

void trust_ev_set(struct trust_ev *ev, const char *key, const char *value);
const char *trust_ev_get(const struct trust_ev *ev, const char *key);
void trust_ev_release(struct trust_ev *ev);

struct trust_method {
	const char *name;          /* the recipe's verify.<name>; the JSON key
				      of its evidence in the lock */
	const char *what;          /* its auxiliary file in messages:
				      "signature", "sha256 checksum file" */
	const char *shown;         /* in verified_by lists: "minisign" */
	unsigned flags;
	size_t aux_max;            /* size cap of the auxiliary file */
	unsigned digest_algs;      /* enum digest_alg bits check() needs */
	const char *default_url;   /* URL template when the recipe gives none
				      ("${url}.minisig"), or NULL */
	/* The recipe's `verify.<name>` map, for methods recipe/verify_spec.c converts
	 * generically (minisign and the checksum files have their own keys):
	 * URL_PARAM names the auxiliary file's URL (default DEFAULT_URL),
	 * PARAMS the method's settings (NULL-ended), and VALIDATE checks the
	 * combination (a message without the origin, which resolve adds). */
	const char *url_param;
	const struct trust_param_def *params;
	int (*validate)(const struct trust_req *r, struct wb_err *e);
	/* A loud warning the requirement's settings call for (printed by every
	 * command that resolves the plan, and in plan --json), or NULL; may be
	 * NULL */
	const char *(*warning)(const struct trust_req *r);
	const char *url_key;       /* the lock's key for the file's URL
				      ("signature_url"); NULL: the evidence
				      is the URL alone, under NAME */
	/* SBOM properties: evidence field -> property name, NULL-ended */
	const char *const *sbom_fields;
	/* A list of auxiliary files (NAUX of them) instead of the single one
	 * above (default_url, url_param, aux_max, what, url_key): see
	 * trust_method_aux(). */
	const struct trust_aux_def *aux;
	size_t naux;
	/*
	 * An optional lookup after the download, for what only the artifact's
	 * SHA-256 finds (a Rekor search). LOOKUP_PARAM is the recipe key of
	 * the service's base URL (default LOOKUP_DEFAULT; verify_spec.c mirrors
	 * it into trust_req.lookup). When the requirement has base URLs and
	 * its file LOOKUP_AUX has none, fetch runs LOOKUP_STEP with the first
	 * base URL (the next on a network error) in LK->base, as rounds of
	 * requests (struct trust_lookup): each call with LK->round 0, 1, ...
	 * sees the answers to the round before and returns 1 with the next
	 * round's requests in LK (at least one), 0 when done — the answer (OUT;
	 * empty: nothing found) is that file's text, and E may hold a note
	 * (code 0) —, or -1. Errors: WB_ENET (the service could not be asked;
	 * names the URL), WB_EVERIFY (a hostile answer).
	 */
	const char *lookup_param;
	const char *lookup_default;
	size_t lookup_aux;
	int (*lookup_wanted)(const struct trust_req *r);   /* NULL: always */
	int (*lookup_step)(struct trust_lookup *lk, struct buf *out, struct wb_err *e);
	/*
	 * Verify S against requirement R with its auxiliary file AUX. WHICH
	 * is "" for the artifact's own requirement, "signature required by
	 * FILE:L:C: " for a layered one (for messages). On success fill EV's
	 * fields (the caller sets method, url and text). Errors: WB_EVERIFY
	 * did not verify, WB_EUSAGE could not be checked.
	 */
	int (*check)(const struct trust_req *r, const struct trust_subject *s,
		     const struct trust_aux *aux, const char *which,
		     struct trust_ev *ev, struct wb_err *e);
	const char *label;         /* plan: "minisign signature" URL */
	/* plan and --explain: the requirement's own settings after its URLs,
	 * one LINE each ("key ABCD (name)"), with its origin; may be NULL */
	void (*describe_req)(const struct trust_req *r,
			     void (*line)(void *ctx, const char *text,
					  const struct wb_origin *o), void *ctx);
	/* plan --json: the settings beside "urls" in the requirement's object
	 * (methods with a url_key; the others show their URL list alone) */
	void (*req_json)(const struct trust_req *r, struct json_t *object);
	/* For logs and the SBOM: "minisign key ABCD, trusted comment '...'". */
	void (*describe_ev)(const struct trust_ev *ev, struct buf *out);
	/* Short signer for "also signed by" lists: "ABCD 'comment'". */
	void (*signer)(const struct trust_ev *ev, struct buf *out);
};

/* For methods whose settings are their params (trust_method.params):
 * describe_req shows each set one as "KEY VALUE" with its origin, req_json
 * sets every declared one (null when unset). */
void trust_params_describe(const struct trust_req *r,
			   void (*line)(void *ctx, const char *text,
					const struct wb_origin *o), void *ctx);
void trust_params_json(const struct trust_req *r, struct json_t *object);

/*
 * The part the Sigstore-based methods (m_sigstore.c, m_attestation.c,
 * m_cosign.c) share: R's `trusted_root` — from S->roots, parsed once per
 * run, or else loaded into ROOT (the caller releases ROOT either way) —
 * and fill IN with S's digest and file, the root, R's identity and
 * issuer, and the policy's tlog_threshold (nothing else of IN is set).
 * -1 with "artifact 'NAME': trusted root: ..." in E.
 */
struct sigstore_root;
struct sigstore_roots;
struct sigstore_input;
int trust_sigstore_prepare(const struct trust_req *r, const struct trust_subject *s,
			   struct sigstore_root *root, struct sigstore_input *in,
			   struct wb_err *e);

/* M's auxiliary files: how many, and file K (the single-file methods' one,
 * from their own fields, is file 0). */
size_t trust_method_naux(const struct trust_method *m);
struct trust_aux_def trust_method_aux(const struct trust_method *m, size_t k);
/* Whether R's file K must have a URL: it is not TRUST_AUX_OPTIONAL, and
 * no TRUST_AUX_PREFERRED file of R has one (which then stands alone). */
int trust_aux_required(const struct trust_req *r, size_t k);
/* The index of requirement REQ's first file among all files of SPEC's
 * requirements (the flat order fetch fetches and verify reads them in). */
size_t trust_spec_slot(const struct trust_spec *spec, size_t req);

/* The table, NULL-ended. */
extern const struct trust_method *const trust_methods[];
const struct trust_method *trust_method_find(const char *name);

/* The methods other modules name (mirror --sign replaces minisign's). */
extern const struct trust_method trust_m_sha256_url, trust_m_sha512_url,
	trust_m_minisign;

#endif
