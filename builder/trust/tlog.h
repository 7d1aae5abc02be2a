/*
 * Rekor transparency-log entries (Rekor v1 and Rekor v2), checked offline:
 * the inclusion promise (SET), the RFC 6962 inclusion proof, the signed-note
 * checkpoint, and the canonicalized body (hashedrekord, dsse, intoto).
 * OpenSSL libcrypto + jansson; no recipe/ include.
 *
 * Ownership: every struct here owns the memory its pointers point to and is
 * freed with its *_release function (safe on a zeroed or half-filled struct).
 * Errors: WB_EUSAGE when the input is malformed (could not even check),
 * WB_EVERIFY when it parsed but does not verify. Messages are lowercase and
 * name what failed ("inclusion proof: computed root ... does not match").
 *
 * Times are Unix seconds (int64_t). An open-ended validity window uses
 * TLOG_TIME_MIN / TLOG_TIME_MAX. Window bounds are inclusive at both ends.
 */
#ifndef WB_TLOG_H
#define WB_TLOG_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/err.h"

#define TLOG_HASH_LEN 32            /* SHA-256: log ids, Merkle nodes */
#define TLOG_KEYHINT_LEN 4          /* signed-note key hint */
#define TLOG_PROOF_MAX 64           /* a proof for a 2^63 tree has <= 63 hashes */
#define TLOG_BODY_MAX (16u << 20)   /* canonicalized body size cap */
#define TLOG_CHECKPOINT_MAX 65536   /* checkpoint envelope size cap */
#define TLOG_TIME_MIN INT64_MIN
#define TLOG_TIME_MAX INT64_MAX

/*
 * One transparency log of the trusted root (trusted_root.json "tlogs[]"),
 * filled by the caller (trust/sigstore.c). The caller sets every field;
 * tlog_key_release frees pkey, base_url and origin.
 */
struct tlog_key {
	unsigned char log_id[TLOG_HASH_LEN]; /* logId.keyId as the root gives
						it: SHA-256 of the DER SPKI for
						Rekor v1; for Rekor v2 (Ed25519)
						the signed-note key id
						SHA-256(origin "\n" 0x01 raw) */
	EVP_PKEY *pkey;          /* owned; ECDSA P-256/P-384 or Ed25519 */
	int64_t valid_from;      /* publicKey.validFor.start */
	int64_t valid_to;        /* publicKey.validFor.end, or TLOG_TIME_MAX */
	char *base_url;          /* owned; "https://rekor.sigstore.dev" */
	char *origin;            /* owned or NULL: checkpoint origin name. When
				    NULL, the host of base_url is used for Rekor
				    v2 ("log2025-1.rekor.sigstore.dev"); Rekor v1
				    checkpoint origins are not pinned (their
				    "<host> - <tree id>" is not in the root) */
};
void tlog_key_release(struct tlog_key *k);


/* 1 when T lies inside [valid_from, valid_to] (both inclusive), else 0. */
int tlog_key_valid_at(const struct tlog_key *k, int64_t t);

/* Find the key whose log_id equals LOG_ID; NULL when none. */
const struct tlog_key *tlog_key_find(const struct tlog_key *keys, size_t nkeys,
				     const unsigned char log_id[TLOG_HASH_LEN]);

/* --- entries ----------------------------------------------------------- */

struct tlog_proof {
	int64_t log_index;                 /* index of the leaf in the tree */
	int64_t tree_size;
	unsigned char root_hash[TLOG_HASH_LEN];
	unsigned char (*hashes)[TLOG_HASH_LEN]; /* owned; nhashes of them */
	size_t nhashes;
	char *checkpoint;                  /* owned, NUL-terminated envelope
					      text; NULL when absent (old v0.1
					      bundles): such a proof parses but
					      never verifies */
	size_t checkpoint_len;
};

struct tlog_entry {
	int64_t log_index;                 /* entry logIndex (>= 0 enforced) */
	unsigned char log_id[TLOG_HASH_LEN];
	char kind[32];                     /* kindVersion.kind ("hashedrekord") */
	char version[16];                  /* kindVersion.version ("0.0.1") */
	int has_integrated_time;           /* integratedTime present and != 0 */
	int64_t integrated_time;           /* UNTRUSTED until a SET verified it */
	unsigned char *set;                /* owned; inclusionPromise SET (DER
					      signature); NULL when absent */
	size_t set_len;
	int has_proof;                     /* inclusionProof present */
	struct tlog_proof proof;
	unsigned char *body;               /* owned; canonicalizedBody decoded */
	size_t body_len;
};
void tlog_entry_release(struct tlog_entry *ent);

/*
 * Parse one element of a bundle's verificationMaterial.tlogEntries[]
 * (protobuf-specs TransparencyLogEntry in its JSON form: int64 as strings
 * or numbers, bytes as standard base64; a missing integer is 0, as
 * protobuf JSON leaves zero values out). canonicalizedBody is required.
 * Rejects negative or malformed indexes, sizes and times, a logId that is
 * not 32 bytes, proof hashes that are not 32 bytes, more than
 * TLOG_PROOF_MAX hashes. Errors are WB_EUSAGE.
 */
int tlog_entry_from_bundle(const json_t *obj, struct tlog_entry *ent,
			   struct wb_err *e);

/*
 * Parse the Rekor v1 API form of one entry (TEXT, LEN bytes of JSON, as
 * `rekor-cli get --format json` or GET /api/v1/log/entries/<uuid> return
 * it): {"<uuid>": {"body": b64, "integratedTime": N, "logID": hex,
 * "logIndex": N, "verification": {"signedEntryTimestamp": b64,
 * "inclusionProof": {"logIndex": N, "rootHash": hex, "treeSize": N,
 * "hashes": [hex...], "checkpoint": text}}}}. Exactly one uuid key.
 * kind and version are read from the body's "kind" and "apiVersion".
 * Errors are WB_EUSAGE.
 */
int tlog_entry_from_rekor_api(const char *text, size_t len,
			      struct tlog_entry *ent, struct wb_err *e);

/* --- verification pieces ----------------------------------------------- */

/*
 * Verify the inclusion promise: KEY's signature SET over the canonical JSON
 * {"body":"<b64 body>","integratedTime":N,"logID":"<hex log id>",
 *  "logIndex":N} (keys sorted, no spaces), as Rekor v1 signs it.
 * WB_EVERIFY when the signature does not verify.
 */
int tlog_set_verify(const struct tlog_entry *ent, const struct tlog_key *key,
		    struct wb_err *e);

/* RFC 6962 hashes: leaf = SHA-256(0x00 || data); node = SHA-256(0x01||l||r). */
void tlog_merkle_leaf_hash(const unsigned char *data, size_t len,
			   unsigned char out[TLOG_HASH_LEN]);
void tlog_merkle_node_hash(const unsigned char l[TLOG_HASH_LEN],
			   const unsigned char r[TLOG_HASH_LEN],
			   unsigned char out[TLOG_HASH_LEN]);

/*
 * RFC 6962 / RFC 9162 inclusion proof: INDEX < SIZE, NPROOF exactly the
 * length the tree shape requires (a short or long proof fails), and the
 * root computed from LEAF_HASH and PROOF equals ROOT. WB_EVERIFY on any
 * failure.
 */
int tlog_merkle_verify_inclusion(uint64_t index, uint64_t size,
				 const unsigned char leaf_hash[TLOG_HASH_LEN],
				 const unsigned char (*proof)[TLOG_HASH_LEN],
				 size_t nproof,
				 const unsigned char root[TLOG_HASH_LEN],
				 struct wb_err *e);

/* A signed note (checkpoint), C2SP signed-note / tlog-checkpoint. */
struct tlog_note_sig {
	char *name;                         /* owned; key name after "— " */
	unsigned char hint[TLOG_KEYHINT_LEN];
	unsigned char *sig;                 /* owned; signature after the hint */
	size_t sig_len;
};

struct tlog_checkpoint {
	char *origin;                       /* owned; first line */
	uint64_t size;                      /* second line, decimal */
	unsigned char root_hash[TLOG_HASH_LEN]; /* third line, base64 */
	char *text;                         /* owned; the signed text: every
					       line up to the blank line, each
					       with its "\n" */
	size_t text_len;
	struct tlog_note_sig *sigs;         /* owned; nsigs of them */
	size_t nsigs;
};
void tlog_checkpoint_release(struct tlog_checkpoint *cp);

/*
 * Parse a checkpoint envelope: "<origin>\n<size>\n<b64 root>\n[other
 * lines\n]\n— <name> <b64(hint4 || sig)>\n..." (at most
 * TLOG_CHECKPOINT_MAX bytes). Requires a non-empty origin, a decimal size
 * without sign or leading zero, a 32-byte root, at least one signature
 * line. Errors are WB_EUSAGE.
 */
int tlog_checkpoint_parse(const char *text, size_t len,
			  struct tlog_checkpoint *cp, struct wb_err *e);

/*
 * Verify that KEY signed CP. The log's key hint is computed from the key
 * as Rekor does: ECDSA (Rekor v1 and v2): the first 4 bytes of SHA-256 of
 * the DER SPKI (= the v1 log id); Ed25519: the first 4 bytes of
 * SHA-256(ORIGIN || "\n" || 0x01 || raw key) (= the v2 log id).
 * ORIGIN NULL: Rekor v1 rules: the origin ("<host> - <tree id>") and the
 * signature names are not pinned, and every signature line must carry the
 * log's hint and verify (as rekor's SignedNote.Verify). ORIGIN set (Rekor
 * v2): cp->origin must equal ORIGIN; lines named ORIGIN with the log's
 * hint must verify, at least one must exist; other lines (witness
 * cosignatures, other keys) are ignored. WB_EVERIFY naming why.
 */
int tlog_checkpoint_verify(const struct tlog_checkpoint *cp,
			   const struct tlog_key *key, const char *origin,
			   struct wb_err *e);

/* The Rekor v2 checkpoint origin of KEY: KEY->origin, else the host of
 * KEY->base_url (no scheme, port or path). Writes at most OUTSZ bytes;
 * returns 0, or -1 (WB_EUSAGE) when there is no usable name. */
int tlog_key_origin(const struct tlog_key *key, char *out, size_t outsz,
		    struct wb_err *e);

/* --- the whole entry ---------------------------------------------------- */

enum tlog_verify_flags {
	TLOG_REQUIRE_SET = 1 << 0,    /* fail when there is no inclusion promise */
	TLOG_REQUIRE_PROOF = 1 << 1,  /* fail when there is no inclusion proof */
};

struct tlog_result {
	const struct tlog_key *key;   /* the trusted log that holds the entry */
	int64_t log_index;
	int rekor_v2;                 /* kindVersion is a Rekor v2 one (0.0.2
					 hashedrekord/dsse) */
	int time_proven;              /* 1: integrated_time is covered by a
					 verified SET (Rekor v1); 0: no trusted
					 time here, take it from RFC 3161
					 timestamps (always 0 for Rekor v2) */
	int64_t integrated_time;      /* meaningful only when time_proven */
	int proof_verified;           /* inclusion proof + checkpoint verified */
	uint64_t tree_size;           /* of the verified proof */
};

/*
 * Verify ENT against the trusted logs KEYS:
 *   - the log id names a log of KEYS, else WB_EVERIFY "unknown log";
 *   - body kind/apiVersion equal kindVersion;
 *   - a SET, when present, verifies (a bad one fails even if not
 *     required); integratedTime must not be after NOW and the log key must
 *     be valid at it;
 *   - an inclusion proof, when present, verifies: proof logIndex equals
 *     the entry logIndex for Rekor v2 (for Rekor v1 the proof index is the
 *     index in the shard and may differ), the leaf hash of the body, the
 *     Merkle path, and the checkpoint signed by the log whose size and root
 *     equal the proof's treeSize and rootHash (Rekor v1 rules when the
 *     entry is v1, v2 rules with tlog_key_origin otherwise);
 *   - Rekor v2 entries need a proof, and carry no SET;
 *   - an entry with neither SET nor proof fails; FLAGS may require either.
 * RES is filled on success (zeroed on failure). NOW is the current time
 * (Unix seconds). Errors are prefixed "transparency log entry <index>: ".
 */
int tlog_entry_verify(const struct tlog_entry *ent, const struct tlog_key *keys,
		      size_t nkeys, unsigned flags, int64_t now,
		      struct tlog_result *res, struct wb_err *e);

/* --- canonicalized body --------------------------------------------------- */

enum tlog_kind {
	TLOG_KIND_HASHEDREKORD = 1,   /* 0.0.1 (v1), 0.0.2 (v2) */
	TLOG_KIND_DSSE,               /* 0.0.1 (v1), 0.0.2 (v2) */
	TLOG_KIND_INTOTO,             /* 0.0.2 */
};

/* A key or certificate that the body binds (the verifier of a signature).
 * Exactly one of cert / key-only is the case; pkey is always set. */
struct tlog_verifier {
	X509 *cert;                   /* owned; NULL when the body holds a bare
					 public key */
	EVP_PKEY *pkey;               /* owned; the cert's key or the bare key */
};

struct tlog_body_sig {
	unsigned char *sig;           /* owned; raw signature bytes (intoto's
					 double base64 already undone) */
	size_t sig_len;
	struct tlog_verifier verifier;
};

struct tlog_body {
	enum tlog_kind kind;
	char version[16];             /* apiVersion */
	/* hashedrekord: the artifact digest */
	char digest_alg[16];          /* "sha256", "sha384", "sha512" */
	unsigned char digest[64];
	size_t digest_len;
	/* dsse, intoto: hashes of the payload and (where present) of the
	 * envelope, SHA-256 */
	int has_payload_hash;
	unsigned char payload_hash[TLOG_HASH_LEN];
	int has_envelope_hash;        /* dsse 0.0.1 envelopeHash, intoto "hash" */
	unsigned char envelope_hash[TLOG_HASH_LEN];
	/* signatures with their verifiers: one for hashedrekord, one or more
	 * for dsse / intoto */
	struct tlog_body_sig *sigs;   /* owned; nsigs of them */
	size_t nsigs;
};
void tlog_body_release(struct tlog_body *b);

/*
 * Parse ENT's canonicalized body (JSON) into B and check that its kind and
 * apiVersion equal ENT's kindVersion. Supported: hashedrekord 0.0.1/0.0.2,
 * dsse 0.0.1/0.0.2, intoto 0.0.2; anything else is WB_EUSAGE. A mismatch
 * with kindVersion is WB_EVERIFY. The caller compares B with the bundle
 * (digest, signature bytes, certificate or key, envelope/payload hashes).
 */
int tlog_body_parse(const struct tlog_entry *ent, struct tlog_body *b,
		    struct wb_err *e);

/*
 * What the bundle says the entry must bind, for tlog_body_match. The
 * caller keeps ownership of everything.
 */
struct tlog_expect {
	const unsigned char *signature;   /* messageSignature.signature, or
					     the DSSE envelope's signature */
	size_t signature_len;
	X509 *cert;                       /* the bundle's leaf certificate, or
					     NULL for a managed key */
	EVP_PKEY *pkey;                   /* the managed key when cert is NULL */
	/* message signature: the artifact digest (messageDigest) */
	const char *digest_alg;           /* "sha256"/"sha384"/"sha512"; NULL
					     for a DSSE bundle */
	const unsigned char *digest;
	size_t digest_len;
	/* DSSE: the envelope's payloadType and decoded payload */
	const char *payload_type;         /* NULL for a message signature */
	const unsigned char *payload;
	size_t payload_len;
};

/*
 * Check that body B binds what X says (WB_EVERIFY naming the field), in
 * this order:
 *   hashedrekord: the digest (algorithm and bytes) equals X's digest; for
 *     a DSSE bundle logged as hashedrekord 0.0.2 (Rekor v2), the digest is
 *     that of the DSSE PAE(payload_type, payload) with the body's
 *     algorithm;
 *   dsse / intoto: the payload hash equals SHA-256(payload);
 *   all kinds: one of the body's signatures equals X's signature bytes,
 *     and its verifier equals X's certificate (DER) or, for a managed
 *     key, X's key (a body holding a certificate does not match a key).
 */
int tlog_body_match(const struct tlog_body *b, const struct tlog_expect *x,
		    struct wb_err *e);

#endif
