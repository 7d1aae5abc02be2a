/* trust/verify: policy decisions and the verdict, on hand-built plans. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <jansson.h>

#include "lib/buf.h"
#include "trust/minisign.h"
#include "trust/verify.h"

#define DATA "the artifact bytes\n"

struct fx {
	struct trust_spec spec;
	struct trust_policy pol;
	struct trust_aux aux[8];
	struct digest_result dr;
	char sha256[65], sha512[129];
	struct verify_needs needs;
	struct verify_input in;
	struct verify_evidence ev;
	struct wb_err e;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	struct digest_ctx d;
	struct wb_err e = WB_ERR_INIT;

	memset(&d, 0, sizeof(d));
	assert_int_equal(digest_init(&d, DIGEST_SHA256 | DIGEST_SHA512 | DIGEST_BLAKE2B512 | DIGEST_SHA1, &e), 0);
	digest_update(&d, DATA, strlen(DATA));
	digest_final(&d, &f->dr);
	digest_hex(f->dr.sha256, 32, f->sha256);
	digest_hex(f->dr.sha512, 64, f->sha512);
	f->spec.name = "demo";
	f->spec.filename = "demo.tar.gz";
	f->pol.allow_http = 1;
	f->in.spec = &f->spec;
	f->in.aux = f->aux;
	f->in.policy = &f->pol;
	f->in.needs = &f->needs;
	f->in.dr = &f->dr;
	f->in.url = "https://example.org/demo.tar.gz";
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	trust_spec_release(&f->spec);
	verify_evidence_release(&f->ev);
	free(f);
	return 0;
}

/* Add a requirement of M fetched from URL; its index. */
static size_t add_req(struct fx *f, const struct trust_method *m, const char *url)
{
	struct trust_req *q = trust_spec_add(&f->spec, m, NULL);

	wb_strlist_push(&q->urls, url);
	return f->spec.nreqs - 1;
}

/* Drop every requirement (and the fetched files). */
static void clear_reqs(struct fx *f)
{
	for (size_t i = 0; i < f->spec.nreqs; i++)
		trust_req_release(&f->spec.reqs[i]);
	f->spec.nreqs = 0;
	memset(f->aux, 0, sizeof(f->aux));
}

static void set_aux(struct fx *f, size_t i, const char *text, const char *url)
{
	f->aux[i].text = text;
	f->aux[i].len = text ? strlen(text) : 0;
	if (url)
		f->aux[i].url = url;
}

static int plan_and_verify(struct fx *f)
{
	wb_err_clear(&f->e);
	if (verify_plan(&f->spec, &f->pol, f->in.lock_sha256, 0, &f->needs, &f->e) < 0)
		return -1;
	verify_evidence_release(&f->ev);
	return verify_artifact(&f->in, &f->ev, &f->e);
}

static void test_pinned_sha256(void **state)
{
	struct fx *f = *state;

	f->spec.sha256 = xstrdup(f->sha256);
	assert_int_equal(plan_and_verify(f), 0);
	/* SHA-256 alone: no SHA-512 for the SBOM (issue 19), BLAKE2b only
	 * when a signature needs it */
	assert_int_equal(f->needs.digest_algs, DIGEST_SHA256);
	assert_true(f->ev.methods & VERIFY_PINNED_SHA256);
}

static void test_pinned_sha256_mismatch(void **state)
{
	struct fx *f = *state;
	char bad[65];

	memcpy(bad, f->sha256, 65);
	bad[0] = bad[0] == '0' ? '1' : '0';
	f->spec.sha256 = xstrdup(bad);
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
	assert_non_null(strstr(f->e.msg, "'demo'"));
	assert_non_null(strstr(f->e.msg, bad));
	assert_non_null(strstr(f->e.msg, f->sha256));
	assert_non_null(strstr(f->e.msg, "https://example.org/demo.tar.gz"));
}

static void test_pinned_sha512(void **state)
{
	struct fx *f = *state;

	f->spec.sha512 = xstrdup(f->sha512);
	assert_int_equal(plan_and_verify(f), 0);
	assert_int_equal(f->needs.digest_algs, DIGEST_SHA256 | DIGEST_SHA512);
	f->spec.sha512[5] ^= 1;
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
}

static void test_all_methods_must_pass(void **state)
{
	struct fx *f = *state;
	char *good;

	f->spec.sha256 = xstrdup(f->sha256);
	f->spec.sha512 = xstrdup(f->sha512);
	f->spec.sha512[0] = f->spec.sha512[0] == 'a' ? 'b' : 'a';
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
	assert_non_null(strstr(f->e.msg, "sha512"));
	good = xstrdup(f->sha512);
	free(f->spec.sha512);
	f->spec.sha512 = good;
	assert_int_equal(plan_and_verify(f), 0);
}

static void test_checksum_file(void **state)
{
	struct fx *f = *state;
	char *text = xasprintf("%s  demo.tar.gz\n%s  other.zip\n", f->sha256,
			       "0000000000000000000000000000000000000000000000000000000000000000");

	add_req(f, &trust_m_sha256_url, "https://example.org/SHA256SUMS");
	set_aux(f, 0, text, "https://example.org/SHA256SUMS");
	assert_int_equal(plan_and_verify(f), 0);
	assert_int_equal(f->needs.digest_algs, DIGEST_SHA256);
	assert_int_equal(f->ev.nr, 1);
	assert_string_equal(f->ev.v[0].url, "https://example.org/SHA256SUMS");
	free(text);

	/* names only another file: could not check */
	text = xasprintf("%s  other.zip\n", f->sha256);
	set_aux(f, 0, text, NULL);
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EUSAGE);
	assert_non_null(strstr(f->e.msg, "SHA256SUMS"));
	free(text);

	/* a digest for our file that does not match */
	text = xstrdup("1111111111111111111111111111111111111111111111111111111111111111  demo.tar.gz\n");
	set_aux(f, 0, text, NULL);
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
	free(text);
}

/* A checksum file the plan asks for but nobody fetched never passes,
 * whichever file it is and whatever else verified. */
static void test_checksum_file_not_fetched(void **state)
{
	struct fx *f = *state;

	f->spec.sha256 = xstrdup(f->sha256);
	add_req(f, &trust_m_sha256_url, "https://example.org/SHA256SUMS");
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_not_equal(f->e.code, 0);
	assert_non_null(strstr(f->e.msg, "checksum file was not fetched"));
	clear_reqs(f);

	/* the sha512 file as well, with only the sha256 one given */
	free(f->spec.sha256);
	f->spec.sha256 = NULL;
	add_req(f, &trust_m_sha512_url, "https://example.org/SHA512SUMS");
	set_aux(f, 1, "", "https://example.org/SHA256SUMS");
	assert_int_equal(plan_and_verify(f), -1);
	assert_non_null(strstr(f->e.msg, "checksum file was not fetched"));
}

/* A recipe's pins hold even when a checksum file (or signature) matched:
 * they are ANDed, never skipped. */
static void test_pin_holds_beside_checksum_file(void **state)
{
	struct fx *f = *state;
	char *text = xasprintf("%s  demo.tar.gz\n", f->sha256);
	char *text512 = xasprintf("%s  demo.tar.gz\n", f->sha512);
	char bad[65];

	memcpy(bad, f->sha256, 65);
	bad[10] = bad[10] == '0' ? '1' : '0';
	f->spec.sha256 = xstrdup(bad);
	add_req(f, &trust_m_sha256_url, "https://example.org/SHA256SUMS");
	add_req(f, &trust_m_sha512_url, "https://example.org/SHA512SUMS");
	set_aux(f, 0, text, "https://example.org/SHA256SUMS");
	set_aux(f, 1, text512, "https://example.org/SHA512SUMS");
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
	assert_non_null(strstr(f->e.msg, "sha256 (pinned in the recipe) mismatch"));
	assert_non_null(strstr(f->e.msg, bad));

	/* the sha512 pin likewise */
	free(f->spec.sha256);
	f->spec.sha256 = NULL;
	f->spec.sha512 = xstrdup(f->sha512);
	f->spec.sha512[100] = f->spec.sha512[100] == 'a' ? 'b' : 'a';
	assert_int_equal(plan_and_verify(f), -1);
	assert_non_null(strstr(f->e.msg, "sha512 (pinned in the recipe) mismatch"));
	/* and a lock pin */
	f->spec.sha512[100] = f->sha512[100];
	f->in.lock_sha256 = bad;
	assert_int_equal(plan_and_verify(f), -1);
	assert_non_null(strstr(f->e.msg, "sha256 (pinned in the lock file) mismatch"));
	f->in.lock_sha256 = NULL;
	assert_int_equal(plan_and_verify(f), 0);
	clear_reqs(f);
	free(text);
	free(text512);
}

/* verify_pins: the one check every path to bytes (download, cache ref,
 * cache digest, lock replay) runs. */
static void test_verify_pins(void **state)
{
	struct fx *f = *state;
	char bad[65];

	memcpy(bad, f->sha256, 65);
	bad[0] = bad[0] == '0' ? '1' : '0';
	/* no pins: anything holds */
	assert_int_equal(verify_pins(&f->spec, NULL, "x", f->dr.sha256, NULL, NULL, &f->e), 0);
	assert_null(verify_pinned_sha256(&f->spec, NULL));
	/* the lock's pin, when the recipe has none */
	assert_string_equal(verify_pinned_sha256(&f->spec, f->sha256), f->sha256);
	assert_int_equal(verify_pins(&f->spec, f->sha256, "x", f->dr.sha256, NULL, NULL, &f->e), 0);
	assert_int_equal(verify_pins(&f->spec, bad, "entry", f->dr.sha256, NULL, NULL, &f->e), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
	assert_non_null(strstr(f->e.msg, "'demo' from 'entry'"));
	/* the recipe's pin wins the lookup, and both must hold */
	f->spec.sha256 = xstrdup(f->sha256);
	assert_string_equal(verify_pinned_sha256(&f->spec, bad), f->sha256);
	assert_int_equal(verify_pins(&f->spec, bad, "x", f->dr.sha256, NULL, NULL, &f->e), -1);
	/* a sha512 pin needs the sha512 */
	f->spec.sha512 = xstrdup(f->sha512);
	assert_int_equal(verify_pins(&f->spec, NULL, "x", f->dr.sha256, NULL, NULL, &f->e), -1);
	assert_int_equal(f->e.code, WB_EIO);
	assert_int_equal(verify_pins(&f->spec, NULL, "x", f->dr.sha256, f->dr.sha512, NULL, &f->e), 0);
	f->spec.sha512[1] = f->spec.sha512[1] == 'a' ? 'b' : 'a';
	assert_int_equal(verify_pins(&f->spec, NULL, "x", f->dr.sha256, f->dr.sha512, NULL, &f->e), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
	/* a Windows update's Catalog SHA-1: needed, checked, and a mismatch
	 * names it */
	free(f->spec.sha512);
	f->spec.sha512 = NULL;
	f->spec.sha1 = xmalloc(41);
	digest_hex(f->dr.sha1, 20, f->spec.sha1);
	assert_int_equal(verify_pins(&f->spec, NULL, "x", f->dr.sha256, NULL, NULL, &f->e), -1);
	assert_int_equal(f->e.code, WB_EIO);
	assert_int_equal(verify_pins(&f->spec, NULL, "x", f->dr.sha256, NULL, f->dr.sha1, &f->e), 0);
	f->spec.sha1[0] = f->spec.sha1[0] == 'a' ? 'b' : 'a';
	assert_int_equal(verify_pins(&f->spec, NULL, "x", f->dr.sha256, NULL, f->dr.sha1, &f->e), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
	assert_non_null(strstr(f->e.msg, "sha1 (from the Update Catalog's file name) mismatch"));
	/* and verify_plan asks the stream for it */
	assert_int_equal(verify_plan(&f->spec, NULL, NULL, 0, &f->needs, &f->e), 0);
	assert_true(f->needs.digest_algs & DIGEST_SHA1);
}

/* A lock entry that disagrees with a recipe pin is an error naming both,
 * before anything is fetched, never a silent override. */
static void test_lock_disagrees_with_recipe(void **state)
{
	struct fx *f = *state;
	char bad[65];

	memcpy(bad, f->sha256, 65);
	bad[0] = bad[0] == '0' ? '1' : '0';
	f->spec.sha256 = xstrdup(f->sha256);
	assert_int_equal(verify_plan(&f->spec, &f->pol, bad, 0, &f->needs, &f->e), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
	assert_non_null(strstr(f->e.msg, bad));
	assert_non_null(strstr(f->e.msg, f->sha256));
	assert_non_null(strstr(f->e.msg, "the lock file pins sha256"));
	/* the same digest in capitals agrees */
	memcpy(bad, f->sha256, 65);
	for (char *p = bad; *p; p++)
		*p = *p >= 'a' && *p <= 'f' ? (char)(*p - 32) : *p;
	assert_int_equal(verify_plan(&f->spec, &f->pol, bad, 0, &f->needs, &f->e), 0);
}

static void test_forbid_checksum_urls(void **state)
{
	struct fx *f = *state;

	add_req(f, &trust_m_sha256_url, "https://example.org/SHA256SUMS");
	f->pol.forbid_checksum_urls = 1;
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
	assert_non_null(strstr(f->e.msg, "forbid"));
	/* with a pin as well, the checksum file is simply not used */
	f->spec.sha256 = xstrdup(f->sha256);
	assert_int_equal(plan_and_verify(f), 0);
	assert_false(f->needs.methods & VERIFY_REQS);
	assert_int_equal(f->needs.reqs, 0);
}

static void test_require_signature(void **state)
{
	struct fx *f = *state;

	f->spec.sha256 = xstrdup(f->sha256);
	f->pol.require_signature = 1;
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
	assert_non_null(strstr(f->e.msg, "require"));
	/* a lock pin does not stand in for the signature either */
	f->in.lock_sha256 = f->sha256;
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
}

static void test_signature_required_but_missing_text(void **state)
{
	struct fx *f = *state;

	struct trust_req *q;

	add_req(f, &trust_m_minisign, "https://example.org/demo.tar.gz.minisig");
	q = &f->spec.reqs[0];
	q->keys = xcalloc(1, sizeof(*q->keys));
	q->nkeys = 1;
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EUSAGE);
	/* the signature's prehash, and no SHA-512 nobody checks */
	assert_int_equal(f->needs.digest_algs, DIGEST_SHA256 | DIGEST_BLAKE2B512);
	/* garbage signature text: could not check */
	set_aux(f, 0, "not a signature", "https://example.org/demo.tar.gz.minisig");
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EUSAGE);
	assert_non_null(strstr(f->e.msg, ".minisig"));
}

/* A minisign key pair with key id ID (all bytes ID): the public half in
 * PK, the secret in SK. */
static void make_minisign_key(unsigned char id, struct trust_key *pk,
			      struct minisign_seckey *sk)
{
	EVP_PKEY *k = NULL;
	EVP_PKEY_CTX *kc = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
	size_t len = 32, slen = 32;

	assert_non_null(kc);
	assert_int_equal(EVP_PKEY_keygen_init(kc), 1);
	assert_int_equal(EVP_PKEY_keygen(kc, &k), 1);
	assert_int_equal(EVP_PKEY_get_raw_public_key(k, sk->pk, &len), 1);
	assert_int_equal(EVP_PKEY_get_raw_private_key(k, sk->seed, &slen), 1);
	memset(sk->keyid, id, sizeof(sk->keyid));
	memset(pk, 0, sizeof(*pk));
	memcpy(pk->pk.keyid, sk->keyid, sizeof(sk->keyid));
	memcpy(pk->pk.pk, sk->pk, sizeof(sk->pk));
	pk->pk.file_check = 1;
	minisign_keyid_hex(pk->pk.keyid, pk->keyid_hex);
	EVP_PKEY_free(k);
	EVP_PKEY_CTX_free(kc);
}

/* A further signature requirement (a layer's `signatures`) is ANDed with
 * the artifact's own, each met by its own signature under its own keys. */
static void test_sigreqs_anded(void **state)
{
	struct fx *f = *state;
	struct trust_key ka, kb;
	struct minisign_seckey sa, sb;
	struct trust_req *q;
	struct wb_err e = WB_ERR_INIT;
	const char *tc = "timestamp:1\tfile:demo.tar.gz";
	char *by_a, *by_b;

	make_minisign_key(0xaa, &ka, &sa);
	make_minisign_key(0xbb, &kb, &sb);
	by_a = minisign_sign_prehashed(&sa, f->dr.blake2b512, tc, "a", &e);
	by_b = minisign_sign_prehashed(&sb, f->dr.blake2b512, tc, "b", &e);
	assert_non_null(by_a);
	assert_non_null(by_b);
	add_req(f, &trust_m_minisign, "https://example.org/demo.tar.gz.minisig");
	q = &f->spec.reqs[0];
	q->keys = xcalloc(1, sizeof(*q->keys));
	q->keys[0] = ka;
	q->nkeys = 1;
	add_req(f, &trust_m_minisign, "https://site/demo.tar.gz.site.minisig");
	q = &f->spec.reqs[1];
	q->keys = xcalloc(1, sizeof(*q->keys));
	q->keys[0] = kb;
	q->nkeys = 1;
	q->layered = 1;
	set_aux(f, 0, by_a, "https://example.org/demo.tar.gz.minisig");
	f->aux[1].url = "https://site/demo.tar.gz.site.minisig";
	/* the further signature was never fetched: could not check */
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EUSAGE);
	assert_non_null(strstr(f->e.msg, "not fetched"));
	assert_non_null(strstr(f->e.msg, "signature required by"));
	/* the further requirement signed by the artifact's own key: refused */
	set_aux(f, 1, by_a, NULL);
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
	assert_non_null(strstr(f->e.msg, "site.minisig"));
	/* each by its own key: verified, both signers in the evidence */
	set_aux(f, 1, by_b, NULL);
	assert_int_equal(plan_and_verify(f), 0);
	assert_int_equal(f->ev.nr, 2);
	assert_string_equal(trust_ev_get(&f->ev.v[0], "key_id"), ka.keyid_hex);
	assert_string_equal(trust_ev_get(&f->ev.v[1], "key_id"), kb.keyid_hex);
	assert_string_equal(f->ev.v[0].text, by_a);
	/* the site's key does not satisfy the artifact's own requirement */
	set_aux(f, 0, by_b, NULL);
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
	verify_evidence_release(&f->ev);
	free(by_a);
	free(by_b);
}

static void test_needs_pin(void **state)
{
	struct fx *f = *state;
	char bad[65];

	f->spec.needs_pin = xstrdup("no digest upstream");
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EUSAGE);
	assert_non_null(strstr(f->e.msg, "--accept-new"));
	assert_int_equal(verify_plan(&f->spec, &f->pol, NULL, 1, &f->needs, &f->e), 0);
	assert_int_equal(f->needs.methods, VERIFY_ACCEPTED_NEW);
	f->in.lock_sha256 = f->sha256;
	assert_int_equal(plan_and_verify(f), 0);
	assert_true(f->ev.methods & VERIFY_LOCK_PIN);
	memcpy(bad, f->sha256, 65);
	bad[63] = bad[63] == '0' ? '1' : '0';
	f->in.lock_sha256 = bad;
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
	assert_non_null(strstr(f->e.msg, "lock"));
}

static void test_allow_http(void **state)
{
	struct fx *f = *state;

	assert_true(verify_url_allowed(&f->pol, "http://x/y"));
	f->pol.allow_http = 0;
	assert_false(verify_url_allowed(&f->pol, "http://x/y"));
	assert_false(verify_url_allowed(&f->pol, "HTTP://x/y"));
	assert_true(verify_url_allowed(&f->pol, "https://x/y"));
	assert_true(verify_url_allowed(&f->pol, "file:///x/y"));
	f->spec.sha256 = xstrdup(f->sha256);
	f->in.url = "http://example.org/demo.tar.gz";
	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EVERIFY);
	assert_non_null(strstr(f->e.msg, "allow_http"));
}

static void test_no_method(void **state)
{
	struct fx *f = *state;

	assert_int_equal(plan_and_verify(f), -1);
	assert_int_equal(f->e.code, WB_EUSAGE);
}

static void test_describe(void **state)
{
	struct fx *f = *state;
	json_t *lock, *arr;
	struct verify_evidence back;
	char *s;

	add_req(f, &trust_m_minisign, "https://example.org/demo.tar.gz.minisig");
	add_req(f, &trust_m_sha256_url, "https://example.org/SHA256SUMS");
	f->needs.methods = VERIFY_REQS | VERIFY_SIGNATURE | VERIFY_PINNED_SHA256;
	f->needs.reqs = 3;
	f->ev.methods = f->needs.methods;
	f->ev.v = xcalloc(2, sizeof(*f->ev.v));
	f->ev.nr = 2;
	f->ev.v[0].method = &trust_m_minisign;
	f->ev.v[0].url = xstrdup("https://example.org/demo.tar.gz.minisig");
	f->ev.v[0].text = xstrdup("sig");
	f->ev.v[0].len = 3;
	trust_ev_set(&f->ev.v[0], "key_id", "0123456789ABCDEF");
	trust_ev_set(&f->ev.v[0], "trusted_comment", "file:demo.tar.gz");
	f->ev.v[1].method = &trust_m_sha256_url;
	f->ev.v[1].req = 1;
	f->ev.v[1].url = xstrdup("https://example.org/SHA256SUMS");
	s = verify_evidence_describe(&f->ev);
	assert_non_null(strstr(s, "0123456789ABCDEF"));
	assert_non_null(strstr(s, "file:demo.tar.gz"));
	assert_non_null(strstr(s, "checksum file https://example.org/SHA256SUMS"));
	assert_non_null(strstr(s, "pinned sha256"));
	free(s);
	s = verify_evidence_methods(&f->ev);
	assert_string_equal(s, "minisign, sha256 checksum file, pinned sha256");
	free(s);
	/* the lock's shape */
	lock = verify_evidence_lock_json(&f->ev);
	assert_string_equal(json_string_value(json_object_get(json_object_get(lock, "minisign"),
							      "key_id")), "0123456789ABCDEF");
	assert_string_equal(json_string_value(json_object_get(json_object_get(lock, "minisign"),
							      "signature_url")),
			    "https://example.org/demo.tar.gz.minisig");
	assert_string_equal(json_string_value(json_object_get(lock, "checksum_url")),
			    "https://example.org/SHA256SUMS");
	json_decref(lock);
	/* the cache ref's round trip, and a ref for other requirements */
	arr = verify_evidence_to_json(&f->ev);
	assert_int_equal(verify_evidence_from_json(&f->spec, &f->needs, arr, &back), 0);
	assert_int_equal(back.nr, 2);
	assert_string_equal(back.v[0].text, "sig");
	assert_string_equal(trust_ev_get(&back.v[0], "trusted_comment"), "file:demo.tar.gz");
	verify_evidence_release(&back);
	f->needs.reqs = 1;
	assert_int_equal(verify_evidence_from_json(&f->spec, &f->needs, arr, &back), -1);
	json_decref(arr);
}

/* A method's files as a list: the single-file methods are a list of one,
 * cosign's four (.sig, .cert, the entry, the v3 bundle); slots count every file of every requirement in order; the
 * cache ref's JSON keeps the further files. */
static void test_aux_lists(void **state)
{
	struct fx *f = *state;
	const struct trust_method *cosign = trust_method_find("cosign");
	struct trust_aux_def d;
	struct verify_evidence ev, back;
	struct verify_needs needs;
	json_t *arr;

	assert_non_null(cosign);
	assert_int_equal(trust_method_naux(&trust_m_minisign), 1);
	d = trust_method_aux(&trust_m_minisign, 0);
	assert_string_equal(d.suffix, ".minisig");
	assert_string_equal(d.lock_key, "signature_url");
	assert_int_equal(trust_method_aux(&trust_m_sha256_url, 0).suffix == NULL, 1);
	assert_int_equal(trust_method_naux(cosign), 4);
	assert_string_equal(trust_method_aux(cosign, 1).suffix, ".cert");
	assert_true(trust_method_aux(cosign, 2).flags & TRUST_AUX_OPTIONAL);
	assert_string_equal(trust_method_aux(cosign, 3).suffix, ".sigstore.json");
	assert_true(trust_method_aux(cosign, 3).flags & TRUST_AUX_PREFERRED);

	clear_reqs(f);
	add_req(f, &trust_m_sha256_url, "https://h/a.sha256");
	add_req(f, cosign, "https://h/a.sig");
	add_req(f, &trust_m_minisign, "https://h/a.minisig");
	assert_int_equal(trust_spec_slot(&f->spec, 0), 0);
	assert_int_equal(trust_spec_slot(&f->spec, 1), 1);
	assert_int_equal(trust_spec_slot(&f->spec, 2), 5);
	assert_int_equal(trust_spec_slot(&f->spec, 3), 6);
	/* the .sig is required until the bundle is named, then only it */
	assert_int_equal(trust_aux_required(&f->spec.reqs[1], 0), 1);
	assert_int_equal(trust_aux_required(&f->spec.reqs[1], 2), 0);
	wb_strlist_push(trust_req_urls_mut(&f->spec.reqs[1], 3), "https://h/a.sigstore.json");
	assert_int_equal(trust_aux_required(&f->spec.reqs[1], 0), 0);
	assert_int_equal(trust_aux_required(&f->spec.reqs[1], 1), 0);

	memset(&ev, 0, sizeof(ev));
	ev.v = calloc(1, sizeof(*ev.v));
	ev.nr = 1;
	ev.v[0].method = cosign;
	ev.v[0].req = 1;
	ev.v[0].text = strdup("SIG");
	ev.v[0].len = 3;
	ev.v[0].more[0].text = strdup("CERT");
	ev.v[0].more[0].len = 4;
	ev.v[0].more[1].url = strdup("https://rekor/api/v1/log/entries/x");
	ev.v[0].more[1].text = strdup("{\"x\": {}}");
	ev.v[0].more[1].len = strlen(ev.v[0].more[1].text);
	arr = verify_evidence_to_json(&ev);
	memset(&needs, 0, sizeof(needs));
	needs.reqs = 1ULL << 1;
	assert_int_equal(verify_evidence_from_json(&f->spec, &needs, arr, &back), 0);
	assert_int_equal(back.nr, 1);
	assert_string_equal(back.v[0].text, "SIG");
	assert_string_equal(back.v[0].more[0].text, "CERT");
	assert_null(back.v[0].more[0].url);
	assert_string_equal(back.v[0].more[1].url, "https://rekor/api/v1/log/entries/x");
	assert_string_equal(back.v[0].more[1].text, "{\"x\": {}}");
	json_decref(arr);
	verify_evidence_release(&back);
	verify_evidence_release(&ev);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_pinned_sha256),
		T(test_pinned_sha256_mismatch),
		T(test_pinned_sha512),
		T(test_all_methods_must_pass),
		T(test_checksum_file),
		T(test_checksum_file_not_fetched),
		T(test_pin_holds_beside_checksum_file),
		T(test_verify_pins),
		T(test_lock_disagrees_with_recipe),
		T(test_forbid_checksum_urls),
		T(test_require_signature),
		T(test_signature_required_but_missing_text),
		T(test_sigreqs_anded),
		T(test_needs_pin),
		T(test_allow_http),
		T(test_no_method),
		T(test_describe),
		T(test_aux_lists),
	};

	return cmocka_run_group_tests_name("verify", tests, NULL, NULL);
}
