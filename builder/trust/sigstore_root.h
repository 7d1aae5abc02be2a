/*
 * The Sigstore trusted root (trusted_root.json, media type
 * application/vnd.dev.sigstore.trustedroot+json;version=0.1), parsed into
 * OpenSSL objects: the Fulcio certificate authorities, the CT logs, the
 * transparency logs (Rekor v1 and v2) and the timestamp authorities, each
 * with its validity window (inclusive at both ends; a window with no start
 * is refused, one with no end, or a null end, is open).
 *
 * Ownership: struct sigstore_root owns everything it points to;
 * sigstore_root_release frees it (safe on a zeroed or half-filled root).
 * Errors are WB_EUSAGE naming the field ("tlogs[1]: publicKey.validFor:
 * missing start"), or WB_EIO when the file cannot be read.
 */
#ifndef WB_SIGSTORE_ROOT_H
#define WB_SIGSTORE_ROOT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <openssl/x509.h>

#include "lib/err.h"
#include "trust/timestamp.h"
#include "trust/tlog.h"

#define SIGSTORE_ROOT_MAX (4u << 20)   /* trusted_root.json size cap */

/* A Fulcio CA: certChain.certificates, issuing certificate first, root
 * (or the last certificate the root pins) last. */
struct sigstore_ca {
	STACK_OF(X509) *chain;   /* owned; at least one certificate */
	int64_t valid_from;
	int64_t valid_to;        /* INT64_MAX when open */
	char *uri;               /* owned or NULL */
};

struct sigstore_root {
	struct sigstore_ca *cas;
	size_t ncas;
	struct tlog_key *ctlogs;     /* CT logs: log_id, key, validity */
	size_t nctlogs;
	struct tlog_key *tlogs;      /* Rekor logs */
	size_t ntlogs;
	struct timestamp_authority *tsas;
	size_t ntsas;
};

/* Parse trusted_root.json text (LEN bytes). */
int sigstore_root_parse(const char *text, size_t len, struct sigstore_root *r,
			struct wb_err *e);
/* Read and parse PATH; errors name PATH. */
int sigstore_root_load(const char *path, struct sigstore_root *r,
		       struct wb_err *e);
void sigstore_root_release(struct sigstore_root *r);

/*
 * The trusted roots of one run (a fetch): each distinct trusted_root.json,
 * by the SHA-256 of its bytes, parsed once and shared by every check that
 * names it (a shipped image names one root in six requirements). The file
 * is read and hashed on every use, so a root changed on disk meanwhile is
 * the new root, never the old one's parse. The caller owns RS;
 * sigstore_roots_release frees every root it holds.
 */
struct sigstore_roots_entry;
struct sigstore_roots {
	struct sigstore_roots_entry **v;
	size_t nr;
	unsigned parsed;           /* roots parsed */
	unsigned used;             /* roots handed out (one per check) */
};
#define SIGSTORE_ROOTS_INIT { NULL, 0, 0, 0 }

/* The root in PATH (RS keeps it; valid until sigstore_roots_release).
 * Errors as sigstore_root_load's. */
int sigstore_roots_get(struct sigstore_roots *rs, const char *path,
		       const struct sigstore_root **out, struct wb_err *e);
void sigstore_roots_release(struct sigstore_roots *rs);

/*
 * Helpers shared by the Sigstore files (trust/sigstore*.c).
 * (The protobuf-JSON bytes fields are read with json_get_b64, lib/json.h.)
 * sigstore_time_parse: RFC 3339 "YYYY-MM-DDTHH:MM:SS[.frac](Z|+hh:mm)" to
 * Unix seconds; fractions round towards the inside of a window as ROUND_UP
 * says (1: up, for a start; 0: down, for an end). -1 when malformed.
 */
int sigstore_time_parse(const char *s, int round_up, int64_t *out);

#endif
