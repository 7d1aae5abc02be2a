/*
 * Authenticode verification on OpenSSL (see authenticode.h for the checks
 * and docs/authenticode.md for the formats). Every offset read from the file
 * is checked against the file size before use.
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <strings.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pkcs7.h>
#include <openssl/ts.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "lib/buf.h"
#include "lib/json.h"
#include "lib/hex.h"
#include "trust/authenticode.h"
#include "trust/authenticode_int.h"
#include "trust/digest.h"
#include "trust/timestamp.h"

#define OID_SPC_INDIRECT_DATA "1.3.6.1.4.1.311.2.1.4"
#define OID_SPC_PE_IMAGE_DATA "1.3.6.1.4.1.311.2.1.15"
#define OID_SPC_SIPINFO "1.3.6.1.4.1.311.2.1.30"
#define OID_SPC_CAB_DATA "1.3.6.1.4.1.311.2.1.25"
#define OID_NESTED_SIGNATURE "1.3.6.1.4.1.311.2.4.1"
#define OID_RFC3161_TIMESTAMP "1.3.6.1.4.1.311.3.3.1"
#define OID_COUNTERSIGNATURE "1.2.840.113549.1.9.6"

void authenticode_result_release(struct authenticode_result *r)
{
	for (size_t i = 0; i < r->nsignatures; i++) {
		free(r->signatures[i].subject);
		free(r->signatures[i].issuer);
		free(r->signatures[i].error);
	}
	free(r->signatures);
	free(r->subject);
	free(r->issuer);
	memset(r, 0, sizeof(*r));
}

int authenticode_signable(const char *path)
{
	size_t n = strlen(path);

	return n > 4 && (!strcasecmp(path + n - 4, ".exe") ||
			 !strcasecmp(path + n - 4, ".dll") ||
			 !strcasecmp(path + n - 4, ".msi"));
}

int authenticode_wants(const char *path)
{
	size_t n = strlen(path);

	return authenticode_signable(path) ||
	       (n > 4 && (!strcasecmp(path + n - 4, ".cab") ||
			  !strcasecmp(path + n - 4, ".msu")));
}

const EVP_MD *ac_md_by_name(const char *mdname, struct wb_err *e)
{
	const EVP_MD *md = EVP_get_digestbyname(mdname);

	if (!md)
		wb_error(e, WB_EUSAGE, "unknown digest '%s'", mdname);
	return md;
}

/* ---- OpenSSL helpers ---- */

/* The reason of OpenSSL's last error (static string), clearing the queue. */
static const char *ossl_reason(void)
{
	unsigned long err = ERR_peek_last_error();
	const char *r = err ? ERR_reason_error_string(err) : NULL;

	ERR_clear_error();
	return r ? r : "unknown error";
}

static char *name_rfc2253(const X509_NAME *n)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p = NULL, *s;
	long len;

	if (!b)
		return xstrdup("?");
	X509_NAME_print_ex(b, n, 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
	len = BIO_get_mem_data(b, &p);
	s = xstrndup(p ? p : "", len > 0 ? (size_t)len : 0);
	BIO_free(b);
	return s;
}

static void oid_text(const ASN1_OBJECT *o, char *out, size_t n)
{
	if (!o || OBJ_obj2txt(out, (int)n, o, 1) <= 0)
		snprintf(out, n, "?");
}

/*
 * Take one DER element of universal TAG from *P (*LEFT bytes), giving its
 * contents in C, CLEN and the whole element in TLV, TLVLEN. Refuses
 * indefinite lengths and lengths beyond the buffer.
 */
static int der_take(const unsigned char **p, long *left, int tag,
		    const unsigned char **c, long *clen,
		    const unsigned char **tlv, long *tlvlen)
{
	const unsigned char *q = *p;
	long len;
	int t, cls, r;

	if (*left <= 0)
		return -1;
	r = ASN1_get_object(&q, &len, &t, &cls, *left);
	if ((r & 0x80) || (r & 0x01) || cls != V_ASN1_UNIVERSAL || t != tag)
		return -1;
	*c = q;
	*clen = len;
	if (tlv) {
		*tlv = *p;
		*tlvlen = (long)(q - *p) + len;
	}
	*left -= (long)(q - *p) + len;
	*p = q + len;
	return 0;
}

struct spc {
	const unsigned char *inner;  /* SpcIndirectDataContent without its header */
	long inner_len;
	char data_oid[64];           /* SpcAttributeTypeAndOptionalValue.type */
	int md_nid;                  /* DigestInfo.digestAlgorithm */
	const unsigned char *digest;
	long digest_len;
};

static int der_oid(const unsigned char *tlv, long tlvlen, char *out, size_t n,
		   int *nid)
{
	ASN1_OBJECT *o = d2i_ASN1_OBJECT(NULL, &tlv, tlvlen);

	if (!o)
		return -1;
	oid_text(o, out, n);
	if (nid)
		*nid = OBJ_obj2nid(o);
	ASN1_OBJECT_free(o);
	return 0;
}

/* SpcIndirectDataContent ::= SEQUENCE { data SEQUENCE { type OID, value ANY
 * OPTIONAL }, messageDigest SEQUENCE { SEQUENCE { OID, params }, OCTET
 * STRING } } */
static int spc_parse(const unsigned char *der, long len, struct spc *s)
{
	const unsigned char *p = der, *c, *tlv, *q, *r;
	long left = len, cl, tl, ql, rl, l2, l3;
	char alg[64];

	memset(s, 0, sizeof(*s));
	if (der_take(&p, &left, V_ASN1_SEQUENCE, &c, &cl, NULL, NULL) || left)
		return -1;
	s->inner = c;
	s->inner_len = cl;
	p = c;
	left = cl;
	if (der_take(&p, &left, V_ASN1_SEQUENCE, &q, &ql, NULL, NULL))
		return -1;
	l2 = ql;
	if (der_take(&q, &l2, V_ASN1_OBJECT, &r, &rl, &tlv, &tl) ||
	    der_oid(tlv, tl, s->data_oid, sizeof(s->data_oid), NULL))
		return -1;
	if (der_take(&p, &left, V_ASN1_SEQUENCE, &q, &ql, NULL, NULL) || left)
		return -1;
	l2 = ql;
	if (der_take(&q, &l2, V_ASN1_SEQUENCE, &r, &rl, NULL, NULL))
		return -1;
	l3 = rl;
	if (der_take(&r, &l3, V_ASN1_OBJECT, &c, &cl, &tlv, &tl) ||
	    der_oid(tlv, tl, alg, sizeof(alg), &s->md_nid))
		return -1;
	if (der_take(&q, &l2, V_ASN1_OCTET_STRING, &s->digest, &s->digest_len,
		     NULL, NULL) || l2)
		return -1;
	return 0;
}

static int load_roots(const char *roots, X509_STORE **out, struct wb_err *e)
{
	X509_STORE *st = X509_STORE_new();
	int ok;

	*out = NULL;
	if (!st)
		return wb_error(e, WB_EIO, "cannot create a certificate store");
	if (roots) {
		if (access(roots, R_OK)) {
			X509_STORE_free(st);
			return wb_error(e, WB_EUSAGE, "cannot read roots '%s': %s", roots,
					strerror(errno));
		}
		ok = X509_STORE_load_file(st, roots);
	} else {
		ok = X509_STORE_set_default_paths(st);
	}
	if (!ok) {
		X509_STORE_free(st);
		return wb_error(e, WB_EUSAGE, "cannot load roots '%s': %s",
				roots ? roots : "(default)", ossl_reason());
	}
	*out = st;
	return 0;
}

/* Verify CERT's chain to STORE at time AT (0: now) for PURPOSE (0: none). */
static int chain_ok(X509_STORE *store, X509 *cert, STACK_OF(X509) *untrusted,
		    time_t at, int purpose, char *why, size_t whylen)
{
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	int ok = 0;

	if (!ctx || !X509_STORE_CTX_init(ctx, store, cert, untrusted)) {
		snprintf(why, whylen, "cannot set up chain verification");
		X509_STORE_CTX_free(ctx);
		return 0;
	}
	if (at)
		X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), at);
	/* every certificate of the roots file is a trust anchor, self-signed
	 * or not: a UEFI db holds Microsoft's UEFI CA 2011, an intermediate,
	 * and so may a recipe's roots (as sigstore_cert.c's pinned CA) */
	X509_STORE_CTX_set_flags(ctx, X509_V_FLAG_PARTIAL_CHAIN);
	if (purpose)
		X509_STORE_CTX_set_purpose(ctx, purpose);
	ok = X509_verify_cert(ctx) == 1;
	if (!ok)
		snprintf(why, whylen, "%s",
			 X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
	X509_STORE_CTX_free(ctx);
	ERR_clear_error();
	return ok;
}

/* The only signer certificate of P7 (borrowed), or NULL. */
static X509 *sole_signer(PKCS7 *p7)
{
	STACK_OF(X509) *s = PKCS7_get0_signers(p7, NULL, 0);
	X509 *x = NULL;

	if (s && sk_X509_num(s) == 1)
		x = sk_X509_value(s, 0);
	sk_X509_free(s);
	ERR_clear_error();
	return x;
}

static void format_time(time_t t, char out[21])
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 21, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/*
 * An RFC 3161 timestamp token (DER of a ContentInfo) countersigning SI:
 * its message imprint is the hash of SI's signature value, and the token
 * passes the one RFC 3161 verifier (timestamp_verify_token in
 * trust/timestamp.c, Sigstore's too) with STORE's roots as its anchors.
 * Sets *AT to genTime.
 *
 * Stricter than `osslsigncode verify` (osslsigncode.c), which accepts a
 * SHA-1 imprint and a token without the ESS signing-certificate attribute
 * (RFC 3161 2.4.1 requires one; tests/cli/authenticode.bats shows both):
 * one verifier, the strict one, for every timestamp winbuild trusts.
 * @where where an RFC 3161 timestamp is checked (the one verifier, for
 *   Sigstore and Authenticode) -- a signature's countersignature
 */
static int timestamp_rfc3161(const ASN1_TYPE *val, PKCS7_SIGNER_INFO *si,
			     X509_STORE *store, time_t *at, struct wb_err *e)
{
	struct timestamp_result r;

	if (val->type != V_ASN1_SEQUENCE)
		return wb_error(e, WB_EUSAGE, "timestamp countersignature is malformed");
	if (timestamp_verify_token(val->value.sequence->data,
				   (size_t)val->value.sequence->length,
				   si->enc_digest->data, (size_t)si->enc_digest->length,
				   store, &r, e) < 0)
		return -1;
	*at = (time_t)r.gen_time;
	return 0;
}

/* Find and verify a timestamp among SI's unsigned attributes. Returns 1
 * with *AT set, 0 when there is none, -1 when one is present but bad. */
static int find_timestamp(PKCS7_SIGNER_INFO *si, X509_STORE *store, time_t *at,
			  struct wb_err *e)
{
	STACK_OF(X509_ATTRIBUTE) *ua = si->unauth_attr;
	char oid[64];

	for (int i = 0; i < sk_X509_ATTRIBUTE_num(ua); i++) {
		X509_ATTRIBUTE *a = sk_X509_ATTRIBUTE_value(ua, i);
		ASN1_TYPE *v = X509_ATTRIBUTE_get0_type(a, 0);

		oid_text(X509_ATTRIBUTE_get0_object(a), oid, sizeof(oid));
		if (!v)
			continue;
		if (!strcmp(oid, OID_RFC3161_TIMESTAMP))
			return timestamp_rfc3161(v, si, store, at, e) ? -1 : 1;
		if (!strcmp(oid, OID_COUNTERSIGNATURE))
			return wb_error(e, WB_EUSAGE,
					"legacy (PKCS#9) timestamp countersignatures are not supported; re-timestamp with RFC 3161");
	}
	return 0;
}

static int publisher_allowed(const struct authenticode_policy *pol,
			     const char *subject, const char *oneline,
			     const char *thumb)
{
	if (!pol->npublishers)
		return 1;
	for (size_t i = 0; i < pol->npublishers; i++) {
		const char *p = pol->publishers[i];
		if (hex_is(p, 64, HEX_ANY_CASE)) {
			if (!strcasecmp(p, thumb))
				return 1;
		} else if (!strcmp(p, subject) || !strcmp(p, oneline)) {
			return 1;
		}
	}
	return 0;
}

/* ---- the signatures ---- */

/* At most this many signatures (certificate-table entries and the nested
 * signatures of each) are judged in one file. */
#define AC_MAX_SIGS 16

struct ac_file {
	const unsigned char *data;
	size_t len;
	enum authenticode_format format;
	struct authenticode_pe pe;
	struct authenticode_cab cab;
	struct {                     /* the file's hash, per algorithm */
		int nid;
		unsigned len;
		unsigned char h[EVP_MAX_MD_SIZE];
	} hash[4];
	size_t nhash;
};

/* The file's Authenticode hash with digest NID, computed once per
 * algorithm (a file with several signatures is hashed once for each). */
static const unsigned char *file_digest(struct ac_file *f, int nid, unsigned *outlen,
					struct wb_err *e)
{
	const char *mdname = OBJ_nid2sn(nid);
	unsigned char *out;
	int ret;

	for (size_t i = 0; i < f->nhash; i++)
		if (f->hash[i].nid == nid) {
			*outlen = f->hash[i].len;
			return f->hash[i].h;
		}
	if (f->nhash == sizeof(f->hash) / sizeof(f->hash[0])) {
		wb_error(e, WB_EUSAGE, "signatures use too many digest algorithms");
		return NULL;
	}
	out = f->hash[f->nhash].h;
	if (f->format == AUTHENTICODE_PE)
		ret = authenticode_pe_digest(f->data, f->len, &f->pe, mdname, out, outlen, e);
	else if (f->format == AUTHENTICODE_CAB)
		ret = authenticode_cab_digest(f->data, f->len, &f->cab, mdname, out, outlen, e);
	else
		ret = authenticode_msi_digest(f->data, f->len, mdname, out, outlen, NULL,
					      NULL, e);
	if (ret)
		return NULL;
	f->hash[f->nhash].nid = nid;
	f->hash[f->nhash++].len = *outlen;
	return out;
}

static const char *format_name(enum authenticode_format fmt)
{
	return fmt == AUTHENTICODE_PE ? "PE image" : fmt == AUTHENTICODE_CAB ? "cabinet" : "MSI";
}

static const char *format_oid(enum authenticode_format fmt)
{
	return fmt == AUTHENTICODE_PE ? OID_SPC_PE_IMAGE_DATA :
	       fmt == AUTHENTICODE_CAB ? OID_SPC_CAB_DATA : OID_SPC_SIPINFO;
}

/* How one signature fared: it satisfies the policy; it is sound but not
 * trusted (chain, EKU, publisher, weak digest, timestamp); or it is broken
 * (malformed, or it does not sign this file: digest or signature). */
enum ac_verdict { AC_OK, AC_UNTRUSTED, AC_BROKEN };

/* The signer's chain and publisher under the trust set POL (roots in
 * STORE), at time AT (0: now), and its EKU unless FURTHER (a further
 * trust set: pol->also). */
static int trusted_by(const struct authenticode_policy *pol, X509_STORE *store,
		      X509 *signer, STACK_OF(X509) *certs, time_t at, int ts,
		      const struct authenticode_signature *s, const char *oneline,
		      int further, struct wb_err *e)
{
	const char *set = pol->roots ? pol->roots : "(default)";
	char why[256];

	if (!chain_ok(store, signer, certs, at, 0, why, sizeof(why)))
		return further ?
		       wb_error(e, WB_EVERIFY,
				"signer '%s' does not chain to a root of '%s' as well (each layer's roots must hold)%s: %s",
				s->subject, set, ts ? " at the timestamp's time" : "", why) :
		       wb_error(e, WB_EVERIFY, "signer '%s' does not chain to a trusted root%s: %s",
				s->subject, ts ? " at the timestamp's time" : "", why);
	/* no EKU extension at all is not code signing (OpenSSL would treat
	 * such a certificate as good for every purpose) */
	if (!further && (!(X509_get_extension_flags(signer) & EXFLAG_XKUSAGE) ||
			 !(X509_get_extended_key_usage(signer) & XKU_CODE_SIGN)))
		return wb_error(e, WB_EVERIFY, "signer '%s' lacks the code-signing extended key usage",
				s->subject);
	if (!publisher_allowed(pol, s->subject, oneline, s->thumbprint))
		return further ?
		       wb_error(e, WB_EVERIFY,
				"signer '%s' (sha256 %s) is not an allowed publisher under '%s' as well (each layer's publishers must hold)",
				s->subject, s->thumbprint, set) :
		       wb_error(e, WB_EVERIFY, "signer '%s' (sha256 %s) is not an allowed publisher",
				s->subject, s->thumbprint);
	return 0;
}

/* Judge the signature P7 alone under POL (its roots in STORE): fills S
 * (signer, digest, timestamp) as far as it gets.
 * @where where Authenticode is checked (PE, MSI, cabinet; PKCS#7, timestamp,
 *   chain, EKU, publisher; docs/authenticode.md) -- one signature, judged
 *   alone
 */
static enum ac_verdict judge(struct ac_file *f, PKCS7 *p7,
			     const struct authenticode_policy *pol, X509_STORE *store,
			     struct authenticode_signature *s, struct wb_err *e)
{
	X509 *signer;
	BIO *in = NULL;
	STACK_OF(PKCS7_SIGNER_INFO) *sis;
	const ASN1_STRING *seq;
	const unsigned char *h;
	struct spc spc;
	char oid[64], *oneline = NULL;
	unsigned char tp[32];
	unsigned hl = 0, tpl = 0;
	time_t at = 0;
	enum ac_verdict v = AC_BROKEN;
	int ts, weak = 0;

	if (!PKCS7_type_is_signed(p7) || !p7->d.sign->contents) {
		wb_error(e, WB_EUSAGE, "signature is not a PKCS#7 SignedData structure");
		goto out;
	}
	oid_text(p7->d.sign->contents->type, oid, sizeof(oid));
	if (strcmp(oid, OID_SPC_INDIRECT_DATA) || !p7->d.sign->contents->d.other ||
	    p7->d.sign->contents->d.other->type != V_ASN1_SEQUENCE) {
		wb_error(e, WB_EUSAGE, "signature does not hold Authenticode content (%s)", oid);
		goto out;
	}
	seq = p7->d.sign->contents->d.other->value.sequence;
	if (spc_parse(seq->data, seq->length, &spc)) {
		wb_error(e, WB_EUSAGE, "Authenticode content (SpcIndirectDataContent) is malformed");
		goto out;
	}
	if (strcmp(spc.data_oid, format_oid(f->format))) {
		wb_error(e, WB_EVERIFY, "signature is for another kind of file (%s)",
			 spc.data_oid);
		goto out;
	}
	switch (spc.md_nid) {
	case NID_sha256: case NID_sha384: case NID_sha512:
		break;
	case NID_sha1:   /* still checked against the file, then refused */
		weak = 1;
		break;
	case NID_md5:
		wb_error(e, WB_EVERIFY, "signed digest uses MD5, which winbuild refuses as weak");
		v = AC_UNTRUSTED;
		goto out;
	default:
		wb_error(e, WB_EUSAGE, "signed digest uses an unknown algorithm");
		goto out;
	}
	snprintf(s->digest, sizeof(s->digest), "%s", OBJ_nid2sn(spc.md_nid));
	for (char *c = s->digest; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	if (!(h = file_digest(f, spc.md_nid, &hl, e)))
		goto out;
	if ((long)hl != spc.digest_len || !digest_equal(h, spc.digest, hl)) {
		wb_error(e, WB_EVERIFY,
			 "%s hash does not match the signed digest (modified after signing)",
			 format_name(f->format));
		goto out;
	}
	sis = PKCS7_get_signer_info(p7);
	if (sk_PKCS7_SIGNER_INFO_num(sis) != 1) {
		wb_error(e, WB_EUSAGE, "signature has %d signers, expected one",
			 sk_PKCS7_SIGNER_INFO_num(sis));
		goto out;
	}
	if (!(signer = sole_signer(p7))) {
		wb_error(e, WB_EVERIFY, "signer certificate is missing from the signature");
		goto out;
	}
	s->subject = name_rfc2253(X509_get_subject_name(signer));
	s->issuer = name_rfc2253(X509_get_issuer_name(signer));
	oneline = X509_NAME_oneline(X509_get_subject_name(signer), NULL, 0);
	if (!X509_digest(signer, EVP_sha256(), tp, &tpl) || tpl != 32) {
		wb_error(e, WB_EIO, "cannot compute the signer thumbprint");
		goto out;
	}
	digest_hex(tp, 32, s->thumbprint);
	/* the signature covers the content's DER without its outer header */
	in = BIO_new_mem_buf(spc.inner, (int)spc.inner_len);
	if (!in || PKCS7_verify(p7, NULL, NULL, in, NULL, PKCS7_NOVERIFY) != 1) {
		wb_error(e, WB_EVERIFY, "PKCS#7 signature does not verify: %s",
			 ossl_reason());
		goto out;
	}
	v = AC_UNTRUSTED;   /* sound from here: what follows is trust */
	if (weak) {
		wb_error(e, WB_EVERIFY, "signed digest uses SHA1, which winbuild refuses as weak");
		goto out;
	}
	if ((ts = find_timestamp(sk_PKCS7_SIGNER_INFO_value(sis, 0), store, &at, e)) < 0) {
		wb_error_prefix(e, "signer '%s'", s->subject);
		goto out;
	}
	if (ts) {
		s->has_timestamp = 1;
		s->timestamp = at;
		format_time(at, s->timestamp_str);
	} else {
		at = pol->at;
	}
	if (trusted_by(pol, store, signer, p7->d.sign->cert, at, ts, s,
		       oneline ? oneline : "", 0, e))
		goto out;
	for (size_t i = 0; i < pol->nalso; i++) {
		X509_STORE *st2 = NULL;
		int bad;

		if (load_roots(pol->also[i].roots, &st2, e))
			goto out;
		bad = trusted_by(&pol->also[i], st2, signer, p7->d.sign->cert, at, ts, s,
				 oneline ? oneline : "", 1, e);
		X509_STORE_free(st2);
		if (bad)
			goto out;
	}
	v = AC_OK;
out:
	OPENSSL_free(oneline);
	BIO_free(in);
	ERR_clear_error();
	return v;
}

/* The signatures of a file: each certificate-table entry (one for MSI and
 * CAB) and the nested signatures (1.3.6.1.4.1.311.2.4.1) its signer
 * carries, in file order. */
struct ac_sigs {
	PKCS7 *p7[AC_MAX_SIGS];
	unsigned entry[AC_MAX_SIGS];
	int nested[AC_MAX_SIGS];
	size_t n;
};

static void sigs_release(struct ac_sigs *l)
{
	for (size_t i = 0; i < l->n; i++)
		PKCS7_free(l->p7[i]);
	l->n = 0;
}

static int sigs_push(struct ac_sigs *l, const unsigned char *der, size_t len,
		     unsigned entry, int nested, struct wb_err *e)
{
	const unsigned char *p = der;
	PKCS7 *p7;

	if (l->n == AC_MAX_SIGS)
		return wb_error(e, WB_EUSAGE, "file carries more than %d signatures", AC_MAX_SIGS);
	if (len > LONG_MAX || !(p7 = d2i_PKCS7(NULL, &p, (long)len))) {
		ERR_clear_error();
		return wb_error(e, WB_EUSAGE, "signature %zu is not a PKCS#7 SignedData structure",
				l->n + 1);
	}
	l->p7[l->n] = p7;
	l->entry[l->n] = entry;
	l->nested[l->n++] = nested;
	return 0;
}

/* The nested signatures in the unsigned attributes of P7's signer. A
 * nested signature nesting further ones is refused: Windows and
 * osslsigncode nest one level, under the first signature. */
static int sigs_nested(struct ac_sigs *l, PKCS7 *p7, unsigned entry, int depth,
		       struct wb_err *e)
{
	STACK_OF(PKCS7_SIGNER_INFO) *sis;
	PKCS7_SIGNER_INFO *si;
	int nested = 0;
	char oid[64];

	if (!PKCS7_type_is_signed(p7) || !(sis = PKCS7_get_signer_info(p7)) ||
	    !(si = sk_PKCS7_SIGNER_INFO_value(sis, 0)))
		return 0;   /* judge() says what is wrong with it */
	for (int i = 0; i < sk_X509_ATTRIBUTE_num(si->unauth_attr); i++) {
		X509_ATTRIBUTE *a = sk_X509_ATTRIBUTE_value(si->unauth_attr, i);

		oid_text(X509_ATTRIBUTE_get0_object(a), oid, sizeof(oid));
		if (strcmp(oid, OID_NESTED_SIGNATURE))
			continue;
		if (depth)
			return wb_error(e, WB_EUSAGE,
					"a nested signature holds nested signatures itself");
		for (int j = 0; j < X509_ATTRIBUTE_count(a); j++) {
			ASN1_TYPE *v = X509_ATTRIBUTE_get0_type(a, j);

			if (!v || v->type != V_ASN1_SEQUENCE)
				return wb_error(e, WB_EUSAGE, "nested signature is malformed");
			if (sigs_push(l, v->value.sequence->data,
				      (size_t)v->value.sequence->length, entry, ++nested, e) ||
			    sigs_nested(l, l->p7[l->n - 1], entry, 1, e))
				return -1;
		}
	}
	return 0;
}

static int sigs_add(struct ac_sigs *l, const unsigned char *der, size_t len,
		    unsigned entry, struct wb_err *e)
{
	return sigs_push(l, der, len, entry, 0, e) ||
	       sigs_nested(l, l->p7[l->n - 1], entry, 0, e) ? -1 : 0;
}

/* "signature 2 of 3 (entry 1, nested)" when the file has several */
static void sig_prefix(const struct ac_sigs *l, size_t i, struct wb_err *e)
{
	if (l->n > 1)
		wb_error_prefix(e, "signature %zu of %zu (entry %u%s)", i + 1, l->n,
				l->entry[i], l->nested[i] ? ", nested" : "");
}

static void copy_primary(struct authenticode_result *res,
			 const struct authenticode_signature *s)
{
	res->subject = xstrdup(s->subject);
	res->issuer = xstrdup(s->issuer);
	memcpy(res->thumbprint, s->thumbprint, sizeof(res->thumbprint));
	memcpy(res->digest, s->digest, sizeof(res->digest));
	res->has_timestamp = s->has_timestamp;
	res->timestamp = s->timestamp;
	memcpy(res->timestamp_str, s->timestamp_str, sizeof(res->timestamp_str));
}

/*
 * Judge every signature of L alone, then the file: with
 * AUTHENTICODE_SIGS_ALL every one must satisfy POL; with
 * AUTHENTICODE_SIGS_ONE one must, and none may be broken (a signature that
 * does not sign this file is never ignored). Stricter than `osslsigncode
 * verify` (verify_signed_file() in osslsigncode.c), which takes the file
 * when any one signature verifies and passes over the rest, broken or not:
 * a broken signature beside a good one is a file someone changed, and
 * `all`, the default, holds the file to every signer it names.
 * @where where Authenticode is checked (PE, MSI, cabinet; PKCS#7, timestamp,
 *   chain, EKU, publisher; docs/authenticode.md) -- every signature of a
 *   file; `all` or `one` must pass
 */
static int verify_sigs(struct ac_file *f, struct ac_sigs *l,
		       const struct authenticode_policy *pol,
		       struct authenticode_result *res, struct wb_err *e)
{
	struct wb_err first = WB_ERR_INIT, broken = WB_ERR_INIT;
	X509_STORE *store = NULL;
	int nok = 0;

	if (load_roots(pol->roots, &store, e))
		return -1;
	res->signatures = xcalloc(l->n, sizeof(*res->signatures));
	res->nsignatures = l->n;
	for (size_t i = 0; i < l->n; i++) {
		struct authenticode_signature *s = &res->signatures[i];
		struct wb_err one = WB_ERR_INIT;
		enum ac_verdict v;

		s->entry = l->entry[i];
		s->nested = l->nested[i];
		v = judge(f, l->p7[i], pol, store, s, &one);
		if (v == AC_OK) {
			s->ok = 1;
			if (!nok++)
				copy_primary(res, s);
			continue;
		}
		s->error = xstrdup(one.msg);
		sig_prefix(l, i, &one);
		if (v == AC_BROKEN && !broken.code)
			broken = one;
		if (!first.code)
			first = one;
	}
	X509_STORE_free(store);
	if (broken.code) {
		*e = broken;
		return -1;
	}
	if (pol->signatures == AUTHENTICODE_SIGS_ONE ? !nok : first.code != 0) {
		*e = first;
		if (pol->signatures == AUTHENTICODE_SIGS_ONE && l->n > 1)
			wb_error_prefix(e, "none of the %zu signatures satisfies the policy; the first",
					l->n);
		return -1;
	}
	res->is_signed = 1;
	return 0;
}

static int verify_any(const unsigned char *data, size_t len,
		      const struct authenticode_policy *pol,
		      struct authenticode_result *res, struct wb_err *e)
{
	static const unsigned char cfb_magic[8] = { 0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1 };
	struct ac_file f;
	struct ac_sigs l = { .n = 0 };
	unsigned char *msisig = NULL;
	size_t siglen = 0;
	int ret = -1;

	memset(&f, 0, sizeof(f));
	f.data = data;
	f.len = len;
	if (len >= 2 && data[0] == 'M' && data[1] == 'Z') {
		const unsigned char *sig;
		size_t pos = 0;
		int more;

		f.format = AUTHENTICODE_PE;
		if (authenticode_pe_parse(data, len, &f.pe, e))
			return -1;
		for (unsigned entry = 1;
		     (more = authenticode_pe_cert_next(data, &f.pe, &pos, &sig, &siglen, e)) > 0;
		     entry++)
			if (sigs_add(&l, sig, siglen, entry, e))
				goto out;
		if (more < 0)
			goto out;
	} else if (len >= 8 && !memcmp(data, cfb_magic, 8)) {
		f.format = AUTHENTICODE_MSI;
		if (authenticode_msi_digest(data, len, NULL, NULL, NULL, &msisig, &siglen, e))
			return -1;
		if (msisig && sigs_add(&l, msisig, siglen, 1, e))
			goto out;
	} else if (len >= 4 && !memcmp(data, "MSCF", 4)) {
		f.format = AUTHENTICODE_CAB;
		if (authenticode_cab_parse(data, len, &f.cab, e))
			return -1;
		if (f.cab.sig_len && sigs_add(&l, data + f.cab.sig_off, f.cab.sig_len, 1, e))
			goto out;
	} else {
		return wb_error(e, WB_EUSAGE, "not a PE, MSI or cabinet file");
	}
	res->format = f.format;
	if (!l.n) {
		if (pol->require)
			wb_error(e, WB_EVERIFY, "not signed (no Authenticode signature)");
		ret = pol->require ? -1 : 0;
		goto out;
	}
	ret = verify_sigs(&f, &l, pol, res, e);
out:
	sigs_release(&l);
	free(msisig);
	return ret;
}

int authenticode_verify_mem(const unsigned char *data, size_t len,
			    const char *name,
			    const struct authenticode_policy *pol,
			    struct authenticode_result *res, struct wb_err *e)
{
	memset(res, 0, sizeof(*res));
	if (verify_any(data, len, pol, res, e) < 0) {
		wb_error_prefix(e, "'%s'", name);
		return -1;
	}
	return 0;
}

/*
 * @where where Authenticode is checked (PE, MSI, cabinet; PKCS#7, timestamp,
 *   chain, EKU, publisher; docs/authenticode.md) -- a file
 */
int authenticode_verify_file(const char *path,
			     const struct authenticode_policy *pol,
			     struct authenticode_result *res, struct wb_err *e)
{
	return authenticode_verify_path(path, path, pol, res, e);
}

int authenticode_verify_path(const char *path, const char *name,
			     const struct authenticode_policy *pol,
			     struct authenticode_result *res, struct wb_err *e)
{
	struct stat st;
	void *map;
	int fd, ret;

	memset(res, 0, sizeof(*res));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return wb_error(e, errno == ENOENT ? WB_EUSAGE : WB_EIO,
				"cannot open '%s': %s", name, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return wb_error(e, WB_EUSAGE, "'%s' is not a regular file", name);
	}
	if ((unsigned long long)st.st_size > AUTHENTICODE_FILE_MAX) {
		close(fd);
		return wb_error(e, WB_EUSAGE, "'%s' is larger than 4 GiB", name);
	}
	if (st.st_size == 0) {
		close(fd);
		return wb_error(e, WB_EUSAGE, "'%s': not a PE, MSI or cabinet file (empty)", name);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return wb_error(e, WB_EIO, "cannot map '%s': %s", name, strerror(errno));
	ret = authenticode_verify_mem(map, (size_t)st.st_size, name, pol, res, e);
	munmap(map, (size_t)st.st_size);
	return ret;
}

static void signer_json(json_t *o, const char *subject, const char *issuer,
			const char *thumbprint, const char *digest, int has_ts,
			const char *ts)
{
	json_object_set_new(o, "signer", subject ? json_text(subject) : json_null());
	json_object_set_new(o, "issuer", issuer ? json_text(issuer) : json_null());
	json_object_set_new(o, "thumbprint_sha256", *thumbprint ? json_string(thumbprint) : json_null());
	json_object_set_new(o, "digest", *digest ? json_string(digest) : json_null());
	json_object_set_new(o, "timestamp", has_ts ? json_string(ts) : json_null());
}

json_t *authenticode_result_to_json(const struct authenticode_result *r)
{
	json_t *o = json_object(), *a;

	json_object_set_new(o, "signed", json_boolean(r->is_signed));
	if (r->is_signed)
		signer_json(o, r->subject, r->issuer, r->thumbprint, r->digest,
			    r->has_timestamp, r->timestamp_str);
	if (r->nsignatures < 2)
		return o;
	a = json_array();
	for (size_t i = 0; i < r->nsignatures; i++) {
		const struct authenticode_signature *s = &r->signatures[i];
		json_t *so = json_object();

		json_object_set_new(so, "entry", json_integer(s->entry));
		json_object_set_new(so, "nested", json_integer(s->nested));
		json_object_set_new(so, "ok", json_boolean(s->ok));
		signer_json(so, s->subject, s->issuer, s->thumbprint, s->digest,
			    s->has_timestamp, s->timestamp_str);
		json_object_set_new(so, "error", s->error ? json_text(s->error) : json_null());
		json_array_append_new(a, so);
	}
	json_object_set_new(o, "signatures", a);
	return o;
}
