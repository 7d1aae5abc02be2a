/*
 * RFC 3161 timestamps on OpenSSL's TS API. The token is parsed once; each
 * trusted authority then gets a TS_VERIFY_CTX whose store holds only that
 * authority's root and whose check time is the token's own genTime, so an
 * authority whose certificates have expired since still verifies old
 * timestamps, as long as genTime is inside the trusted root's window.
 */
#include "trust/timestamp.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/ess.h>
#include <openssl/pkcs7.h>
#include <openssl/ts.h>

#include "lib/buf.h"

void timestamp_authority_release(struct timestamp_authority *a)
{
	if (!a)
		return;
	sk_X509_pop_free(a->chain, X509_free);
	free(a->uri);
	memset(a, 0, sizeof(*a));
}

/* The last queued OpenSSL error's reason (the TS layer's own, pushed over
 * the lower layers' causes) with its detail text, or FALLBACK; clears the
 * queue. When the signer's chain did not verify, CHAIN (if not NULL) gets
 * X509_verify_cert's reason, else "". */
static const char *ossl_reason(char *out, size_t outsz, const char *fallback,
			       char *chain, size_t chainsz)
{
	static const char verify_error[] = "Verify error:";
	unsigned long code = 0, c;
	const char *data = NULL, *d, *r;
	int flags = 0, f;

	if (chain)
		chain[0] = '\0';
	while ((c = ERR_get_error_all(NULL, NULL, NULL, &d, &f))) {
		code = c;
		data = d;
		flags = f;
		/* ts_verify_cert's: "Verify error:<X509_verify_cert_error_string>" */
		if (chain && ERR_GET_LIB(c) == ERR_LIB_TS &&
		    ERR_GET_REASON(c) == TS_R_CERTIFICATE_VERIFY_ERROR && d &&
		    (f & ERR_TXT_STRING) && !strncmp(d, verify_error, sizeof(verify_error) - 1))
			snprintf(chain, chainsz, "%s", d + sizeof(verify_error) - 1);
	}
	r = code ? ERR_reason_error_string(code) : NULL;
	if (!r)
		r = fallback;
	if (data && *data && (flags & ERR_TXT_STRING))
		snprintf(out, outsz, "%s (%s)", r, data);
	else
		snprintf(out, outsz, "%s", r);
	return out;
}

struct token {
	PKCS7 *p7;                 /* the TimeStampToken */
	TS_TST_INFO *tst;
	int64_t gen_time;
	long gen_ns;
};

static void token_release(struct token *t)
{
	PKCS7_free(t->p7);
	TS_TST_INFO_free(t->tst);
	memset(t, 0, sizeof(*t));
}

/* genTime "YYYYMMDDHHMMSS[.f+]Z" to seconds + nanoseconds. */
static int gen_time(const ASN1_GENERALIZEDTIME *g, int64_t *secs, long *ns)
{
	struct tm tm;
	const char *s = (const char *)ASN1_STRING_get0_data(g);
	int len = ASN1_STRING_length(g);
	const char *dot;
	long frac = 0, scale = 100000000;

	if (!ASN1_TIME_to_tm(g, &tm))
		return -1;
	*secs = (int64_t)timegm(&tm);
	dot = memchr(s, '.', (size_t)len);
	if (dot)
		for (const char *p = dot + 1; p < s + len && *p >= '0' && *p <= '9'; p++) {
			frac += (*p - '0') * scale;
			scale /= 10;
		}
	*ns = frac;
	return 0;
}

/*
 * One DER element at P (LEFT bytes): its identifier byte, where its
 * content starts and how long it is; -1 on a high tag number, an
 * indefinite length or a length past LEFT. OpenSSL's ASN1_get_object()
 * reads the header, as authenticode.c's der_take() does.
 */
static int der_elem(const unsigned char *p, size_t left, unsigned char *tag,
		    size_t *hdr, size_t *clen)
{
	const unsigned char *q = p;
	long len;
	int t, cls, r;

	if (left < 2 || left > TIMESTAMP_DER_MAX || (p[0] & 0x1f) == 0x1f)
		return -1;
	r = ASN1_get_object(&q, &len, &t, &cls, (long)left);
	if ((r & 0x80) || (r & 0x01)) {
		ERR_clear_error();    /* not this shape: the caller parses it as is */
		return -1;
	}
	*tag = (unsigned char)(cls | (r & V_ASN1_CONSTRUCTED) | t);
	*hdr = (size_t)(q - p);
	*clen = (size_t)len;
	return 0;
}

static void der_put(struct buf *b, unsigned char tag, const unsigned char *c, size_t n)
{
	unsigned char h[6];
	size_t k = 0;

	h[k++] = tag;
	if (n < 0x80) {
		h[k++] = (unsigned char)n;
	} else {
		int bytes = n > 0xffffff ? 4 : n > 0xffff ? 3 : n > 0xff ? 2 : 1;

		h[k++] = (unsigned char)(0x80 | bytes);
		for (int i = bytes - 1; i >= 0; i--)
			h[k++] = (unsigned char)(n >> (8 * i));
	}
	buf_add(b, h, k);
	buf_add(b, c, n);
}

/*
 * A TimeStampToken (ContentInfo -> [0] -> SignedData) whose certificates
 * set holds entries other than X.509 certificates, rewritten without them
 * into OUT; 1 when rewritten, 0 when there is nothing to drop or the DER
 * is not that shape (the caller then parses it as it is).
 *
 * RFC 5652's CertificateChoices also admits attribute certificates ([1],
 * [2]) and other formats ([3]). Microsoft's time-stamping service puts an
 * attribute certificate there (seen in the token on pwsh.dll of
 * PowerShell 7.6.9's NuGet package, genTime 2026-10-25): OpenSSL's PKCS7,
 * which the TS API verifies, holds X.509 certificates only and refuses the
 * whole token, while osslsigncode reads it through CMS. The certificates
 * field is outside what the TSA signs (the signed attributes over the
 * TSTInfo), so dropping those entries changes nothing that is verified;
 * the signer is still found among the X.509 certificates.
 */
static int drop_attribute_certs(const unsigned char *der, size_t len, struct buf *out)
{
	const unsigned char *ci, *x, *sd, *q, *certs = NULL, *end;
	size_t h, l, ci_len, x_len, sd_len, certs_len = 0;
	unsigned char tag;
	int fields = 0, dropped = 0;
	struct buf kept = BUF_INIT, body = BUF_INIT, inner = BUF_INIT;

	/* ContentInfo ::= SEQUENCE { contentType OID, [0] EXPLICIT SignedData } */
	if (der_elem(der, len, &tag, &h, &l) < 0 || tag != 0x30 || h + l != len)
		return 0;
	ci = der + h;
	ci_len = l;
	if (der_elem(ci, ci_len, &tag, &h, &l) < 0 || tag != 0x06)
		return 0;
	x = ci + h + l;
	x_len = ci_len - h - l;
	if (der_elem(x, x_len, &tag, &h, &l) < 0 || tag != 0xa0 || h + l != x_len)
		return 0;
	sd = x + h;
	if (der_elem(sd, l, &tag, &h, &sd_len) < 0 || tag != 0x30)
		return 0;
	sd += h;
	/* SignedData: version, digestAlgorithms, encapContentInfo, then the
	 * optional [0] IMPLICIT certificates */
	for (q = sd, end = sd + sd_len; q < end; q += h + l, fields++) {
		if (der_elem(q, (size_t)(end - q), &tag, &h, &l) < 0)
			return 0;
		if (fields == 3 && tag == 0xa0) {
			certs = q;
			certs_len = h + l;
			break;
		}
	}
	if (!certs)
		return 0;
	for (q = certs + (certs_len - l), end = certs + certs_len; q < end; q += h + l) {
		const unsigned char *c = q;

		if (der_elem(q, (size_t)(end - q), &tag, &h, &l) < 0) {
			buf_release(&kept);
			return 0;
		}
		if (tag == 0x30)
			buf_add(&kept, c, h + l);
		else
			dropped++;
	}
	if (!dropped) {
		buf_release(&kept);
		return 0;
	}
	buf_add(&body, sd, (size_t)(certs - sd));
	der_put(&body, 0xa0, (const unsigned char *)kept.ptr, kept.len);
	buf_add(&body, certs + certs_len, (size_t)(sd + sd_len - (certs + certs_len)));
	der_put(&inner, 0x30, (const unsigned char *)body.ptr, body.len);
	buf_reset(&body);
	buf_add(&body, ci, (size_t)(x - ci));        /* the contentType OID */
	der_put(&body, 0xa0, (const unsigned char *)inner.ptr, inner.len);
	der_put(out, 0x30, (const unsigned char *)body.ptr, body.len);
	buf_release(&kept);
	buf_release(&body);
	buf_release(&inner);
	return 1;
}

/* DER: a TimeStampResp (granted) or a bare TimeStampToken; with
 * TOKEN_ONLY, only the latter (Authenticode's attribute holds a token). */
static int token_parse(const unsigned char *der, size_t len, int token_only,
		       struct token *t, struct wb_err *e)
{
	const unsigned char *p = der;
	TS_RESP *resp;
	const ASN1_GENERALIZEDTIME *g;

	memset(t, 0, sizeof(*t));
	if (len == 0 || len > TIMESTAMP_DER_MAX)
		return wb_error(e, WB_EUSAGE, "timestamp: empty or larger than %d bytes", TIMESTAMP_DER_MAX);
	resp = token_only ? NULL : d2i_TS_RESP(NULL, &p, (long)len);
	if (resp && p == der + len) {
		const ASN1_INTEGER *st = TS_STATUS_INFO_get0_status(TS_RESP_get_status_info(resp));
		long status = ASN1_INTEGER_get(st);

		if (status != 0 && status != 1) {
			TS_RESP_free(resp);
			return wb_error(e, WB_EVERIFY, "timestamp: the response status is %ld, not granted", status);
		}
		if (TS_RESP_get_token(resp))
			t->p7 = PKCS7_dup(TS_RESP_get_token(resp));
		TS_RESP_free(resp);
	} else {
		TS_RESP_free(resp);
		ERR_clear_error();
		p = der;
		t->p7 = d2i_PKCS7(NULL, &p, (long)len);
		if (t->p7 && p != der + len) {
			token_release(t);
			return wb_error(e, WB_EUSAGE, "timestamp: trailing bytes after the token");
		}
		if (!t->p7) {
			struct buf clean = BUF_INIT;

			if (drop_attribute_certs(der, len, &clean)) {
				ERR_clear_error();
				p = (const unsigned char *)clean.ptr;
				t->p7 = d2i_PKCS7(NULL, &p, (long)clean.len);
				if (t->p7 && p != (const unsigned char *)clean.ptr + clean.len) {
					PKCS7_free(t->p7);
					t->p7 = NULL;
				}
			}
			buf_release(&clean);
		}
	}
	if (!t->p7 || !(t->tst = PKCS7_to_TS_TST_INFO(t->p7))) {
		char why[256];

		token_release(t);
		return wb_error(e, WB_EUSAGE, "timestamp: not a DER %s (%s)",
				token_only ? "TimeStampToken" : "TimeStampResp or TimeStampToken",
				ossl_reason(why, sizeof(why), "no token", NULL, 0));
	}
	g = TS_TST_INFO_get_time(t->tst);
	if (!g || gen_time(g, &t->gen_time, &t->gen_ns) < 0) {
		token_release(t);
		return wb_error(e, WB_EUSAGE, "timestamp: genTime does not parse");
	}
	return 0;
}

/*
 * The DER of the signing-certificate attribute value V (SigningCertificate
 * or SigningCertificateV2) with its certificate IDs cut to the first (and
 * no policies), OPENSSL_malloc'd; NULL when V does not parse.
 */
static unsigned char *ess_first_id(const ASN1_TYPE *v, long *outlen)
{
	const unsigned char *p, *first;
	long l1, l2, l3, n1;
	int tag, cls, inner, total;
	unsigned char *out, *q;

	if (!v || v->type != V_ASN1_SEQUENCE)
		return NULL;
	p = v->value.sequence->data;
	if ((ASN1_get_object(&p, &l1, &tag, &cls, v->value.sequence->length) & 0x80) ||
	    tag != V_ASN1_SEQUENCE ||
	    (ASN1_get_object(&p, &l2, &tag, &cls, l1) & 0x80) || tag != V_ASN1_SEQUENCE)
		return NULL;
	first = p;
	if ((ASN1_get_object(&p, &l3, &tag, &cls, l2) & 0x80) || tag != V_ASN1_SEQUENCE)
		return NULL;
	n1 = (long)(p - first) + l3;
	if (n1 > l2 || n1 > INT_MAX / 2)
		return NULL;
	inner = ASN1_object_size(1, (int)n1, V_ASN1_SEQUENCE);
	total = ASN1_object_size(1, inner, V_ASN1_SEQUENCE);
	if (inner < 0 || total < 0 || !(out = OPENSSL_malloc((size_t)total)))
		return NULL;
	q = out;
	ASN1_put_object(&q, 1, inner, V_ASN1_SEQUENCE, V_ASN1_UNIVERSAL);
	ASN1_put_object(&q, 1, (int)n1, V_ASN1_SEQUENCE, V_ASN1_UNIVERSAL);
	memcpy(q, first, (size_t)n1);
	*outlen = total;
	return out;
}

/*
 * Microsoft's time-stamping service lists in the token's signing-certificate
 * attribute, after the TSA's certificate, the attribute certificate it
 * carries; OpenSSL's TS verifier (ts_check_signing_certs) wants every
 * listed ID in the X.509 chain, which an attribute certificate never is
 * (drop_attribute_certs). RFC 5035 5.4 and RFC 5816 2.2.1 bind the first
 * ID to the signing certificate; the others only narrow. So after
 * OpenSSL failed on exactly that (ESS_R_ESS_CERT_ID_NOT_FOUND), the token
 * is checked as TS_RESP_verify_signature does, step by step: one signer,
 * its chain to STORE for time-stamping, the ESS check over the first ID,
 * the CMS signature. osslsigncode verifies the token through CMS, which
 * does no ESS check at all. 0 when it all holds.
 */
static int token_check_first_id(const struct token *t, X509_STORE *store,
				STACK_OF(X509) *untrusted)
{
	STACK_OF(PKCS7_SIGNER_INFO) *sis = PKCS7_get_signer_info(t->p7);
	STACK_OF(X509) *certs = untrusted ? X509_chain_up_ref(untrusted) : sk_X509_new_null();
	STACK_OF(X509) *signers = NULL, *chain = NULL;
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	ESS_SIGNING_CERT *v1 = NULL;
	ESS_SIGNING_CERT_V2 *v2 = NULL;
	PKCS7_SIGNER_INFO *si;
	unsigned char *der = NULL, buf[4096];
	const unsigned char *q;
	long dl = 0;
	BIO *b = NULL;
	X509 *signer;
	int r = -1;

	if (!certs || !ctx || sk_PKCS7_SIGNER_INFO_num(sis) != 1)
		goto out;
	si = sk_PKCS7_SIGNER_INFO_value(sis, 0);
	for (int i = 0; i < sk_X509_num(t->p7->d.sign->cert); i++)
		if (!X509_add_cert(certs, sk_X509_value(t->p7->d.sign->cert, i), X509_ADD_FLAG_UP_REF))
			goto out;
	if (!(signers = PKCS7_get0_signers(t->p7, certs, 0)) || sk_X509_num(signers) != 1)
		goto out;
	signer = sk_X509_value(signers, 0);
	if (!X509_STORE_CTX_init(ctx, store, signer, certs))
		goto out;
	X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_TIMESTAMP_SIGN);
	if (X509_verify_cert(ctx) != 1 || !(chain = X509_STORE_CTX_get1_chain(ctx)))
		goto out;
	if ((der = ess_first_id(PKCS7_get_signed_attribute(si, NID_id_smime_aa_signingCertificateV2), &dl))) {
		q = der;
		v2 = d2i_ESS_SIGNING_CERT_V2(NULL, &q, dl);
		OPENSSL_free(der);
	}
	if ((der = ess_first_id(PKCS7_get_signed_attribute(si, NID_id_smime_aa_signingCertificate), &dl))) {
		q = der;
		v1 = d2i_ESS_SIGNING_CERT(NULL, &q, dl);
		OPENSSL_free(der);
	}
	if ((!v1 && !v2) || OSSL_ESS_check_signing_certs(v1, v2, chain, 1) <= 0)
		goto out;
	if (!(b = PKCS7_dataInit(t->p7, NULL)))
		goto out;
	while (BIO_read(b, buf, sizeof(buf)) > 0)
		;
	if (PKCS7_signatureVerify(b, t->p7, si, signer) > 0)
		r = 0;
out:
	BIO_free_all(b);
	ESS_SIGNING_CERT_free(v1);
	ESS_SIGNING_CERT_V2_free(v2);
	sk_X509_pop_free(chain, X509_free);
	sk_X509_free(signers);
	sk_X509_pop_free(certs, X509_free);
	X509_STORE_CTX_free(ctx);
	ERR_clear_error();
	return r;
}

/*
 * The checks every token gets, whoever vouches for it (a Sigstore trusted
 * root's authority, Authenticode's roots): TS_RESP_verify_token with the
 * version, the CMS signature (one signer, the ESS signing-certificate
 * attribute bound to its certificate), the signer's chain to STORE at
 * genTime under the time-stamping purpose (the timeStamping EKU, critical
 * and sole: X509_PURPOSE_TIMESTAMP_SIGN, set by OpenSSL itself) with
 * UNTRUSTED (may be NULL) and the token's own certificates completing it,
 * and the message imprint over SIGNED. STORE and UNTRUSTED stay the
 * caller's; STORE's check time is genTime afterwards. -1 with WB_EVERIFY
 * and OpenSSL's reason; when the chain was what failed, CHAIN (CHAINSZ
 * bytes) holds X509_verify_cert's reason, else "".
 * @where where an RFC 3161 timestamp is checked (the one verifier, for
 *   Sigstore and Authenticode) -- the strict one: SHA-2 imprint, version,
 *   signature with the ESS signing-certificate binding, the TSA chain at
 *   genTime
 */
static int token_check(const struct token *t, const unsigned char *signed_bytes,
		       size_t signed_len, X509_STORE *store, STACK_OF(X509) *untrusted,
		       char *chain, size_t chainsz, struct wb_err *e)
{
	TS_VERIFY_CTX *ctx = TS_VERIFY_CTX_new();
	STACK_OF(X509) *certs = untrusted ? X509_chain_up_ref(untrusted) : sk_X509_new_null();
	BIO *data = BIO_new_mem_buf(signed_bytes, (int)signed_len);
	int r = -1;

	chain[0] = '\0';
	if (!ctx || !certs || !data || signed_len > INT_MAX || !X509_STORE_up_ref(store)) {
		sk_X509_pop_free(certs, X509_free);
		BIO_free(data);
		TS_VERIFY_CTX_free(ctx);
		return wb_error(e, WB_EIO, "timestamp: out of memory");
	}
	X509_VERIFY_PARAM_set_time(X509_STORE_get0_param(store), (time_t)t->gen_time);
	TS_VERIFY_CTX_set_flags(ctx, TS_VFY_VERSION | TS_VFY_SIGNATURE | TS_VFY_DATA);
	/* the context owns what it is given: a reference to STORE, the copy
	 * of UNTRUSTED, DATA (TS_VERIFY_CTX_free frees them) */
	TS_VERIFY_CTX_set_store(ctx, store);
	TS_VERIFY_CTX_set_data(ctx, data);
	TS_VERIFY_CTX_set_certs(ctx, certs);
	if (TS_RESP_verify_token(ctx, t->p7) != 1) {
		char why[512];
		unsigned long last = ERR_peek_last_error();

		if (ERR_GET_LIB(last) != ERR_LIB_ESS ||
		    ERR_GET_REASON(last) != ESS_R_ESS_CERT_ID_NOT_FOUND) {
			wb_error(e, WB_EVERIFY, "%s", ossl_reason(why, sizeof(why),
								  "token does not verify",
								  chain, chainsz));
			goto out;
		}
		ERR_clear_error();
		if (token_check_first_id(t, store, untrusted)) {
			wb_error(e, WB_EVERIFY,
				 "timestamp: the token's signing-certificate attribute does not name its signer first, or the token does not verify");
			goto out;
		}
		/* signature, chain and ESS done: the version and the imprint */
		TS_VERIFY_CTX_set_flags(ctx, TS_VFY_VERSION | TS_VFY_DATA);
		if (TS_RESP_verify_token(ctx, t->p7) != 1) {
			wb_error(e, WB_EVERIFY, "%s", ossl_reason(why, sizeof(why),
								  "token does not verify",
								  chain, chainsz));
			goto out;
		}
	}
	r = 0;
out:
	TS_VERIFY_CTX_free(ctx);
	ERR_clear_error();
	return r;
}

/* T's imprint algorithm is SHA-256, SHA-384 or SHA-512 (RFC 3161 leaves
 * it open; a SHA-1 imprint is a SHA-1 collision away from another
 * signature). */
static int imprint_alg_ok(const struct token *t, struct wb_err *e)
{
	const X509_ALGOR *alg = TS_MSG_IMPRINT_get_algo(TS_TST_INFO_get_msg_imprint(t->tst));
	const ASN1_OBJECT *obj;
	int nid;

	X509_ALGOR_get0(&obj, NULL, NULL, alg);
	nid = OBJ_obj2nid(obj);
	if (nid != NID_sha256 && nid != NID_sha384 && nid != NID_sha512)
		return wb_error(e, WB_EVERIFY,
				"timestamp: message imprint algorithm %s is not SHA-256, SHA-384 or SHA-512",
				nid == NID_undef ? "(unknown)" : OBJ_nid2sn(nid));
	return 0;
}

/* Try one authority; 0 when it vouches for the token over SIGNED. */
static int try_tsa(const struct token *t, const unsigned char *signed_bytes,
		   size_t signed_len, const struct timestamp_authority *a,
		   struct wb_err *e)
{
	int n = a->chain ? sk_X509_num(a->chain) : 0;
	X509_STORE *store = NULL;
	STACK_OF(X509) *untrusted = NULL, *signers = NULL;
	char chain[256];
	int r = -1;

	if (n < 1)
		return wb_error(e, WB_EUSAGE, "timestamp authority has no certificates");
	store = X509_STORE_new();
	untrusted = sk_X509_new_null();
	if (!store || !untrusted) {
		wb_error(e, WB_EIO, "timestamp: out of memory");
		goto out;
	}
	/* the root is the one trust anchor; the rest of the chain (the TSA
	 * certificate first) may complete a token that embeds no certificate */
	X509_STORE_add_cert(store, sk_X509_value(a->chain, n - 1));
	for (int i = 0; i < n - 1; i++) {
		X509_up_ref(sk_X509_value(a->chain, i));
		sk_X509_push(untrusted, sk_X509_value(a->chain, i));
	}
	if (token_check(t, signed_bytes, signed_len, store, untrusted, chain, sizeof(chain), e) < 0)
		goto out;
	/* when the root names the TSA's own certificate, the token's signer
	 * must be that certificate, not another the same CA issued */
	if (n >= 2) {
		X509 *signer;

		signers = PKCS7_get0_signers(t->p7, untrusted, 0);
		signer = signers && sk_X509_num(signers) == 1 ? sk_X509_value(signers, 0) : NULL;
		if (!signer || X509_cmp(signer, sk_X509_value(a->chain, 0))) {
			ERR_clear_error();
			wb_error(e, WB_EVERIFY, "the token's signer is not the authority's certificate");
			goto out;
		}
	}
	if (t->gen_time < a->valid_from || t->gen_time > a->valid_to ||
	    (t->gen_time == a->valid_to && t->gen_ns > 0)) {
		wb_error(e, WB_EVERIFY, "genTime %lld is outside the authority's validity window",
			 (long long)t->gen_time);
		goto out;
	}
	r = 0;
out:
	sk_X509_free(signers);
	X509_STORE_free(store);
	sk_X509_pop_free(untrusted, X509_free);
	ERR_clear_error();
	return r;
}

/*
 * @where where an RFC 3161 timestamp is checked (the one verifier, for
 *   Sigstore and Authenticode) -- Sigstore: against the trusted root's TSAs
 */
int timestamp_verify(const unsigned char *der, size_t der_len,
		     const unsigned char *signed_bytes, size_t signed_len,
		     const struct timestamp_authority *tsas, size_t ntsas,
		     struct timestamp_result *res, struct wb_err *e)
{
	struct token t;

	memset(res, 0, sizeof(*res));
	if (token_parse(der, der_len, 0, &t, e) < 0)
		return -1;
	if (imprint_alg_ok(&t, e) < 0) {
		token_release(&t);
		return -1;
	}
	if (!ntsas) {
		token_release(&t);
		return wb_error(e, WB_EVERIFY, "timestamp: the trusted root has no timestamp authority");
	}
	for (size_t i = 0; i < ntsas; i++) {
		wb_err_clear(e);
		if (try_tsa(&t, signed_bytes, signed_len, &tsas[i], e) == 0) {
			res->gen_time = t.gen_time;
			res->gen_time_ns = t.gen_ns;
			res->tsa_index = i;
			token_release(&t);
			return 0;
		}
		wb_error_prefix(e, "timestamp authority %zu%s%s%s", i, tsas[i].uri ? " '" : "",
				tsas[i].uri ? tsas[i].uri : "", tsas[i].uri ? "'" : "");
	}
	token_release(&t);
	wb_error_prefix(e, "timestamp: no trusted authority verifies it");
	return -1;
}

/* The token's signer's subject, RFC 2253, in OUT ("?" when unknown). */
static void signer_subject(const struct token *t, char *out, size_t outsz)
{
	STACK_OF(X509) *s = PKCS7_get0_signers(t->p7, NULL, 0);
	BIO *b = BIO_new(BIO_s_mem());
	int n = 0;

	if (s && sk_X509_num(s) == 1 && b &&
	    X509_NAME_print_ex(b, X509_get_subject_name(sk_X509_value(s, 0)), 0,
			       XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) >= 0)
		n = BIO_read(b, out, (int)outsz - 1);
	out[n > 0 ? n : 0] = '\0';
	if (n <= 0)
		snprintf(out, outsz, "?");
	BIO_free(b);
	sk_X509_free(s);
	ERR_clear_error();
}

/*
 * @where where an RFC 3161 timestamp is checked (the one verifier, for
 *   Sigstore and Authenticode) -- Authenticode: against the roots file
 */
int timestamp_verify_token(const unsigned char *der, size_t der_len,
			   const unsigned char *signed_bytes, size_t signed_len,
			   X509_STORE *roots, struct timestamp_result *res, struct wb_err *e)
{
	struct token t;
	char chain[256] = "", who[256];
	int r;

	memset(res, 0, sizeof(*res));
	if (token_parse(der, der_len, 1, &t, e) < 0)
		return -1;
	r = imprint_alg_ok(&t, e);
	if (!r)
		r = token_check(&t, signed_bytes, signed_len, roots, NULL, chain, sizeof(chain), e);
	/* the caller's store checks at its own time again */
	X509_VERIFY_PARAM_clear_flags(X509_STORE_get0_param(roots), X509_V_FLAG_USE_CHECK_TIME);
	if (r < 0 && chain[0]) {
		signer_subject(&t, who, sizeof(who));
		wb_error(e, WB_EVERIFY, "timestamp authority '%s' is not trusted: %s", who, chain);
	}
	if (!r) {
		res->gen_time = t.gen_time;
		res->gen_time_ns = t.gen_ns;
	}
	token_release(&t);
	return r;
}

int timestamp_peek_time(const unsigned char *der, size_t der_len,
			int64_t *gen_time_out, struct wb_err *e)
{
	struct token t;

	if (token_parse(der, der_len, 0, &t, e) < 0)
		return -1;
	*gen_time_out = t.gen_time;
	token_release(&t);
	return 0;
}
