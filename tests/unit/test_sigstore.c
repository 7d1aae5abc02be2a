/* trust/sigstore*: the trusted root, times, base64 fields, certificate
 * identity, and the API on the public conformance vectors
 * (tests/vectors/sigstore; run from the repository root). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/x509.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/json.h"
#include "trust/digest.h"
#include "trust/sigstore.h"
#include "trust/sigstore_cert.h"
#include "trust/sigstore_root.h"

#define V "tests/vectors/sigstore/"
#define PROD_ROOT V "trusted_root/production-sigstore-python.json"
#define GOOD_ROOT V "trusted_root/public-good.json"
#define A_TXT_SHA256 "a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf"
#define OTHER_SHA256 "00cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf"
#define IDENTITY "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main"
#define ISSUER "https://token.actions.githubusercontent.com"

static char *slurp(const char *path, size_t *len)
{
	struct buf b = BUF_INIT;
	struct wb_err e = WB_ERR_INIT;

	assert_int_equal(fs_read_file(path, 8u << 20, WB_EIO, &b, &e), 0);
	return buf_detach(&b, len);
}

static void test_time_parse(void **state)
{
	int64_t t;

	(void)state;
	assert_int_equal(sigstore_time_parse("2021-01-12T11:53:27Z", 1, &t), 0);
	assert_int_equal(t, 1610452407);
	/* fractions: a start rounds up, an end down (inside the window) */
	assert_int_equal(sigstore_time_parse("2022-12-31T23:59:59.999Z", 0, &t), 0);
	assert_int_equal(t, 1672531199);
	assert_int_equal(sigstore_time_parse("2022-12-31T23:59:59.999Z", 1, &t), 0);
	assert_int_equal(t, 1672531200);
	assert_int_equal(sigstore_time_parse("2022-12-31T23:59:59.000Z", 1, &t), 0);
	assert_int_equal(t, 1672531199);
	assert_int_equal(sigstore_time_parse("2021-01-12T12:53:27+01:00", 1, &t), 0);
	assert_int_equal(t, 1610452407);
	assert_int_equal(sigstore_time_parse("2021-01-12T11:53:27", 1, &t), -1);
	assert_int_equal(sigstore_time_parse("2021-01-12 11:53:27Z", 1, &t), -1);
	assert_int_equal(sigstore_time_parse("2021-13-12T11:53:27Z", 1, &t), -1);
	assert_int_equal(sigstore_time_parse("2021-01-12T11:53:27.Z", 1, &t), -1);
	assert_int_equal(sigstore_time_parse("2021-01-12T11:53:27Zjunk", 1, &t), -1);
	assert_int_equal(sigstore_time_parse("", 1, &t), -1);
}

static void test_root_production(void **state)
{
	struct sigstore_root r;
	struct wb_err e = WB_ERR_INIT;
	int64_t t;

	(void)state;
	assert_int_equal(sigstore_root_load(PROD_ROOT, &r, &e), 0);
	assert_int_equal(r.ncas, 2);
	assert_int_equal(r.nctlogs, 2);
	assert_int_equal(r.ntlogs, 2);
	assert_int_equal(r.ntsas, 1);
	assert_int_equal(sk_X509_num(r.cas[1].chain), 2);
	assert_int_equal(sigstore_time_parse("2022-12-31T23:59:59Z", 0, &t), 0);
	assert_int_equal(r.cas[0].valid_to, t);
	assert_int_equal(r.cas[1].valid_to, INT64_MAX);
	assert_int_equal(r.tlogs[0].valid_to, INT64_MAX);
	assert_string_equal(r.tlogs[1].base_url, "https://log2025-1.rekor.sigstore.dev");
	assert_non_null(r.tlogs[1].pkey);
	assert_int_equal(r.tlogs[0].log_id[0], 0xc0);  /* wNI9... */
	assert_int_equal(sk_X509_num(r.tsas[0].chain), 2);
	sigstore_root_release(&r);
	sigstore_root_release(&r);   /* safe twice */
}

/* Load the production root with one edit (python-free: text surgery). */
static int root_with(const char *from, const char *to, struct wb_err *e)
{
	struct sigstore_root r;
	size_t len;
	char *text = slurp(PROD_ROOT, &len), *p = strstr(text, from);
	struct buf b = BUF_INIT;
	int ret;

	assert_non_null(p);
	buf_add(&b, text, (size_t)(p - text));
	buf_adds(&b, to);
	buf_adds(&b, p + strlen(from));
	wb_err_clear(e);
	ret = sigstore_root_parse(b.ptr, b.len, &r, e);
	sigstore_root_release(&r);
	buf_release(&b);
	free(text);
	return ret;
}

static void test_root_refused(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct sigstore_root r;

	(void)state;
	assert_int_equal(root_with("\"start\": \"2021-01-12T11:53:27Z\"",
				   "\"end\": \"2030-01-01T00:00:00Z\"", &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	assert_string_equal(e.msg, "tlogs[0]: validFor: missing start");
	assert_int_equal(root_with("\"start\": \"2021-01-12T11:53:27Z\"",
				   "\"start\": null", &e), -1);
	assert_int_equal(root_with("\"start\": \"2021-01-12T11:53:27Z\"",
				   "\"start\": \"yesterday\"", &e), -1);
	assert_non_null(strstr(e.msg, "bad start"));
	assert_int_equal(root_with("version=0.1", "version=0.2", &e), -1);
	assert_non_null(strstr(e.msg, "mediaType"));
	assert_int_equal(root_with("wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0=",
				   "wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WR", &e), -1);
	assert_non_null(strstr(e.msg, "not 32 bytes"));
	assert_int_equal(root_with("MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2G2Y",
				   "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE2G2Z", &e), -1);
	assert_int_equal(root_with("\"end\": \"2022-12-31T23:59:59.999Z\"",
				   "\"end\": \"2020-12-31T23:59:59.999Z\"", &e), -1);
	assert_non_null(strstr(e.msg, "end before start"));
	/* an end that is null is open */
	assert_int_equal(root_with("\"end\": \"2022-12-31T23:59:59.999Z\"",
				   "\"end\": null", &e), 0);
	wb_err_clear(&e);
	assert_int_equal(sigstore_root_parse("{\"mediaType\": 1", 15, &r, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	assert_int_equal(sigstore_root_load(V "no-such-root.json", &r, &e), -1);
	assert_non_null(strstr(e.msg, "no-such-root.json"));
}

static void test_json_b64(void **state)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:i}", "a", "aGVs\nbG8=", "b",
			      "aGVs bG8=", "c", "aGVsbG8", "d", 1);
	struct wb_err e = WB_ERR_INIT;
	unsigned char *p;
	size_t n;

	(void)state;
	p = json_get_b64(o, "a", "x", &n, &e);
	assert_non_null(p);
	assert_int_equal(n, 5);
	assert_memory_equal(p, "hello", 5);
	free(p);
	p = json_get_b64(o, "c", "x", &n, &e);   /* no padding */
	assert_non_null(p);
	free(p);
	assert_null(json_get_b64(o, "b", "x", &n, &e));
	assert_string_equal(e.msg, "x: 'b' is not base64");
	assert_null(json_get_b64(o, "d", "x", &n, &e));
	assert_null(json_get_b64(o, "z", "x", &n, &e));
	assert_string_equal(e.msg, "x: 'z' is missing or not a string");
	json_decref(o);
}

static X509 *bundle_leaf(const char *path)
{
	json_t *b = json_load_file(path, 0, NULL);
	const json_t *vm = json_object_get(b, "verificationMaterial");
	const json_t *c = json_object_get(vm, "certificate");
	struct wb_err e = WB_ERR_INIT;
	unsigned char *der;
	const unsigned char *p;
	size_t n;
	X509 *x;

	if (!c)
		c = json_array_get(json_object_get(json_object_get(vm, "x509CertificateChain"),
						   "certificates"), 0);
	der = json_get_b64(c, "rawBytes", "leaf", &n, &e);
	assert_non_null(der);
	p = der;
	x = d2i_X509(NULL, &p, (long)n);
	assert_non_null(x);
	free(der);
	json_decref(b);
	return x;
}

static void test_cert_identity(void **state)
{
	X509 *x = bundle_leaf(V "conformance/happy-path-v0.1/bundle.sigstore.json");
	struct wb_err e = WB_ERR_INIT;
	struct sigstore_root r;
	char **sans, *issuer;
	X509 *ca = NULL;
	int64_t t;

	(void)state;
	assert_int_equal(sigstore_cert_identity(x, &sans, &issuer, &e), 0);
	assert_string_equal(sans[0], IDENTITY);
	assert_null(sans[1]);
	assert_string_equal(issuer, ISSUER);
	sigstore_strv_free(sans);
	free(issuer);

	/* the chain holds at the integrated time, not a day later */
	assert_int_equal(sigstore_root_load(GOOD_ROOT, &r, &e), 0);
	assert_int_equal(sigstore_time_parse("2023-07-12T15:56:36Z", 1, &t), 0);
	assert_int_equal(sigstore_cert_verify_chain(x, &r, t, &ca, &e), 0);
	assert_non_null(ca);
	assert_int_equal(sigstore_cert_verify_sct(x, ca, &r, t + 86400, &e), 0);
	X509_free(ca);
	assert_int_equal(sigstore_cert_verify_chain(x, &r, t + 86400, &ca, &e), -1);
	assert_int_equal(e.code, WB_EVERIFY);
	assert_non_null(strstr(e.msg, "certificate has expired"));
	assert_null(ca);
	sigstore_root_release(&r);
	X509_free(x);
}

/* sigstore_verify on a conformance bundle, with the digest only. */
static int verify(const char *bundle, const char *root_path, const char *sha256hex,
		  const char *identity, const char *issuer,
		  struct sigstore_evidence *ev, struct wb_err *e)
{
	struct sigstore_root r;
	struct sigstore_input in;
	unsigned char sha[32];
	size_t len;
	char *text = slurp(bundle, &len);
	int ret;

	assert_int_equal(sigstore_root_load(root_path, &r, e), 0);
	assert_int_equal(digest_unhex(sha256hex, sha, 32), 0);
	memset(&in, 0, sizeof(in));
	in.artifact_sha256 = sha;
	in.bundle = text;
	in.bundle_len = len;
	in.root = &r;
	in.identity = identity;
	in.issuer = issuer;
	wb_err_clear(e);
	ret = sigstore_verify(&in, ev, e);
	sigstore_root_release(&r);
	free(text);
	return ret;
}

static void test_verify_evidence(void **state)
{
	struct sigstore_evidence ev;
	struct wb_err e = WB_ERR_INIT;

	(void)state;
	assert_int_equal(verify(V "conformance/happy-path-v0.1/bundle.sigstore.json",
				GOOD_ROOT, A_TXT_SHA256, IDENTITY, ISSUER, &ev, &e), 0);
	assert_int_equal(ev.material, SIGSTORE_MATERIAL_CERTIFICATE);
	assert_int_equal(ev.content, SIGSTORE_CONTENT_MESSAGE);
	assert_int_equal(ev.bundle_minor, 1);
	assert_string_equal(ev.identity, IDENTITY);
	assert_string_equal(ev.issuer, ISSUER);
	assert_int_equal(ev.has_tlog, 1);
	assert_int_equal(ev.log_index, 27246492);
	assert_int_equal(ev.integrated_time, 1689177396);
	assert_int_equal(ev.signed_time, 1689177396);
	assert_string_equal(ev.log_id,
			    "c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d");
	assert_string_equal(ev.tlog_kind, "hashedrekord 0.0.1");
	sigstore_evidence_release(&ev);

	/* DSSE: the signature verifies, but not for another digest */
	assert_int_equal(verify(V "conformance/happy-path-intoto-in-dsse-v3/bundle.sigstore.json",
				GOOD_ROOT, A_TXT_SHA256, IDENTITY, ISSUER, &ev, &e), 0);
	assert_int_equal(ev.content, SIGSTORE_CONTENT_DSSE);
	sigstore_evidence_release(&ev);
	assert_int_equal(verify(V "conformance/happy-path-intoto-in-dsse-v3/bundle.sigstore.json",
				GOOD_ROOT, OTHER_SHA256, IDENTITY, ISSUER, &ev, &e), -1);
	assert_int_equal(e.code, WB_EVERIFY);
	assert_non_null(strstr(e.msg, "no subject of the in-toto statement"));
}

static void test_evidence_json(void **state)
{
	struct sigstore_evidence ev, back;
	struct wb_err e = WB_ERR_INIT;
	json_t *o, *bad;
	char *text;

	(void)state;
	assert_int_equal(verify(V "conformance/happy-path-v0.2/bundle.sigstore.json",
				GOOD_ROOT, A_TXT_SHA256, IDENTITY, ISSUER, &ev, &e), 0);
	o = sigstore_evidence_to_json(&ev);
	text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(text,
		"{\"bundle_version\":\"0.2\",\"content\":\"message\",\"identity\":\"" IDENTITY "\","
		"\"issuer\":\"" ISSUER "\",\"material\":\"certificate\","
		"\"signed_time\":\"2023-07-12T15:56:36Z\",\"timestamps\":0,"
		"\"tlog\":{\"integrated_time\":1689177396,\"kind\":\"hashedrekord 0.0.1\","
		"\"log_id\":\"c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d\","
		"\"log_index\":27246492}}");
	free(text);
	assert_int_equal(sigstore_evidence_from_json(o, &back, &e), 0);
	assert_int_equal(back.material, ev.material);
	assert_int_equal(back.content, ev.content);
	assert_int_equal(back.bundle_minor, 2);
	assert_string_equal(back.identity, ev.identity);
	assert_string_equal(back.issuer, ev.issuer);
	assert_int_equal(back.log_index, ev.log_index);
	assert_int_equal(back.integrated_time, ev.integrated_time);
	assert_string_equal(back.log_id, ev.log_id);
	assert_string_equal(back.tlog_kind, ev.tlog_kind);
	assert_int_equal(back.signed_time, ev.signed_time);
	sigstore_evidence_release(&back);

	/* what is not evidence is refused */
	bad = json_deep_copy(o);
	json_object_set_new(bad, "material", json_string("password"));
	assert_int_equal(sigstore_evidence_from_json(bad, &back, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	json_decref(bad);
	bad = json_deep_copy(o);
	json_object_set_new(json_object_get(bad, "tlog"), "log_id", json_string("c0d2"));
	assert_int_equal(sigstore_evidence_from_json(bad, &back, &e), -1);
	json_decref(bad);
	bad = json_deep_copy(o);
	json_object_del(bad, "issuer");
	assert_int_equal(sigstore_evidence_from_json(bad, &back, &e), -1);
	assert_null(back.identity);
	json_decref(bad);
	json_decref(o);
	sigstore_evidence_release(&ev);
}

static void test_verify_refusals(void **state)
{
	struct sigstore_evidence ev;
	struct wb_err e = WB_ERR_INIT;

	(void)state;
	/* a message digest that is not the artifact's */
	assert_int_equal(verify(V "conformance/happy-path-v0.3/bundle.sigstore.json",
				GOOD_ROOT, OTHER_SHA256, IDENTITY, ISSUER, &ev, &e), -1);
	assert_int_equal(e.code, WB_EVERIFY);
	/* identity and issuer are exact: a prefix is not a match */
	assert_int_equal(verify(V "conformance/happy-path-v0.3/bundle.sigstore.json",
				GOOD_ROOT, A_TXT_SHA256, "https://github.com/sigstore-conformance/",
				ISSUER, &ev, &e), -1);
	assert_int_equal(e.code, WB_EVERIFY);
	assert_int_equal(verify(V "conformance/happy-path-v0.3/bundle.sigstore.json",
				GOOD_ROOT, A_TXT_SHA256, IDENTITY, ISSUER "/", &ev, &e), -1);
	assert_int_equal(e.code, WB_EVERIFY);
	/* malformed and unknown bundles could not be checked */
	assert_int_equal(verify(V "conformance/bundle-unknown-version_fail/bundle.sigstore.json",
				GOOD_ROOT, A_TXT_SHA256, IDENTITY, ISSUER, &ev, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	assert_int_equal(verify(V "conformance/bundle-malformed-json_fail/bundle.sigstore.json",
				GOOD_ROOT, A_TXT_SHA256, IDENTITY, ISSUER, &ev, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	/* a policy needs both an identity and an issuer */
	assert_int_equal(verify(V "conformance/happy-path-v0.3/bundle.sigstore.json",
				GOOD_ROOT, A_TXT_SHA256, IDENTITY, NULL, &ev, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time_parse),
		cmocka_unit_test(test_root_production),
		cmocka_unit_test(test_root_refused),
		cmocka_unit_test(test_json_b64),
		cmocka_unit_test(test_cert_identity),
		cmocka_unit_test(test_verify_evidence),
		cmocka_unit_test(test_verify_refusals),
		cmocka_unit_test(test_evidence_json),
	};

	return cmocka_run_group_tests_name("sigstore", tests, NULL, NULL);
}
