/*
 * trust/timestamp: RFC 3161 timestamps against a trusted root's TSAs.
 *
 * Data we did not write: the conformance bundles' timestamps and trusted
 * roots (tests/vectors/sigstore), and the openssl CLI (`openssl ts
 * -reply -text`) as the oracle for each token's genTime. Forgeries: the
 * real tokens over other bytes, under another root, outside windows; and
 * tokens from our own test TSA (OpenSSL's TS_RESP_CTX) for what the real
 * ones cannot show: SHA-1 imprints, a sibling certificate of the same CA, a fraction of a second past the window, a
 * rejected response.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/ts.h>
#include <openssl/x509v3.h>

#include "sigstore_fixtures.h"

/* ------------------------------------------------ conformance tokens */

struct tcase {
	json_t *bundle, *root;
	struct timestamp_authority *tsas;
	size_t ntsas;
	unsigned char *der, *sig;
	size_t der_len, sig_len;
};

static void tcase_load(struct tcase *t, const char *name)
{
	json_t *cases = vec_json("cases.json");
	char *id = xasprintf("conformance/%s", name);
	const json_t *c = fx_case(cases, id), *ms, *ts;

	memset(t, 0, sizeof(*t));
	assert_non_null(c);
	t->bundle = vec_json(json_string_value(json_object_get(c, "bundle")));
	t->root = vec_json(json_string_value(json_object_get(c, "trusted_root")));
	assert_non_null(t->bundle);
	assert_non_null(t->root);
	t->tsas = fx_tsas(t->root, &t->ntsas);
	ts = json_object_get(json_object_get(json_object_get(t->bundle, "verificationMaterial"),
					     "timestampVerificationData"), "rfc3161Timestamps");
	t->der = fx_b64(json_object_get(json_array_get(ts, 0), "signedTimestamp"), &t->der_len);
	assert_non_null(t->der);
	/* the imprint covers the signature: messageSignature.signature, or
	 * the DSSE envelope's (first) signature */
	ms = json_object_get(t->bundle, "messageSignature");
	t->sig = ms ? fx_b64(json_object_get(ms, "signature"), &t->sig_len)
		: fx_b64(json_object_get(json_array_get(json_object_get(json_object_get(t->bundle,
			"dsseEnvelope"), "signatures"), 0), "sig"), &t->sig_len);
	assert_non_null(t->sig);
	free(id);
	json_decref(cases);
}

static void tcase_free(struct tcase *t)
{
	fx_tsas_free(t->tsas, t->ntsas);
	free(t->der);
	free(t->sig);
	json_decref(t->bundle);
	json_decref(t->root);
}

/* genTime as the openssl CLI prints it ("Time stamp: Jun 12 12:02:20 2025
 * GMT", possibly with a fraction), in Unix seconds; -1 if it cannot. */
static int64_t oracle_gen_time(const unsigned char *der, size_t len)
{
	char path[] = "/tmp/wb-ts-XXXXXX", cmd[128], line[256];
	int fd = mkstemp(path);
	FILE *p;
	int64_t r = -1;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, der, len), (ssize_t)len);
	close(fd);
	snprintf(cmd, sizeof(cmd), "openssl ts -reply -in %s -text 2>/dev/null", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		struct tm tm;
		char *rest;

		if (strncmp(line, "Time stamp: ", 12))
			continue;
		memset(&tm, 0, sizeof(tm));
		rest = strptime(line + 12, "%b %d %H:%M:%S", &tm);
		if (!rest)
			break;
		while (*rest && *rest != ' ')
			rest++;             /* a fraction, if any */
		if (sscanf(rest, " %d", &tm.tm_year) == 1) {
			tm.tm_year -= 1900;
			r = (int64_t)timegm(&tm);
		}
	}
	pclose(p);
	unlink(path);
	return r;
}

static const struct {
	const char *name, *needle;    /* needle NULL: verifies */
} table[] = {
	{ "bundle-with-sct-with-extensions", NULL },
	{ "intoto-tsa-timestamp-outside-cert-validity_fail", NULL },   /* cert window: sigcore */
	{ "intoto-with-custom-trust-root", NULL },
	{ "managed-key-happy-path", NULL },
	{ "rekor2-checkpoint-cosigned", NULL },
	{ "rekor2-dsse-happy-path", NULL },
	{ "rekor2-dsse-mismatch-envelope_fail", NULL },   /* the timestamp is the envelope's */
	{ "rekor2-happy-path", NULL },
	{ "rekor2-timestamp-outside-trust-root-tsa-validity_fail", "genTime 1749729740 is outside the authority's validity window" },
	{ "rekor2-timestamp-outside-tsa-cert-validity_fail", "certificate has expired" },
	{ "rekor2-timestamp-payload-mismatch_fail", "message imprint mismatch" },
	{ "rekor2-timestamp-untrusted-tsa-with-embedded-cert_fail", "self-signed certificate in certificate chain" },
	{ "rekor2-timestamp-untrusted-tsa-without-embedded-cert_fail", "signer certificate not found" },
	{ "rekor2-timestamp-with-embedded-cert", NULL },
	{ "rekor2-timestamp-with-expired-cert-chain", NULL },
	{ "rekor2-timestamp-with-incorrect-time_fail", NULL },   /* cert window: sigcore */
	{ "rekor2-timestamp-without-embedded-cert", NULL },
	{ "trust-root-tsa-validity-end-inclusive", NULL },
};

static void test_conformance(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		struct tcase t;
		struct timestamp_result res;
		struct wb_err e = WB_ERR_INIT;
		int r;

		tcase_load(&t, table[i].name);
		r = timestamp_verify(t.der, t.der_len, t.sig, t.sig_len, t.tsas, t.ntsas, &res, &e);
		if (table[i].needle) {
			if (r != -1 || e.code != WB_EVERIFY || !strstr(e.msg, table[i].needle))
				fail_msg("%s: want \"%s\", got %d: %s", table[i].name, table[i].needle, r, e.msg);
		} else {
			if (r != 0)
				fail_msg("%s: %s", table[i].name, e.msg);
			assert_int_equal(res.gen_time, oracle_gen_time(t.der, t.der_len));
			assert_true(res.tsa_index < t.ntsas);
		}
		tcase_free(&t);
	}
}

/* Every conformance bundle with a timestamp is in the table. */
static void test_table_covers_cases(void **state)
{
	json_t *cases = vec_json("cases.json");
	const json_t *c;
	size_t i, with_ts = 0;

	(void)state;
	json_array_foreach(cases, i, c) {
		const char *name = json_string_value(json_object_get(c, "case")) + strlen("conformance/");
		json_t *b;
		int found = 0;

		if (!strcmp(name, "bundle-malformed-json_fail"))
			continue;
		b = vec_json(json_string_value(json_object_get(c, "bundle")));

		if (b && json_array_size(json_object_get(json_object_get(json_object_get(b,
				"verificationMaterial"), "timestampVerificationData"), "rfc3161Timestamps"))) {
			for (size_t j = 0; j < ARRAY_SIZE(table); j++)
				found |= !strcmp(table[j].name, name);
			/* the other rekor2 cases share rekor2-happy-path's token,
			 * the managed-key ones managed-key-happy-path's */
			if (!found && !strncmp(name, "rekor2-", 7)) {
				found = 1;
			} else if (!found && !strncmp(name, "managed-key-", 12)) {
				found = 1;
			} else if (!found && !strcmp(name, "trust-root-tlog-missing-validity-start_fail")) {
				found = 1;
			}
			if (!found)
				fail_msg("%s has a timestamp and is not in the table", name);
			with_ts++;
		}
		json_decref(b);
	}
	assert_int_equal(with_ts, 33);
	json_decref(cases);
}

static void test_real_token_forgeries(void **state)
{
	struct tcase t, other;
	struct timestamp_result res;
	struct wb_err e = WB_ERR_INIT;
	int64_t g;

	(void)state;
	tcase_load(&t, "rekor2-happy-path");
	assert_int_equal(timestamp_verify(t.der, t.der_len, t.sig, t.sig_len, t.tsas, t.ntsas, &res, &e), 0);
	g = res.gen_time;
	assert_int_equal(g, 1749729740);

	/* an imprint over other bytes */
	t.sig[7] ^= 1;
	assert_int_equal(timestamp_verify(t.der, t.der_len, t.sig, t.sig_len, t.tsas, t.ntsas, &res, &e), -1);
	assert_err(&e, WB_EVERIFY, "message imprint mismatch");
	t.sig[7] ^= 1;
	assert_int_equal(timestamp_verify(t.der, t.der_len, t.sig, t.sig_len - 1, t.tsas, t.ntsas, &res, &e), -1);
	assert_err(&e, WB_EVERIFY, "message imprint mismatch");

	/* the TSA's validity window, inclusive at both ends */
	t.tsas[0].valid_from = g;
	t.tsas[0].valid_to = g;
	wb_err_clear(&e);
	assert_int_equal(timestamp_verify(t.der, t.der_len, t.sig, t.sig_len, t.tsas, t.ntsas, &res, &e), 0);
	t.tsas[0].valid_to = g - 1;
	assert_int_equal(timestamp_verify(t.der, t.der_len, t.sig, t.sig_len, t.tsas, t.ntsas, &res, &e), -1);
	assert_err(&e, WB_EVERIFY, "genTime 1749729740 is outside the authority's validity window");
	t.tsas[0].valid_from = g + 1;
	t.tsas[0].valid_to = INT64_MAX;
	assert_int_equal(timestamp_verify(t.der, t.der_len, t.sig, t.sig_len, t.tsas, t.ntsas, &res, &e), -1);
	assert_err(&e, WB_EVERIFY, "outside the authority's validity window");
	t.tsas[0].valid_from = INT64_MIN;

	/* an untrusted TSA: the production root's authority (GitHub's) */
	memset(&other, 0, sizeof(other));
	other.root = vec_json("trusted_root/public-good.json");
	assert_non_null(other.root);
	other.tsas = fx_tsas(other.root, &other.ntsas);
	assert_true(other.ntsas >= 1);
	wb_err_clear(&e);
	assert_int_equal(timestamp_verify(t.der, t.der_len, t.sig, t.sig_len, other.tsas, other.ntsas,
					  &res, &e), -1);
	assert_err(&e, WB_EVERIFY, "timestamp: no trusted authority verifies it");
	/* no authority at all */
	wb_err_clear(&e);
	assert_int_equal(timestamp_verify(t.der, t.der_len, t.sig, t.sig_len, NULL, 0, &res, &e), -1);
	assert_err(&e, WB_EVERIFY, "the trusted root has no timestamp authority");
	/* the right one among others: the first that verifies wins */
	{
		struct timestamp_authority two[2] = { other.tsas[0], t.tsas[0] };

		wb_err_clear(&e);
		assert_int_equal(timestamp_verify(t.der, t.der_len, t.sig, t.sig_len, two, 2, &res, &e), 0);
		assert_int_equal(res.tsa_index, 1);
	}
	/* an authority whose root is the TSA certificate's issuer but which
	 * names no TSA certificate (root only) still needs the signer found */
	{
		struct timestamp_authority root_only = t.tsas[0];

		root_only.chain = sk_X509_new_null();
		sk_X509_push(root_only.chain, sk_X509_value(t.tsas[0].chain, sk_X509_num(t.tsas[0].chain) - 1));
		wb_err_clear(&e);
		/* rekor2-happy-path's token embeds its signer: it verifies */
		assert_int_equal(timestamp_verify(t.der, t.der_len, t.sig, t.sig_len, &root_only, 1, &res, &e), 0);
		sk_X509_free(root_only.chain);
	}

	/* truncated and garbage DER */
	wb_err_clear(&e);
	assert_int_equal(timestamp_verify(t.der, t.der_len / 2, t.sig, t.sig_len, t.tsas, t.ntsas, &res, &e), -1);
	assert_err(&e, WB_EUSAGE, "not a DER TimeStampResp or TimeStampToken");
	wb_err_clear(&e);
	assert_int_equal(timestamp_verify((const unsigned char *)"0", 1, t.sig, t.sig_len, t.tsas, t.ntsas, &res, &e), -1);
	assert_err(&e, WB_EUSAGE, "not a DER");
	tcase_free(&other);
	tcase_free(&t);
}

/* The same token as a bare TimeStampToken (the response's second part). */
static void test_bare_token(void **state)
{
	struct tcase t;
	struct timestamp_result res;
	struct wb_err e = WB_ERR_INIT;
	const unsigned char *p;
	TS_RESP *resp;
	unsigned char *tok = NULL;
	int n;

	(void)state;
	tcase_load(&t, "rekor2-timestamp-with-embedded-cert");
	p = t.der;
	resp = d2i_TS_RESP(NULL, &p, (long)t.der_len);
	assert_non_null(resp);
	n = i2d_PKCS7(TS_RESP_get_token(resp), &tok);
	assert_true(n > 0);
	assert_int_equal(timestamp_verify(tok, (size_t)n, t.sig, t.sig_len, t.tsas, t.ntsas, &res, &e), 0);
	assert_int_equal(res.gen_time, oracle_gen_time(t.der, t.der_len));
	{
		int64_t peek;

		assert_int_equal(timestamp_peek_time(tok, (size_t)n, &peek, &e), 0);
		assert_int_equal(peek, res.gen_time);
	}
	OPENSSL_free(tok);
	TS_RESP_free(resp);
	tcase_free(&t);
}

/* ------------------------------------------------ our own test TSA */

struct tsa {
	EVP_PKEY *ca_key, *key;
	X509 *ca, *cert;
};

static X509 *make_cert(X509 *issuer, EVP_PKEY *issuer_key, EVP_PKEY *key, const char *cn,
		       long serial, int ca, const char *eku)
{
	X509 *x = X509_new();
	X509_NAME *name = X509_NAME_new();
	X509V3_CTX ctx;
	X509_EXTENSION *ext;

	assert_non_null(x);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_subject_name(x, name);
	X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
	ASN1_TIME_set(X509_getm_notBefore(x), 1700000000);
	ASN1_TIME_set(X509_getm_notAfter(x), 1900000000);
	X509_set_pubkey(x, key);
	X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_key_usage, ca ? "critical,keyCertSign" : "critical,digitalSignature");
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	if (eku) {
		ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_ext_key_usage, eku);
		X509_add_ext(x, ext, -1);
		X509_EXTENSION_free(ext);
	}
	assert_true(X509_sign(x, issuer_key, EVP_sha256()) > 0);
	X509_NAME_free(name);
	return x;
}

static long serial = 100;

static void tsa_init(struct tsa *t, const char *eku)
{
	t->ca_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	t->key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	assert_non_null(t->ca_key);
	assert_non_null(t->key);
	/* distinct serials: the signer is looked up by issuer and serial */
	serial += 2;
	t->ca = make_cert(NULL, t->ca_key, t->ca_key, "test tsa root", serial, 1, NULL);
	t->cert = make_cert(t->ca, t->ca_key, t->key, "test tsa", serial + 1, 0, eku);
}

static void tsa_free(struct tsa *t)
{
	EVP_PKEY_free(t->ca_key);
	EVP_PKEY_free(t->key);
	X509_free(t->ca);
	X509_free(t->cert);
}

/* The authority a trusted root would list for T (leaf, root). */
static void tsa_authority(const struct tsa *t, struct timestamp_authority *a)
{
	memset(a, 0, sizeof(*a));
	a->chain = sk_X509_new_null();
	X509_up_ref(t->cert);
	X509_up_ref(t->ca);
	sk_X509_push(a->chain, t->cert);
	sk_X509_push(a->chain, t->ca);
	a->valid_from = INT64_MIN;
	a->valid_to = INT64_MAX;
}

static long fixed_sec, fixed_usec;

static int time_cb(TS_RESP_CTX *ctx, void *data, long *sec, long *usec)
{
	(void)ctx;
	(void)data;
	*sec = fixed_sec;
	*usec = fixed_usec;
	return 1;
}

/* A TimeStampResp by SIGNER over DATA with MD, at SEC.USEC. */
static unsigned char *stamp(X509 *signer, EVP_PKEY *key, const EVP_MD *md, const void *data,
			    size_t len, long sec, long usec, int reject, size_t *out_len)
{
	TS_RESP_CTX *ctx = TS_RESP_CTX_new();
	TS_REQ *req = TS_REQ_new();
	TS_MSG_IMPRINT *mi = TS_MSG_IMPRINT_new();
	X509_ALGOR *alg = X509_ALGOR_new();
	ASN1_OBJECT *policy = OBJ_txt2obj("1.3.6.1.4.1.57264.2", 1);
	unsigned char h[EVP_MAX_MD_SIZE], *der = NULL;
	unsigned int hlen;
	BIO *bio = BIO_new(BIO_s_mem());
	TS_RESP *resp;
	int n;

	EVP_Digest(data, len, h, &hlen, md, NULL);
	X509_ALGOR_set0(alg, OBJ_nid2obj(EVP_MD_get_type(md)), V_ASN1_NULL, NULL);
	TS_MSG_IMPRINT_set_algo(mi, alg);
	TS_MSG_IMPRINT_set_msg(mi, h, (int)hlen);
	TS_REQ_set_version(req, 1);
	TS_REQ_set_msg_imprint(req, mi);
	TS_REQ_set_cert_req(req, 1);
	assert_true(i2d_TS_REQ_bio(bio, req) > 0);

	TS_RESP_CTX_set_signer_cert(ctx, signer);
	TS_RESP_CTX_set_signer_key(ctx, key);
	TS_RESP_CTX_set_def_policy(ctx, policy);
	TS_RESP_CTX_add_md(ctx, EVP_sha256());
	TS_RESP_CTX_add_md(ctx, EVP_sha1());
	TS_RESP_CTX_set_clock_precision_digits(ctx, 6);
	fixed_sec = sec;
	fixed_usec = usec;
	TS_RESP_CTX_set_time_cb(ctx, time_cb, NULL);
	resp = TS_RESP_create_response(ctx, bio);
	assert_non_null(resp);
	if (reject) {
		/* a response that refuses: status rejection, no token */
		TS_STATUS_INFO *si = TS_STATUS_INFO_new();

		TS_RESP_free(resp);
		resp = TS_RESP_new();
		TS_STATUS_INFO_set_status(si, TS_STATUS_REJECTION);
		TS_RESP_set_status_info(resp, si);
		TS_STATUS_INFO_free(si);
	}
	n = i2d_TS_RESP(resp, &der);
	assert_true(n > 0);
	*out_len = (size_t)n;
	TS_RESP_free(resp);
	TS_RESP_CTX_free(ctx);
	TS_REQ_free(req);
	TS_MSG_IMPRINT_free(mi);
	X509_ALGOR_free(alg);
	ASN1_OBJECT_free(policy);
	BIO_free(bio);
	return der;
}

static void test_own_tsa(void **state)
{
	static const char sig[] = "the signature bytes";
	struct tsa good, other;
	struct timestamp_authority a;
	struct timestamp_result res;
	struct wb_err e = WB_ERR_INIT;
	unsigned char *der;
	size_t len;

	(void)state;
	tsa_init(&good, "critical,timeStamping");
	tsa_authority(&good, &a);

	der = stamp(good.cert, good.key, EVP_sha256(), sig, strlen(sig), 1800000000, 250000, 0, &len);
	assert_int_equal(timestamp_verify(der, len, (const unsigned char *)sig, strlen(sig), &a, 1, &res, &e), 0);
	assert_int_equal(res.gen_time, 1800000000);
	assert_int_equal(res.gen_time_ns, 250000000);
	assert_int_equal(res.gen_time, oracle_gen_time(der, len));
	/* a quarter second past the window's inclusive end is outside it */
	a.valid_to = 1800000000;
	wb_err_clear(&e);
	assert_int_equal(timestamp_verify(der, len, (const unsigned char *)sig, strlen(sig), &a, 1, &res, &e), -1);
	assert_err(&e, WB_EVERIFY, "genTime 1800000000 is outside the authority's validity window");
	a.valid_to = INT64_MAX;
	/* after the TSA certificate's notAfter (1900000000) */
	OPENSSL_free(der);
	der = stamp(good.cert, good.key, EVP_sha256(), sig, strlen(sig), 1900000100, 0, 0, &len);
	wb_err_clear(&e);
	assert_int_equal(timestamp_verify(der, len, (const unsigned char *)sig, strlen(sig), &a, 1, &res, &e), -1);
	assert_err(&e, WB_EVERIFY, "certificate has expired");
	OPENSSL_free(der);

	/* a SHA-1 imprint */
	der = stamp(good.cert, good.key, EVP_sha1(), sig, strlen(sig), 1800000000, 0, 0, &len);
	wb_err_clear(&e);
	assert_int_equal(timestamp_verify(der, len, (const unsigned char *)sig, strlen(sig), &a, 1, &res, &e), -1);
	assert_err(&e, WB_EVERIFY, "message imprint algorithm SHA1 is not SHA-256, SHA-384 or SHA-512");
	OPENSSL_free(der);

	/* a rejected request */
	der = stamp(good.cert, good.key, EVP_sha256(), sig, strlen(sig), 1800000000, 0, 1, &len);
	wb_err_clear(&e);
	assert_int_equal(timestamp_verify(der, len, (const unsigned char *)sig, strlen(sig), &a, 1, &res, &e), -1);
	assert_err(&e, WB_EVERIFY, "the response status is 2, not granted");
	OPENSSL_free(der);

	/* another certificate of the same CA signs: the chain holds, but it
	 * is not the authority's TSA certificate */
	{
		EVP_PKEY *k2 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
		X509 *sibling = make_cert(good.ca, good.ca_key, k2, "sibling tsa", 99, 0,
					  "critical,timeStamping");

		der = stamp(sibling, k2, EVP_sha256(), sig, strlen(sig), 1800000000, 0, 0, &len);
		wb_err_clear(&e);
		assert_int_equal(timestamp_verify(der, len, (const unsigned char *)sig, strlen(sig), &a, 1, &res, &e), -1);
		assert_err(&e, WB_EVERIFY, "the token's signer is not the authority's certificate");
		OPENSSL_free(der);
		X509_free(sibling);
		EVP_PKEY_free(k2);
	}

	/* (a TSA certificate whose timeStamping EKU is not critical cannot be
	 * made with OpenSSL's responder, which refuses to sign with it; the
	 * verifier relies on the same purpose check, X509_PURPOSE_TIMESTAMP_SIGN) */

	/* a TSA the root does not list, with its certificate embedded */
	tsa_init(&other, "critical,timeStamping");
	der = stamp(other.cert, other.key, EVP_sha256(), sig, strlen(sig), 1800000000, 0, 0, &len);
	wb_err_clear(&e);
	assert_int_equal(timestamp_verify(der, len, (const unsigned char *)sig, strlen(sig), &a, 1, &res, &e), -1);
	assert_err(&e, WB_EVERIFY, "certificate verify error");
	OPENSSL_free(der);

	timestamp_authority_release(&a);
	tsa_free(&good);
	tsa_free(&other);
}

/* Authenticode's entry (timestamp_verify_token): a bare token only, the
 * same checks of the token, trusted through a store of roots; the
 * caller's store keeps checking at its own time afterwards. */
static void test_token_in_store(void **state)
{
	static const char sig[] = "the signature value";
	struct tsa good;
	struct timestamp_result res;
	struct wb_err e = WB_ERR_INIT;
	unsigned char *der, *tok = NULL;
	const unsigned char *p;
	X509_STORE *roots = X509_STORE_new(), *none = X509_STORE_new();
	TS_RESP *resp;
	size_t len;
	int toklen;

	(void)state;
	tsa_init(&good, "critical,timeStamping");
	X509_STORE_add_cert(roots, good.ca);
	der = stamp(good.cert, good.key, EVP_sha256(), sig, strlen(sig), 1800000000, 0, 0, &len);
	/* a TimeStampResp is not what an Authenticode attribute holds */
	assert_int_equal(timestamp_verify_token(der, len, (const unsigned char *)sig, strlen(sig),
						roots, &res, &e), -1);
	assert_err(&e, WB_EUSAGE, "not a DER TimeStampToken");
	p = der;
	resp = d2i_TS_RESP(NULL, &p, (long)len);
	assert_non_null(resp);
	toklen = i2d_PKCS7(TS_RESP_get_token(resp), &tok);
	assert_true(toklen > 0);
	wb_err_clear(&e);
	assert_int_equal(timestamp_verify_token(tok, (size_t)toklen, (const unsigned char *)sig,
						strlen(sig), roots, &res, &e), 0);
	assert_int_equal(res.gen_time, 1800000000);
	assert_false(X509_VERIFY_PARAM_get_flags(X509_STORE_get0_param(roots)) &
		     X509_V_FLAG_USE_CHECK_TIME);
	/* another signature */
	assert_int_equal(timestamp_verify_token(tok, (size_t)toklen, (const unsigned char *)sig,
						strlen(sig) - 1, roots, &res, &e), -1);
	assert_err(&e, WB_EVERIFY, "message imprint mismatch");
	/* roots without the TSA's: the signer named, with the chain's reason */
	wb_err_clear(&e);
	assert_int_equal(timestamp_verify_token(tok, (size_t)toklen, (const unsigned char *)sig,
						strlen(sig), none, &res, &e), -1);
	assert_err(&e, WB_EVERIFY, "timestamp authority 'CN=test tsa' is not trusted: unable to get local issuer certificate");
	OPENSSL_free(tok);
	TS_RESP_free(resp);
	OPENSSL_free(der);
	X509_STORE_free(roots);
	X509_STORE_free(none);
	tsa_free(&good);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conformance),
		cmocka_unit_test(test_table_covers_cases),
		cmocka_unit_test(test_real_token_forgeries),
		cmocka_unit_test(test_bare_token),
		cmocka_unit_test(test_own_tsa),
		cmocka_unit_test(test_token_in_store),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
