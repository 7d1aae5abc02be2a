/*
 * Sigstore verification (sigstore.h): bundle parsing, content signatures,
 * the calls into trust/tlog.h and trust/timestamp.h, and the policy.
 * Certificates are in sigstore_cert.c, the trusted root in sigstore_root.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "lib/base64.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/json.h"
#include "trust/digest.h"
#include "trust/sigstore.h"
#include "trust/sigstore_cert.h"
#include "trust/timestamp.h"
#include "trust/tlog.h"

#define BUNDLE_MT_LEGACY "application/vnd.dev.sigstore.bundle+json;version=0."
#define BUNDLE_MT_PREFIX "application/vnd.dev.sigstore.bundle.v0."
#define INTOTO_PAYLOAD_TYPE "application/vnd.in-toto+json"

/* One bundle (or detached signature), decoded. Owns everything. */
struct sb {
	json_t *json;
	int minor;                       /* 1..3; 0 detached */
	STACK_OF(X509) *certs;           /* leaf first; NULL for a key */
	int has_key_material;            /* verificationMaterial.publicKey */
	enum sigstore_content content;
	int has_digest;
	const EVP_MD *digest_md;         /* messageDigest.algorithm; NULL: none */
	unsigned char digest[EVP_MAX_MD_SIZE]; /* messageDigest.digest */
	size_t digest_len;
	/* the artifact's digest under digest_md (SHA-256 when none is
	 * declared): what a hashedrekord entry must log */
	unsigned char art_digest[EVP_MAX_MD_SIZE];
	size_t art_digest_len;
	unsigned char *sig;              /* message or DSSE signature */
	size_t sig_len;
	char *payload_type;              /* DSSE */
	unsigned char *payload;
	size_t payload_len;
	struct tlog_entry *entries;
	size_t nentries;
	unsigned char **tss;             /* RFC 3161 timestamps (DER) */
	size_t *ts_lens;
	size_t ntss;
};

static void sb_release(struct sb *b)
{
	size_t i;

	json_decref(b->json);
	sk_X509_pop_free(b->certs, X509_free);
	free(b->sig);
	free(b->payload_type);
	free(b->payload);
	for (i = 0; i < b->nentries; i++)
		tlog_entry_release(&b->entries[i]);
	free(b->entries);
	for (i = 0; i < b->ntss; i++)
		free(b->tss[i]);
	free(b->tss);
	free(b->ts_lens);
	memset(b, 0, sizeof(*b));
}

static X509 *sb_der_cert(const json_t *obj, const char *where, struct wb_err *e)
{
	size_t len;
	unsigned char *der = json_get_b64(obj, "rawBytes", where, &len, e);
	const unsigned char *p = der;
	X509 *x;

	if (!der)
		return NULL;
	x = d2i_X509(NULL, &p, (long)len);
	if (x && p != der + len) {
		X509_free(x);
		x = NULL;
	}
	free(der);
	if (!x)
		wb_error(e, WB_EUSAGE, "%s: not a DER certificate", where);
	return x;
}

/*
 * @where the rules from sigstore-go's 2026 fixes (docs/sigstore.md "Rules
 *   from sigstore-go's 2026 fixes") -- a media type cannot lower the proof
 *   requirement
 */
static int sb_media_type(const char *mt, int *minor)
{
	size_t n;

	if (!strncmp(mt, BUNDLE_MT_LEGACY, strlen(BUNDLE_MT_LEGACY))) {
		mt += strlen(BUNDLE_MT_LEGACY);
		n = strlen(mt);
		if (n != 1)
			return -1;
	} else if (!strncmp(mt, BUNDLE_MT_PREFIX, strlen(BUNDLE_MT_PREFIX))) {
		mt += strlen(BUNDLE_MT_PREFIX);
		if (strcmp(mt + 1, "+json"))
			return -1;
		/* the ".v0.N+json" spelling was introduced with v0.3: no
		 * client writes it for v0.1 or v0.2 (sigstore-go
		 * pkg/bundle/bundle.go MediaTypeString spells those as
		 * "+json;version=0.N"), so a v0.1 in it is a forged label */
		if (mt[0] < '3')
			return -1;
	} else {
		return -1;
	}
	if (mt[0] < '1' || mt[0] > '3')
		return -1;
	*minor = mt[0] - '0';
	return 0;
}

/*
 * The media type says which log proof every entry needs: v0.1 an inclusion
 * promise, v0.2 and later an inclusion proof (sigstore-go
 * pkg/bundle/bundle.go validate, commit 4594ab4c, 2026-06-09). The label
 * is the bundle's own word, so it must not be what lowers that
 * requirement: a bundle whose material only v0.3 can hold
 * (verificationMaterial.certificate, a single leaf) is a v0.3 bundle, and
 * under a v0.1 or v0.2 label it is refused rather than checked with v0.1's
 * promise-only rule. The converse rule is sigstore-go's own: v0.3 and later
 * may not carry an x509CertificateChain.
 * @where the rules from sigstore-go's 2026 fixes (docs/sigstore.md "Rules
 *   from sigstore-go's 2026 fixes") -- a log key used only inside its window
 */
static int sb_shape(const json_t *vm, const struct sb *b, struct wb_err *e)
{
	if (b->minor < 3 && json_object_get(vm, "certificate"))
		return wb_error(e, WB_EVERIFY,
				"bundle: a v0.%d media type on a v0.3 bundle (verificationMaterial.certificate): the label would lower the inclusion-proof requirement",
				b->minor);
	if (b->minor >= 3 && json_object_get(vm, "x509CertificateChain"))
		return wb_error(e, WB_EVERIFY,
				"bundle: a v0.%d bundle cannot hold an x509CertificateChain",
				b->minor);
	return 0;
}

static int sb_material(const json_t *vm, struct sb *b, struct wb_err *e)
{
	const json_t *chain = json_object_get(vm, "x509CertificateChain");
	const json_t *cert = json_object_get(vm, "certificate");
	const json_t *key = json_object_get(vm, "publicKey");
	int n = (chain != NULL) + (cert != NULL) + (key != NULL);
	size_t i;

	if (n != 1)
		return wb_error(e, WB_EUSAGE,
				"verificationMaterial: expected exactly one of x509CertificateChain, certificate and publicKey");
	if (key) {
		if (!json_is_object(key))
			return wb_error(e, WB_EUSAGE, "verificationMaterial.publicKey: not an object");
		b->has_key_material = 1;
		return 0;
	}
	b->certs = sk_X509_new_null();
	if (cert) {
		X509 *x = sb_der_cert(cert, "verificationMaterial.certificate", e);

		if (!x)
			return -1;
		sk_X509_push(b->certs, x);
		return 0;
	}
	chain = json_object_get(chain, "certificates");
	if (!json_is_array(chain) || !json_array_size(chain))
		return wb_error(e, WB_EUSAGE,
				"verificationMaterial.x509CertificateChain: no certificate");
	for (i = 0; i < json_array_size(chain); i++) {
		X509 *x = sb_der_cert(json_array_get(chain, i),
				      "verificationMaterial.x509CertificateChain", e);

		if (!x)
			return -1;
		sk_X509_push(b->certs, x);
	}
	return 0;
}

/* The protobuf-specs HashAlgorithm names a message digest may declare. */
static const EVP_MD *pb_hash_md(const char *name)
{
	if (!strcmp(name, "SHA2_256"))
		return EVP_sha256();
	if (!strcmp(name, "SHA2_384"))
		return EVP_sha384();
	if (!strcmp(name, "SHA2_512"))
		return EVP_sha512();
	return NULL;
}

static int sb_content(const json_t *root, struct sb *b, struct wb_err *e)
{
	const json_t *ms = json_object_get(root, "messageSignature");
	const json_t *env = json_object_get(root, "dsseEnvelope");

	if (!ms == !env)
		return wb_error(e, WB_EUSAGE,
				"expected exactly one of messageSignature and dsseEnvelope");
	if (ms) {
		const json_t *md = json_object_get(ms, "messageDigest");

		b->content = SIGSTORE_CONTENT_MESSAGE;
		if (md) {
			const json_t *alg = json_object_get(md, "algorithm");
			unsigned char *d;
			size_t len;

			if (!json_is_string(alg))
				return wb_error(e, WB_EUSAGE, "messageSignature.messageDigest: missing algorithm");
			b->digest_md = pb_hash_md(json_string_value(alg));
			if (!b->digest_md)
				return wb_error(e, WB_EUSAGE,
						"messageSignature.messageDigest: unsupported algorithm '%s'",
						json_string_value(alg));
			d = json_get_b64(md, "digest", "messageSignature.messageDigest", &len, e);
			if (!d)
				return -1;
			if (len != (size_t)EVP_MD_get_size(b->digest_md)) {
				free(d);
				return wb_error(e, WB_EUSAGE,
						"messageSignature.messageDigest: %zu bytes, not the %d of %s",
						len, EVP_MD_get_size(b->digest_md),
						json_string_value(alg));
			}
			memcpy(b->digest, d, len);
			b->digest_len = len;
			b->has_digest = 1;
			free(d);
		}
		b->sig = json_get_b64(ms, "signature", "messageSignature", &b->sig_len, e);
		return b->sig ? 0 : -1;
	} else {
		const json_t *pt = json_object_get(env, "payloadType");
		const json_t *sigs = json_object_get(env, "signatures");

		b->content = SIGSTORE_CONTENT_DSSE;
		if (!json_is_string(pt))
			return wb_error(e, WB_EUSAGE, "dsseEnvelope: missing payloadType");
		b->payload_type = xstrdup(json_string_value(pt));
		b->payload = json_get_b64(env, "payload", "dsseEnvelope", &b->payload_len, e);
		if (!b->payload)
			return -1;
		if (!json_is_array(sigs) || json_array_size(sigs) != 1)
			return wb_error(e, WB_EUSAGE,
					"dsseEnvelope: expected exactly one signature");
		b->sig = json_get_b64(json_array_get(sigs, 0), "sig", "dsseEnvelope.signatures[0]",
				&b->sig_len, e);
		return b->sig ? 0 : -1;
	}
}

static int sb_parse(const char *text, size_t len, struct sb *b, struct wb_err *e)
{
	json_error_t jerr;
	const json_t *mt, *vm, *arr, *tvd;
	size_t i;

	memset(b, 0, sizeof(*b));
	if (len > SIGSTORE_INPUT_MAX)
		return wb_error(e, WB_EUSAGE, "bundle larger than %u bytes", SIGSTORE_INPUT_MAX);
	b->json = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!b->json)
		return wb_error(e, WB_EUSAGE, "bundle: line %d: %s", jerr.line, jerr.text);
	if (!json_is_object(b->json))
		return wb_error(e, WB_EUSAGE, "bundle: not a JSON object");
	mt = json_object_get(b->json, "mediaType");
	if (!json_is_string(mt))
		return wb_error(e, WB_EUSAGE, "bundle: missing mediaType");
	if (sb_media_type(json_string_value(mt), &b->minor) < 0)
		return wb_error(e, WB_EUSAGE, "bundle: unsupported media type '%s'",
				json_string_value(mt));
	vm = json_object_get(b->json, "verificationMaterial");
	if (!json_is_object(vm))
		return wb_error(e, WB_EUSAGE, "bundle: missing verificationMaterial");
	if (sb_material(vm, b, e) < 0 || sb_shape(vm, b, e) < 0 ||
	    sb_content(b->json, b, e) < 0)
		goto fail;

	arr = json_object_get(vm, "tlogEntries");
	if (arr && !json_is_array(arr))
		return wb_error(e, WB_EUSAGE, "bundle: tlogEntries: not an array");
	b->nentries = json_array_size(arr);
	b->entries = xcalloc(b->nentries + 1, sizeof(*b->entries));
	for (i = 0; i < b->nentries; i++)
		if (tlog_entry_from_bundle(json_array_get(arr, i), &b->entries[i], e) < 0) {
			wb_error_prefix(e, "bundle: tlogEntries[%zu]", i);
			goto fail;
		}

	tvd = json_object_get(vm, "timestampVerificationData");
	arr = json_object_get(tvd, "rfc3161Timestamps");
	if (arr && !json_is_array(arr))
		return wb_error(e, WB_EUSAGE, "bundle: rfc3161Timestamps: not an array");
	b->ntss = json_array_size(arr);
	b->tss = xcalloc(b->ntss + 1, sizeof(*b->tss));
	b->ts_lens = xcalloc(b->ntss + 1, sizeof(*b->ts_lens));
	for (i = 0; i < b->ntss; i++) {
		b->tss[i] = json_get_b64(json_array_get(arr, i), "signedTimestamp",
				   "bundle: rfc3161Timestamps", &b->ts_lens[i], e);
		if (!b->tss[i])
			goto fail;
	}
	return 0;
fail:
	if (!strncmp(e->msg, "bundle", 6))
		return -1;
	wb_error_prefix(e, "bundle");
	return -1;
}

/*
 * A detached signature declares no hash: its hashedrekord entry does
 * (spec.data.hash.algorithm), and the signature is checked under that hash,
 * the artifact's digest under it is what the entry must log. A key's size
 * never chooses: sigstore-python 1.x signed SHA-256 under P-384 keys, and
 * its Rekor entries say "sha256". sigstore-go (commit 4594ab4c, 2026-06-09)
 * differs: pkg/verify/signature.go compatSignatureVerifier tries the key's
 * default hash and then SHA-256 for P-384/P-521 keys, and pkg/verify/tlog.go
 * VerifyTlogEntry requires the hashedrekord's algorithm to equal the message
 * digest's. winbuild takes the logged algorithm as the only hash, the
 * stricter reading: a signature that verifies only under another hash than
 * the one the log recorded fails. Other kinds declare nothing here and are
 * refused by body_check.
 * @where the rules from sigstore-go's 2026 fixes (docs/sigstore.md "Rules
 *   from sigstore-go's 2026 fixes") -- a detached signature's hash from its
 *   entry
 */
static int sb_entry_hash(const struct tlog_entry *ent, struct sb *b, struct wb_err *e)
{
	struct tlog_body body;
	int ret = 0;

	memset(&body, 0, sizeof(body));
	if (strcmp(ent->kind, "hashedrekord"))
		return 0;
	if (tlog_body_parse(ent, &body, e) < 0)
		return -1;
	b->digest_md = !strcmp(body.digest_alg, "sha256") ? EVP_sha256() :
		       !strcmp(body.digest_alg, "sha384") ? EVP_sha384() :
		       !strcmp(body.digest_alg, "sha512") ? EVP_sha512() : NULL;
	if (!b->digest_md)
		ret = wb_error(e, WB_EUSAGE, "hashedrekord: unsupported hash '%s'",
			       body.digest_alg);
	tlog_body_release(&body);
	return ret;
}

/* A detached signature (cosign sign-blob): base64 of the signature bytes. */
static int sb_detached(const struct sigstore_input *in, struct sb *b,
		       struct wb_err *e)
{
	size_t start = 0, end = in->signature_len;

	memset(b, 0, sizeof(*b));
	b->content = SIGSTORE_CONTENT_MESSAGE;
	while (start < end && strchr(" \t\r\n", in->signature[start]))
		start++;
	while (end > start && strchr(" \t\r\n", in->signature[end - 1]))
		end--;
	b->sig = b64_decode(in->signature + start, end - start, &b->sig_len);
	if (!b->sig || !b->sig_len)
		return wb_error(e, WB_EUSAGE, "signature: not base64");
	if (in->certificate) {
		X509 *x = sigstore_cert_read(in->certificate, in->certificate_len, e);

		if (!x) {
			wb_error_prefix(e, "certificate");
			return -1;
		}
		b->certs = sk_X509_new_null();
		sk_X509_push(b->certs, x);
	}
	b->entries = xcalloc(1, sizeof(*b->entries));
	if (in->tlog_entry) {
		if (tlog_entry_from_rekor_api(in->tlog_entry, in->tlog_entry_len,
					      &b->entries[0], e) < 0 ||
		    sb_entry_hash(&b->entries[0], b, e) < 0) {
			wb_error_prefix(e, "tlog entry");
			return -1;
		}
		b->nentries = 1;
	}
	return 0;
}

/* ---- signatures ---- */

static const EVP_MD *sig_md(EVP_PKEY *pk)
{
	switch (EVP_PKEY_get_base_id(pk)) {
	case EVP_PKEY_ED25519:
	case EVP_PKEY_ED448:
		return NULL;
	case EVP_PKEY_EC:
		if (EVP_PKEY_get_bits(pk) > 384)
			return EVP_sha512();
		if (EVP_PKEY_get_bits(pk) > 256)
			return EVP_sha384();
		return EVP_sha256();
	default:
		return EVP_sha256();
	}
}

/* Verify SIG over MSG (the whole message). */
static int sig_verify_msg(EVP_PKEY *pk, const unsigned char *msg, size_t len,
			  const unsigned char *sig, size_t siglen)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok = ctx && EVP_DigestVerifyInit(ctx, NULL, sig_md(pk), NULL, pk) == 1 &&
		 EVP_DigestVerify(ctx, sig, siglen, msg, len) == 1;

	EVP_MD_CTX_free(ctx);
	return ok;
}

/* The artifact's bytes, read from its path and checked to be the bytes
 * whose SHA-256 the caller gave. */
static int artifact_bytes(const struct sigstore_input *in, struct buf *bytes,
			  struct wb_err *e)
{
	unsigned char h[32];
	unsigned int hl = 32;

	if (!in->artifact_path)
		return wb_error(e, WB_EUSAGE,
				"this signature needs the artifact's bytes, and no path was given");
	if (fs_read_file(in->artifact_path, SIGSTORE_ED25519_FILE_MAX,
			 WB_EIO, bytes, e) < 0)
		return -1;
	EVP_Digest(bytes->ptr, bytes->len, h, &hl, EVP_sha256(), NULL);
	if (!digest_equal(h, in->artifact_sha256, 32)) {
		buf_release(bytes);
		return wb_error(e, WB_EIO, "'%s' changed while it was verified",
				in->artifact_path);
	}
	return 0;
}

/* A message signature's hash is the one its bundle declares
 * (messageDigest.algorithm), not the one the key's size suggests:
 * sigstore-python 1.x signed with SHA-256 under P-384 leaves.
 * @sigstore/verify does the same (bundle/message.js hashes with the
 * declared algorithm); sigstore-go (pkg/verify/signature.go
 * compatSignatureVerifier) tries the key's default and SHA-256 and treats
 * the declared digest as a hint it checks afterwards. Following the
 * declaration is the stricter of the two: a field that lies makes the
 * signature fail. With nothing declared (detached cosign signatures) the
 * key's default applies. Ed25519 signs the bytes themselves. */
static const EVP_MD *msg_sig_md(const struct sb *b, EVP_PKEY *pk)
{
	const EVP_MD *md = sig_md(pk);

	return md && b->digest_md ? b->digest_md : md;
}

/* The artifact's digest under the declared algorithm (SHA-256 if none):
 * what the messageDigest and a hashedrekord entry must hold. */
static int msg_art_digest(struct sb *b, const struct sigstore_input *in,
			  struct wb_err *e)
{
	const EVP_MD *md = b->digest_md ? b->digest_md : EVP_sha256();
	struct buf bytes = BUF_INIT;
	unsigned int len = 0;

	if (md == EVP_sha256()) {
		memcpy(b->art_digest, in->artifact_sha256, 32);
		b->art_digest_len = 32;
		return 0;
	}
	if (artifact_bytes(in, &bytes, e) < 0)
		return -1;
	EVP_Digest(bytes.ptr, bytes.len, b->art_digest, &len, md, NULL);
	b->art_digest_len = len;
	buf_release(&bytes);
	return 0;
}

/* Verify SIG over the artifact: over its digest when the signature's hash
 * is one we already hold (b->art_digest), else over its bytes. */
static int sig_verify_artifact(const struct sb *b, EVP_PKEY *pk,
			       const struct sigstore_input *in, struct wb_err *e)
{
	const EVP_MD *md = msg_sig_md(b, pk);
	const EVP_MD *held = b->digest_md ? b->digest_md : EVP_sha256();
	struct buf bytes = BUF_INIT;
	int ok;

	if (md && md == held) {
		EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(pk, NULL);

		ok = ctx && EVP_PKEY_verify_init(ctx) == 1 &&
		     EVP_PKEY_CTX_set_signature_md(ctx, md) == 1 &&
		     EVP_PKEY_verify(ctx, b->sig, b->sig_len, b->art_digest,
				     b->art_digest_len) == 1;
		EVP_PKEY_CTX_free(ctx);
	} else {
		if (artifact_bytes(in, &bytes, e) < 0)
			return -1;
		ok = sig_verify_msg(pk, (const unsigned char *)bytes.ptr, bytes.len,
				    b->sig, b->sig_len);
		buf_release(&bytes);
	}
	if (!ok)
		return wb_error(e, WB_EVERIFY, "signature does not verify over the artifact");
	return 0;
}

/* DSSE pre-authentication encoding. */
static void dsse_pae(const struct sb *b, struct buf *out)
{
	buf_addf(out, "DSSEv1 %zu %s %zu ", strlen(b->payload_type),
		 b->payload_type, b->payload_len);
	buf_add(out, b->payload, b->payload_len);
}

/* An in-toto statement must name the artifact: some subject's sha256. */
static int dsse_subject(const struct sb *b, const unsigned char *sha256,
			struct wb_err *e)
{
	json_error_t jerr;
	json_t *st;
	const json_t *subj;
	char hex[65];
	size_t i;
	int found = 0;

	if (strcmp(b->payload_type, INTOTO_PAYLOAD_TYPE))
		return wb_error(e, WB_EVERIFY,
				"DSSE payload type '%s' is not an in-toto statement",
				b->payload_type);
	st = json_loadb((const char *)b->payload, b->payload_len, 0, &jerr);
	if (!st)
		return wb_error(e, WB_EUSAGE, "DSSE payload: line %d: %s",
				jerr.line, jerr.text);
	digest_hex(sha256, 32, hex);
	subj = json_object_get(st, "subject");
	for (i = 0; json_is_array(subj) && i < json_array_size(subj); i++) {
		const json_t *d = json_object_get(json_object_get(json_array_get(subj, i),
								  "digest"), "sha256");

		if (json_is_string(d) && !strcasecmp(json_string_value(d), hex))
			found = 1;
	}
	i = json_is_array(subj);
	json_decref(st);
	if (!i)
		return wb_error(e, WB_EVERIFY, "in-toto statement has no subject");
	if (!found)
		return wb_error(e, WB_EVERIFY,
				"no subject of the in-toto statement has the artifact's sha256 %s",
				hex);
	return 0;
}

static int content_verify(const struct sb *b, EVP_PKEY *pk,
			  const struct sigstore_input *in, struct wb_err *e)
{
	if (b->content == SIGSTORE_CONTENT_MESSAGE) {
		if (b->has_digest && (b->digest_len != b->art_digest_len ||
				      !digest_equal(b->digest, b->art_digest, b->digest_len)))
			return wb_error(e, WB_EVERIFY,
					"the bundle's message digest is not the artifact's %s",
					EVP_MD_get0_name(b->digest_md));
		return sig_verify_artifact(b, pk, in, e);
	} else {
		struct buf pae = BUF_INIT;
		int ok;

		dsse_pae(b, &pae);
		ok = sig_verify_msg(pk, (const unsigned char *)pae.ptr, pae.len,
				    b->sig, b->sig_len);
		buf_release(&pae);
		if (!ok)
			return wb_error(e, WB_EVERIFY,
					"DSSE signature does not verify over the envelope");
		return dsse_subject(b, in->artifact_sha256, e);
	}
}

/* ---- transparency log bodies ---- */

/* The entry must record this signature, this material and this content. */
static int body_check(const struct tlog_entry *ent, const struct sb *b,
		      X509 *leaf, EVP_PKEY *pk, struct wb_err *e)
{
	struct tlog_body body;
	struct tlog_expect x;
	int ret;

	memset(&body, 0, sizeof(body));
	memset(&x, 0, sizeof(x));
	x.signature = b->sig;
	x.signature_len = b->sig_len;
	x.cert = leaf;
	x.pkey = leaf ? NULL : pk;
	if (b->content == SIGSTORE_CONTENT_MESSAGE) {
		x.digest_alg = b->digest_md == EVP_sha384() ? "sha384" :
			       b->digest_md == EVP_sha512() ? "sha512" : "sha256";
		x.digest = b->art_digest;
		x.digest_len = b->art_digest_len;
	} else {
		x.payload_type = b->payload_type;
		x.payload = b->payload;
		x.payload_len = b->payload_len;
	}
	ret = tlog_body_parse(ent, &body, e);
	if (!ret)
		ret = tlog_body_match(&body, &x, e);
	tlog_body_release(&body);
	return ret;
}

/* ---- the whole ---- */

/*
 * Entry I (ENT, in log KEY) verified: count its log in LOGS (NLOGS
 * distinct so far). A threshold of logs is met by that many distinct logs,
 * never by several entries of one log (sigstore-go pkg/verify/tlog.go
 * VerifyTlogEntry, commit dbb07e62 "Prevent multi-log threshold bypasses
 * via single compromised log", 2026-05-27: one compromised log could mint
 * entries at many indexes). The same entry twice (same log, same index) is
 * refused, as sigstore-go refuses "duplicate tlog entries".
 * @where the rules from sigstore-go's 2026 fixes (docs/sigstore.md "Rules
 *   from sigstore-go's 2026 fixes") -- a threshold of distinct logs
 *   (`--tlog-threshold`; `tests/cli/sigstore_fixes.bats`)
 */
static int sb_count_log(const struct tlog_key **logs, size_t *nlogs,
			const struct tlog_key *key, const struct tlog_entry *ent,
			const struct tlog_entry *all, size_t i, struct wb_err *e)
{
	size_t k;

	for (k = 0; k < i; k++)
		if (all[k].log_index == ent->log_index &&
		    !memcmp(all[k].log_id, ent->log_id, TLOG_HASH_LEN))
			return wb_error(e, WB_EVERIFY,
					"transparency-log entries %zu and %zu are the same entry (log index %lld)",
					k, i, (long long)ent->log_index);
	for (k = 0; k < *nlogs; k++)
		if (logs[k] == key)
			return 0;
	logs[(*nlogs)++] = key;
	return 0;
}

static EVP_PKEY *policy_key(const struct sigstore_input *in, struct wb_err *e)
{
	BIO *bio = BIO_new_mem_buf(in->key_pem, (int)in->key_pem_len);
	EVP_PKEY *pk = bio ? PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL) : NULL;

	BIO_free(bio);
	if (!pk)
		wb_error(e, WB_EUSAGE, "key: not a PEM public key");
	return pk;
}

static void ev_time(struct sigstore_evidence *ev, int64_t t)
{
	if (!ev->signed_time || t < ev->signed_time)
		ev->signed_time = t;
}

/* Keyless: the certificate at every verified time, and the policy. */
static int cert_verify(X509 *leaf, const struct sigstore_input *in,
		       const int64_t *times, size_t ntimes, int64_t now,
		       struct sigstore_evidence *ev, struct wb_err *e)
{
	char **sans = NULL, *issuer = NULL;
	X509 *ca = NULL;
	size_t i;
	int ret = -1, found = 0;

	if (!ntimes)
		return wb_error(e, WB_EVERIFY,
				"no verified signing time (no transparency-log entry with a signed time, no trusted timestamp): a short-lived certificate proves nothing without one");
	for (i = 0; i < ntimes; i++) {
		X509_free(ca);
		ca = NULL;
		if (sigstore_cert_verify_chain(leaf, in->root, times[i], &ca, e) < 0)
			goto out;
	}
	if (sigstore_cert_verify_sct(leaf, ca, in->root, now, e) < 0)
		goto out;
	sigstore_cert_identity(leaf, &sans, &issuer, e);
	for (i = 0; sans[i]; i++)
		if (!strcmp(sans[i], in->identity))
			found = 1;
	if (!found) {
		wb_error(e, WB_EVERIFY, "certificate identity '%s' is not '%s'",
			 sans[0] ? sans[0] : "(none)", in->identity);
		goto out;
	}
	if (!issuer || strcmp(issuer, in->issuer)) {
		wb_error(e, WB_EVERIFY, "certificate issuer '%s' is not '%s'",
			 issuer ? issuer : "(none)", in->issuer);
		goto out;
	}
	ev->identity = xstrdup(in->identity);
	ev->issuer = issuer;
	issuer = NULL;
	ret = 0;
out:
	X509_free(ca);
	sigstore_strv_free(sans);
	free(issuer);
	return ret;
}

static int key_fingerprint(EVP_PKEY *pk, char out[65])
{
	unsigned char *der = NULL, h[32];
	unsigned int hl = 32;
	int len = i2d_PUBKEY(pk, &der);

	if (len <= 0)
		return -1;
	EVP_Digest(der, (size_t)len, h, &hl, EVP_sha256(), NULL);
	OPENSSL_free(der);
	digest_hex(h, 32, out);
	return 0;
}

/*
 * @where where a Sigstore bundle or cosign signature is checked (offline,
 *   pinned trusted root; docs/sigstore.md) -- bundles v0.1-v0.3, DSSE in-toto
 *   subjects, identity and issuer, managed keys
 */
int sigstore_verify(const struct sigstore_input *in,
		    struct sigstore_evidence *ev, struct wb_err *e)
{
	struct sb b;
	EVP_PKEY *pk = NULL, *key = NULL;
	X509 *leaf = NULL;
	int64_t now = in->now ? (int64_t)in->now : (int64_t)time(NULL);
	int64_t *times = NULL, *ts_times = NULL;
	const struct tlog_key **untimed = NULL, **logs = NULL;
	size_t ntimes = 0, nv2 = 0, nuntimed = 0, nlogs = 0, i;
	int ret = -1;

	memset(ev, 0, sizeof(*ev));
	memset(&b, 0, sizeof(b));
	if (!in->root || !in->artifact_sha256)
		return wb_error(e, WB_EUSAGE, "sigstore: no trusted root or artifact digest");
	if (!in->key_pem == !(in->identity && in->issuer))
		return wb_error(e, WB_EUSAGE,
				"sigstore: give a key, or an identity and an issuer");
	if (!in->bundle == !in->signature)
		return wb_error(e, WB_EUSAGE, "sigstore: give a bundle or a signature");
	if (in->key_pem) {
		key = policy_key(in, e);
		if (!key)
			return -1;
	}

	/* 1. the bundle */
	if ((in->bundle ? sb_parse(in->bundle, in->bundle_len, &b, e)
			: sb_detached(in, &b, e)) < 0)
		goto out;
	ev->bundle_minor = b.minor;
	ev->content = b.content;
	if (b.content == SIGSTORE_CONTENT_MESSAGE && msg_art_digest(&b, in, e) < 0)
		goto out;

	/* 2. the material against the policy */
	if (b.certs) {
		if (key) {
			wb_error(e, WB_EVERIFY,
				 "signed with a certificate, but a key was pinned");
			goto out;
		}
		leaf = sk_X509_value(b.certs, 0);
		for (i = 1; i < (size_t)sk_X509_num(b.certs); i++) {
			X509 *x = sk_X509_value(b.certs, i);

			if (X509_check_issued(x, x) == X509_V_OK) {
				wb_error(e, WB_EVERIFY,
					 "the bundle's certificate chain holds a root certificate");
				goto out;
			}
		}
		pk = X509_get0_pubkey(leaf);
		if (!pk) {
			wb_error(e, WB_EUSAGE, "cannot read the certificate's key");
			goto out;
		}
		ev->material = SIGSTORE_MATERIAL_CERTIFICATE;
	} else {
		if (!key) {
			wb_error(e, WB_EVERIFY,
				 "signed with a key, but an identity was required and no key was given");
			goto out;
		}
		pk = key;
		ev->material = SIGSTORE_MATERIAL_KEY;
		key_fingerprint(pk, ev->key_sha256);
	}

	/* 3. transparency-log entries and timestamps: the signing times */
	times = xcalloc(b.nentries + b.ntss + 1, sizeof(*times));
	ts_times = xcalloc(b.ntss + 1, sizeof(*ts_times));
	untimed = xcalloc(b.nentries + 1, sizeof(*untimed));
	logs = xcalloc(b.nentries + 1, sizeof(*logs));
	if (in->bundle && !b.nentries) {
		wb_error(e, WB_EVERIFY, "the bundle has no transparency-log entry");
		goto out;
	}
	for (i = 0; i < b.nentries; i++) {
		struct tlog_result res;
		unsigned flags = b.minor == 1 ? TLOG_REQUIRE_SET :
				 b.minor >= 2 ? TLOG_REQUIRE_PROOF : 0;

		memset(&res, 0, sizeof(res));
		if (tlog_entry_verify(&b.entries[i], in->root->tlogs, in->root->ntlogs,
				      flags, now, &res, e) < 0 ||
		    body_check(&b.entries[i], &b, leaf, pk, e) < 0) {
			wb_error_prefix(e, "transparency-log entry %zu", i);
			goto out;
		}
		if (res.time_proven)
			times[ntimes++] = res.integrated_time;
		else
			untimed[nuntimed++] = res.key;
		if (res.rekor_v2)
			nv2++;
		if (sb_count_log(logs, &nlogs, res.key, &b.entries[i], b.entries, i, e) < 0)
			goto out;
		if (!ev->has_tlog) {
			ev->has_tlog = 1;
			ev->log_index = (long long)b.entries[i].log_index;
			ev->integrated_time = res.time_proven ?
				(long long)res.integrated_time : 0;
			digest_hex(b.entries[i].log_id, TLOG_HASH_LEN, ev->log_id);
			ev->tlog_kind = xasprintf("%s %s", b.entries[i].kind,
						  b.entries[i].version);
		}
	}
	for (i = 0; i < b.ntss; i++) {
		struct timestamp_result tr;

		if (timestamp_verify(b.tss[i], b.ts_lens[i], b.sig, b.sig_len,
				     in->root->tsas, in->root->ntsas, &tr, e) < 0) {
			wb_error_prefix(e, "timestamp %zu", i);
			goto out;
		}
		times[ntimes++] = tr.gen_time;
		ts_times[ev->ntimestamps++] = tr.gen_time;
	}
	if (nv2 && !ev->ntimestamps) {
		wb_error(e, WB_EVERIFY,
			 "a Rekor v2 entry needs a trusted timestamp, and the bundle has none");
		goto out;
	}
	/* an entry without a signed time (Rekor v2, or a Rekor v1 entry with
	 * an inclusion proof and no SET) was made when the trusted timestamps
	 * say: its log's key must have been valid then. A key of the trusted
	 * root is used only inside its validFor window (sigstore-go
	 * pkg/root/trusted_material.go ExpiringKey.ValidAtTime; the
	 * verification-time side is pkg/verify/signed_entity.go, commit
	 * 4594ab4c "Check signature time against public key validity window",
	 * 2026-06-09, GHSA-wqqc-jjcq-vfxm) */
	for (i = 0; i < nuntimed; i++) {
		size_t k;

		for (k = 0; k < (size_t)ev->ntimestamps; k++)
			if (!tlog_key_valid_at(untimed[i], ts_times[k])) {
				wb_error(e, WB_EVERIFY,
					 "the transparency log's key was not valid at the timestamp's time");
				goto out;
			}
	}
	if (nlogs < in->tlog_threshold) {
		wb_error(e, WB_EVERIFY,
			 "%zu distinct transparency log%s, %u required (entries in one log count once)",
			 nlogs, nlogs == 1 ? "" : "s", in->tlog_threshold);
		goto out;
	}
	for (i = 0; i < ntimes; i++)
		ev_time(ev, times[i]);
	/* the recipe's explicit opt-out (cosign `tlog: none`): no proof of
	 * when it was signed, so the chain is checked at the certificate's
	 * notBefore (not a signed time: the evidence records none) */
	if (in->no_tlog && leaf && !in->bundle && !ntimes) {
		struct tm tm;

		if (!ASN1_TIME_to_tm(X509_get0_notBefore(leaf), &tm)) {
			wb_error(e, WB_EUSAGE, "cannot read the certificate's notBefore");
			goto out;
		}
		times[ntimes++] = (int64_t)timegm(&tm);
	}

	/* 4. the certificate at those times, and the policy */
	if (leaf && cert_verify(leaf, in, times, ntimes, now, ev, e) < 0)
		goto out;

	/* 5. the content */
	if (content_verify(&b, pk, in, e) < 0)
		goto out;
	ret = 0;
out:
	free(times);
	free(ts_times);
	free(untimed);
	free(logs);
	EVP_PKEY_free(key);
	sb_release(&b);
	if (ret < 0)
		sigstore_evidence_release(ev);
	return ret;
}

/*
 * @where where a Kubernetes cosign signature is checked (`.sig` + `.cert` +
 *   Rekor entry, `tlog: none`)
 */
int sigstore_verify_entries(struct sigstore_input *in, const char *entries, size_t len,
			    struct sigstore_evidence *ev, char **chosen, size_t *nentries,
			    struct wb_err *e)
{
	json_t *all = json_loadb(entries, len, JSON_REJECT_DUPLICATES, NULL);
	struct wb_err first = WB_ERR_INIT;
	const char *uuid;
	json_t *val;
	int ret = -1;

	*chosen = NULL;
	*nentries = json_object_size(all);
	memset(ev, 0, sizeof(*ev));
	if (!json_is_object(all) || !*nentries) {
		json_decref(all);
		return wb_error(e, json_is_object(all) ? WB_EVERIFY : WB_EUSAGE,
				json_is_object(all) ? "no transparency-log entry" :
				"the transparency-log entries are not a JSON object");
	}
	json_object_foreach(all, uuid, val) {
		json_t *one = json_object();
		struct wb_err ei = WB_ERR_INIT;
		char *text;

		json_object_set(one, uuid, val);
		text = json_dumps(one, JSON_COMPACT);
		json_decref(one);
		in->tlog_entry = text;
		in->tlog_entry_len = strlen(text);
		sigstore_evidence_release(ev);
		if (sigstore_verify(in, ev, &ei) == 0) {
			*chosen = text;
			ret = 0;
			break;
		}
		if (!first.code)
			first = ei;
		free(text);
	}
	in->tlog_entry = NULL;
	in->tlog_entry_len = 0;
	json_decref(all);
	if (ret < 0)
		*e = first;
	return ret;
}

void sigstore_evidence_release(struct sigstore_evidence *ev)
{
	free(ev->identity);
	free(ev->issuer);
	free(ev->tlog_kind);
	memset(ev, 0, sizeof(*ev));
}

static const char *const material_names[] = { "none", "certificate", "key" };
static const char *const content_names[] = { "none", "message", "dsse" };

json_t *sigstore_evidence_to_json(const struct sigstore_evidence *ev)
{
	json_t *o = json_object();
	char when[32];

	json_object_set_new(o, "material", json_string(material_names[ev->material]));
	json_object_set_new(o, "content", json_string(content_names[ev->content]));
	if (ev->bundle_minor) {
		snprintf(when, sizeof(when), "0.%d", ev->bundle_minor);
		json_object_set_new(o, "bundle_version", json_string(when));
	} else {
		json_object_set_new(o, "bundle_version", json_null());
	}
	if (ev->material == SIGSTORE_MATERIAL_CERTIFICATE) {
		json_object_set_new(o, "identity", json_string(ev->identity ? ev->identity : ""));
		json_object_set_new(o, "issuer", json_string(ev->issuer ? ev->issuer : ""));
	} else {
		json_object_set_new(o, "key_sha256", json_string(ev->key_sha256));
	}
	if (ev->has_tlog)
		json_object_set_new(o, "tlog", json_pack("{s:I, s:s, s:s, s:I}",
			"log_index", (json_int_t)ev->log_index, "log_id", ev->log_id,
			"kind", ev->tlog_kind ? ev->tlog_kind : "",
			"integrated_time", (json_int_t)ev->integrated_time));
	else
		json_object_set_new(o, "tlog", json_null());
	json_object_set_new(o, "timestamps", json_integer(ev->ntimestamps));
	if (ev->signed_time) {
		time_t tt = (time_t)ev->signed_time;
		struct tm tm;

		gmtime_r(&tt, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		json_object_set_new(o, "signed_time", json_string(when));
	} else {
		json_object_set_new(o, "signed_time", json_null());
	}
	return o;
}

static int ev_name(const json_t *v, const char *const *names, size_t n)
{
	size_t i;

	for (i = 1; json_is_string(v) && i < n; i++)
		if (!strcmp(json_string_value(v), names[i]))
			return (int)i;
	return -1;
}

static int ev_hex64(const json_t *v, char out[65])
{
	unsigned char tmp[32];

	if (!json_is_string(v) || json_string_length(v) != 64 ||
	    digest_unhex(json_string_value(v), tmp, 32) < 0)
		return -1;
	digest_hex(tmp, 32, out);
	return 0;
}

int sigstore_evidence_from_json(const json_t *o, struct sigstore_evidence *ev,
				struct wb_err *e)
{
	const json_t *v, *t;
	int m, c;

	memset(ev, 0, sizeof(*ev));
	if (!json_is_object(o))
		return wb_error(e, WB_EUSAGE, "sigstore evidence: not an object");
	m = ev_name(json_object_get(o, "material"), material_names, 3);
	c = ev_name(json_object_get(o, "content"), content_names, 3);
	if (m < 0 || c < 0)
		return wb_error(e, WB_EUSAGE, "sigstore evidence: bad material or content");
	ev->material = (enum sigstore_material)m;
	ev->content = (enum sigstore_content)c;
	v = json_object_get(o, "bundle_version");
	if (json_is_string(v) && strlen(json_string_value(v)) == 3 &&
	    !strncmp(json_string_value(v), "0.", 2) &&
	    json_string_value(v)[2] >= '1' && json_string_value(v)[2] <= '3')
		ev->bundle_minor = json_string_value(v)[2] - '0';
	else if (v && !json_is_null(v))
		goto bad;
	if (m == SIGSTORE_MATERIAL_CERTIFICATE) {
		const json_t *id = json_object_get(o, "identity");
		const json_t *iss = json_object_get(o, "issuer");

		if (!json_is_string(id) || !json_is_string(iss))
			goto bad;
		ev->identity = xstrdup(json_string_value(id));
		ev->issuer = xstrdup(json_string_value(iss));
	} else if (ev_hex64(json_object_get(o, "key_sha256"), ev->key_sha256) < 0) {
		goto bad;
	}
	t = json_object_get(o, "tlog");
	if (json_is_object(t)) {
		const json_t *idx = json_object_get(t, "log_index");
		const json_t *it = json_object_get(t, "integrated_time");
		const json_t *kind = json_object_get(t, "kind");

		if (!json_is_integer(idx) || json_integer_value(idx) < 0 ||
		    !json_is_integer(it) || json_integer_value(it) < 0 ||
		    !json_is_string(kind) ||
		    ev_hex64(json_object_get(t, "log_id"), ev->log_id) < 0)
			goto bad;
		ev->has_tlog = 1;
		ev->log_index = json_integer_value(idx);
		ev->integrated_time = json_integer_value(it);
		ev->tlog_kind = xstrdup(json_string_value(kind));
	} else if (t && !json_is_null(t)) {
		goto bad;
	}
	v = json_object_get(o, "timestamps");
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > 1000)
		goto bad;
	ev->ntimestamps = (int)json_integer_value(v);
	v = json_object_get(o, "signed_time");
	if (json_is_string(v)) {
		int64_t st;

		if (sigstore_time_parse(json_string_value(v), 0, &st) < 0)
			goto bad;
		ev->signed_time = st;
	} else if (v && !json_is_null(v)) {
		goto bad;
	}
	return 0;
bad:
	sigstore_evidence_release(ev);
	return wb_error(e, WB_EUSAGE, "sigstore evidence: malformed");
}
