/*
 * trust/tlog: Rekor entries checked offline.
 *
 * Data we did not write: the sigstore-conformance bundles and trusted
 * roots (tests/vectors/sigstore, see its README) and transparency-dev's
 * RFC 6962 inclusion probes (tests/vectors/merkle). Forgeries: tampered
 * copies of real entries, and a synthetic log (our own Ed25519 key and
 * tree, proofs from RFC 6962's recursive PATH definition) for what a real
 * entry cannot show: a validly signed checkpoint with another root or
 * size, a checkpoint without the log's signature.
 *
 * Vectors: $WB_SIGSTORE_VECTORS (default tests/vectors/sigstore) and
 * $WB_MERKLE_VECTORS (default tests/vectors/merkle).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <openssl/evp.h>

#include "sigstore_fixtures.h"
#include "trust/digest.h"

#define NOW ((int64_t)time(NULL))

/* ------------------------------------------------------------ helpers */

struct kase {
	json_t *bundle, *root, *cases;
	struct tlog_key *keys;
	size_t nkeys;
	struct tlog_entry ent;
	int parsed;
	unsigned flags;      /* TLOG_REQUIRE_* as the bundle version implies */
};

static int kase_load(struct kase *k, const char *name, struct wb_err *e)
{
	char *caseid = xasprintf("conformance/%s", name);
	const json_t *c;

	memset(k, 0, sizeof(*k));
	k->cases = vec_json("cases.json");
	assert_non_null(k->cases);
	c = fx_case(k->cases, caseid);
	free(caseid);
	assert_non_null(c);
	k->bundle = vec_json(json_string_value(json_object_get(c, "bundle")));
	k->root = vec_json(json_string_value(json_object_get(c, "trusted_root")));
	assert_non_null(k->bundle);
	assert_non_null(k->root);
	k->keys = fx_tlogs(k->root, &k->nkeys);
	/* sigstore-go's bundle rules: v0.1 needs the promise, later the proof */
	k->flags = strstr(json_string_value(json_object_get(k->bundle, "mediaType")), "0.1")
		? TLOG_REQUIRE_SET : TLOG_REQUIRE_PROOF;
	if (tlog_entry_from_bundle(json_array_get(json_object_get(json_object_get(k->bundle,
			"verificationMaterial"), "tlogEntries"), 0), &k->ent, e) < 0)
		return -1;
	k->parsed = 1;
	return 0;
}

static void kase_free(struct kase *k)
{
	if (k->parsed)
		tlog_entry_release(&k->ent);
	fx_tlogs_free(k->keys, k->nkeys);
	json_decref(k->bundle);
	json_decref(k->root);
	json_decref(k->cases);
}

/* What the bundle claims, for tlog_body_match. Owned buffers in BUFS. */
struct expect {
	struct tlog_expect x;
	unsigned char *bufs[3];
};

static void expect_fill(struct kase *k, const char *name, struct expect *ex)
{
	const json_t *vm = json_object_get(k->bundle, "verificationMaterial");
	const json_t *ms = json_object_get(k->bundle, "messageSignature");
	const json_t *env = json_object_get(k->bundle, "dsseEnvelope");
	struct tlog_expect *x = &ex->x;
	size_t n;

	memset(ex, 0, sizeof(*ex));
	if (json_object_get(vm, "certificate")) {
		x->cert = fx_x509(json_object_get(vm, "certificate"));
	} else if (json_object_get(vm, "x509CertificateChain")) {
		x->cert = fx_x509(json_array_get(json_object_get(json_object_get(vm,
				"x509CertificateChain"), "certificates"), 0));
	} else {
		char *p = xasprintf("%s/conformance/%s/key.pub", vec_dir(), name);
		FILE *f = fopen(p, "r");

		if (f) {
			x->pkey = PEM_read_PUBKEY(f, NULL, NULL, NULL);
			fclose(f);
		}
		free(p);
	}
	if (ms) {
		ex->bufs[0] = fx_b64(json_object_get(ms, "signature"), &n);
		x->signature = ex->bufs[0];
		x->signature_len = n;
		ex->bufs[1] = fx_b64(json_object_get(json_object_get(ms, "messageDigest"), "digest"), &n);
		x->digest = ex->bufs[1];
		x->digest_len = n;
		x->digest_alg = "sha256";
	} else {
		ex->bufs[0] = fx_b64(json_object_get(json_array_get(json_object_get(env, "signatures"), 0),
					 "sig"), &n);
		x->signature = ex->bufs[0];
		x->signature_len = n;
		ex->bufs[2] = fx_b64(json_object_get(env, "payload"), &n);
		x->payload = ex->bufs[2];
		x->payload_len = n;
		x->payload_type = json_string_value(json_object_get(env, "payloadType"));
	}
}

static void expect_free(struct expect *ex)
{
	X509_free(ex->x.cert);
	EVP_PKEY_free(ex->x.pkey);
	for (int i = 0; i < 3; i++)
		free(ex->bufs[i]);
}

/* Verify K's entry and match its body; returns the stage that failed. */
enum stage { OK, PARSE, VERIFY, BODY, MATCH };

static enum stage run_kase(struct kase *k, const char *name, int64_t now,
			   struct tlog_result *res, struct wb_err *e)
{
	struct tlog_body body;
	struct expect ex;
	int r;

	if (tlog_entry_verify(&k->ent, k->keys, k->nkeys, k->flags, now, res, e) < 0)
		return VERIFY;
	if (tlog_body_parse(&k->ent, &body, e) < 0)
		return BODY;
	expect_fill(k, name, &ex);
	r = tlog_body_match(&body, &ex.x, e);
	expect_free(&ex);
	tlog_body_release(&body);
	return r < 0 ? MATCH : OK;
}

/* ------------------------------------------------- conformance cases */

/*
 * Every conformance case with a parseable bundle, and what the tlog layer
 * must say about it. Cases that fail for reasons sigcore checks
 * (certificates, identities, timestamps, the trusted root's own shape)
 * pass here: their log entries are genuine.
 */
static const struct {
	const char *name;
	enum stage stage;
	const char *needle;
} table[] = {
	{ "bundle-empty-certificate-chain_fail", VERIFY, "log entry body: no spec" },
	{ "bundle-from-wrong-instance_fail", VERIFY, "unknown log" },
	{ "bundle-invalid-base64-signature_fail", VERIFY, "the verifier is not PEM" },
	{ "bundle-negative-log-index_fail", PARSE, "negative log index -1" },
	{ "bundle-unknown-version_fail", VERIFY, "no kind or apiVersion" },
	{ "bundle-with-root-cert_fail", VERIFY, "no checkpoint (signed tree head)" },
	{ "bundle-with-sct-with-extensions", OK, NULL },
	{ "checkpoint-bad-keyhint_fail", VERIFY, "has key hint c4d23d6a, the log's is c0d23d6a" },
	{ "checkpoint-wrong-roothash_fail", VERIFY, "checkpoint: root hash is not the proof's" },
	{ "dsse-invalid-sig_fail", MATCH, "does not hold the bundle's signature" },
	{ "dsse-mismatch-envelope_fail", MATCH, "payload hash is not that of the envelope's payload" },
	{ "dsse-mismatch-sig_fail", MATCH, "does not hold the bundle's signature" },
	{ "happy-path-intoto-in-dsse-v3", OK, NULL },
	{ "happy-path-v0.1", OK, NULL },
	{ "happy-path-v0.2", OK, NULL },
	{ "happy-path-v0.3", OK, NULL },
	{ "happy-path-v0.3-new-mediaType", OK, NULL },
	{ "inclusion-proof-corrupted-hash_fail", VERIFY, "inclusion proof: computed root" },
	{ "incorrect-public-key_fail", VERIFY, "inclusion promise (SET) does not verify" },
	{ "integrated-time-in-future_fail", OK, NULL },       /* cert validity */
	{ "intoto-expired-certificate_fail", OK, NULL },
	{ "intoto-log-entry-mismatch_fail", MATCH, "does not hold the bundle's signature" },
	{ "intoto-missing-inclusion-proof_fail", VERIFY, "has no inclusion proof" },
	{ "intoto-set-outside-signing-cert-validity_fail", OK, NULL },
	{ "intoto-tsa-timestamp-outside-cert-validity_fail", OK, NULL },
	{ "intoto-with-custom-trust-root", OK, NULL },
	{ "invalid-checkpoint-signature_fail", VERIFY, "signature by 'rekor.sigstore.dev' does not verify" },
	{ "invalid-ct-key_fail", OK, NULL },
	{ "invalid-inclusion-proof_fail", VERIFY, "inclusion proof: computed root" },
	{ "managed-key-and-trusted-root", OK, NULL },
	{ "managed-key-happy-path", OK, NULL },
	{ "managed-key-no-key_fail", MATCH, "public key is not the bundle's public key" },
	{ "managed-key-wrong-key_fail", MATCH, "public key is not the bundle's public key" },
	{ "message-digest-mismatch_fail", MATCH, "is not the artifact's a1cfc712" },
	{ "rekor2-checkpoint-cosigned", OK, NULL },
	{ "rekor2-checkpoint-missing-log-signature_fail", VERIFY, "checkpoint: no signature lines" },
	{ "rekor2-checkpoint-missing-origin_fail", VERIFY, "checkpoint: 2 lines" },
	{ "rekor2-checkpoint-missing-root-hash_fail", VERIFY, "checkpoint: 2 lines" },
	{ "rekor2-checkpoint-missing-size_fail", VERIFY, "checkpoint: 2 lines" },
	{ "rekor2-checkpoint-multiple-cosigs", OK, NULL },
	{ "rekor2-checkpoint-no-matching-signature_fail", VERIFY, "origin 'log2025-alpha1.rekor.github.dev' is not the log's" },
	{ "rekor2-checkpoint-origin-not-first", OK, NULL },
	{ "rekor2-checkpoint-two-sigs-cosigned", OK, NULL },
	{ "rekor2-checkpoint-two-sigs-from-origin", OK, NULL },
	{ "rekor2-dsse-happy-path", OK, NULL },
	{ "rekor2-dsse-invalid-sig_fail", MATCH, "does not hold the bundle's signature" },
	{ "rekor2-dsse-mismatch-envelope_fail", MATCH, "digest is not that of the DSSE envelope" },
	{ "rekor2-dsse-mismatch-sig_fail", MATCH, "does not hold the bundle's signature" },
	{ "rekor2-happy-path", OK, NULL },
	{ "rekor2-no-inclusion-proof_fail", VERIFY, "has no inclusion proof" },
	{ "rekor2-no-timestamp_fail", OK, NULL },
	{ "rekor2-timestamp-outside-trust-root-tsa-validity_fail", OK, NULL },
	{ "rekor2-timestamp-outside-tsa-cert-validity_fail", OK, NULL },
	{ "rekor2-timestamp-payload-mismatch_fail", OK, NULL },
	{ "rekor2-timestamp-untrusted-tsa-with-embedded-cert_fail", OK, NULL },
	{ "rekor2-timestamp-untrusted-tsa-without-embedded-cert_fail", OK, NULL },
	{ "rekor2-timestamp-with-embedded-cert", OK, NULL },
	{ "rekor2-timestamp-with-expired-cert-chain", OK, NULL },
	{ "rekor2-timestamp-with-incorrect-time_fail", OK, NULL },
	{ "rekor2-timestamp-without-embedded-cert", OK, NULL },
	{ "set-invalid-signature_fail", VERIFY, "inclusion promise (SET) does not verify" },
	{ "signature-mismatch_fail", MATCH, "does not hold the bundle's signature" },
	{ "trust-root-tlog-missing-validity-start_fail", OK, NULL }, /* root shape */
	{ "trust-root-tlog-validity-end-inclusive", OK, NULL },
	{ "trust-root-tsa-validity-end-inclusive", OK, NULL },
	{ "wrong-hashedrekord-artifact_fail", MATCH, "is not the artifact's a0cfc712" },
	{ "wrong-hashedrekord-cert-and-sig_fail", MATCH, "does not hold the bundle's signature" },
	{ "wrong-hashedrekord-entry_fail", MATCH, "is not the artifact's a0cfc712" },
	{ "wrong-material_fail", OK, NULL },
};

static void test_conformance(void **state)
{
	size_t fails = 0, passes = 0;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		struct kase k;
		struct tlog_result res;
		struct wb_err e = WB_ERR_INIT;
		enum stage got;

		got = kase_load(&k, table[i].name, &e) < 0 ? PARSE
			: run_kase(&k, table[i].name, NOW, &res, &e);
		if (got != table[i].stage ||
		    (table[i].needle && !strstr(e.msg, table[i].needle)))
			fail_msg("%s: want stage %d \"%s\", got stage %d: %s", table[i].name,
				 table[i].stage, table[i].needle ? table[i].needle : "", got, e.msg);
		if (got == OK) {
			passes++;
			/* Rekor v1 entries carry a SET-proven time, v2 never */
			assert_true(res.proof_verified || !k.ent.has_proof);
			if (res.rekor_v2) {
				assert_false(res.time_proven);
				assert_true(res.proof_verified);
			} else {
				assert_true(res.time_proven);
				assert_int_equal(res.integrated_time, k.ent.integrated_time);
			}
			assert_ptr_not_equal(res.key, NULL);
		} else {
			fails++;
		}
		kase_free(&k);
	}
	/* 69 of the 70 cases: bundle-malformed-json_fail is not JSON */
	assert_int_equal(passes + fails, 69);
	assert_int_equal(passes, 35);
}

/* Every case in cases.json is either in the table or has no usable entry. */
static void test_table_covers_cases(void **state)
{
	json_t *cases = vec_json("cases.json");
	const json_t *c;
	size_t i, missing = 0;

	(void)state;
	assert_non_null(cases);
	json_array_foreach(cases, i, c) {
		const char *name = json_string_value(json_object_get(c, "case")) + strlen("conformance/");
		int found = 0;

		for (size_t j = 0; j < ARRAY_SIZE(table); j++)
			found |= !strcmp(table[j].name, name);
		if (!found && strcmp(name, "bundle-malformed-json_fail")) {
			print_error("case %s is not in the table\n", name);
			missing++;
		}
	}
	assert_int_equal(json_array_size(cases), 70);
	assert_int_equal(missing, 0);
	json_decref(cases);
}

/* ---------------------------------------- forgeries of a real v1 entry */

/* Change one base64 character into another base64 character. */
static void swap_b64(char *c)
{
	*c = *c == 'A' ? 'B' : 'A';
}

static void load_v1(struct kase *k)
{
	struct wb_err e = WB_ERR_INIT;

	assert_int_equal(kase_load(k, "happy-path-v0.3", &e), 0);
}

static int verify_k(struct kase *k, int64_t now, struct wb_err *e)
{
	struct tlog_result res;

	return tlog_entry_verify(&k->ent, k->keys, k->nkeys, k->flags, now, &res, e);
}

static void test_v1_proof_forgeries(void **state)
{
	struct kase k;
	struct wb_err e = WB_ERR_INIT;
	unsigned char (*saved)[TLOG_HASH_LEN];
	size_t n;

	(void)state;
	load_v1(&k);
	assert_int_equal(verify_k(&k, NOW, &e), 0);
	n = k.ent.proof.nhashes;
	assert_int_equal(n, 11);
	saved = xmalloc(n * TLOG_HASH_LEN);
	memcpy(saved, k.ent.proof.hashes, n * TLOG_HASH_LEN);

	/* a flipped bit in each proof hash */
	for (size_t i = 0; i < n; i++) {
		k.ent.proof.hashes[i][i % TLOG_HASH_LEN] ^= 0x10;
		wb_err_clear(&e);
		assert_int_equal(verify_k(&k, NOW, &e), -1);
		assert_err(&e, WB_EVERIFY, "inclusion proof: computed root");
		k.ent.proof.hashes[i][i % TLOG_HASH_LEN] ^= 0x10;
	}
	/* truncated proof */
	k.ent.proof.nhashes = n - 1;
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "inclusion proof: 10 hashes, a tree of size 75408393 needs 11");
	/* extended proof: one more (real) hash */
	k.ent.proof.hashes = xrealloc(k.ent.proof.hashes, (n + 1) * TLOG_HASH_LEN);
	memcpy(k.ent.proof.hashes[n], saved[0], TLOG_HASH_LEN);
	k.ent.proof.nhashes = n + 1;
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "inclusion proof: 12 hashes, a tree of size 75408393 needs 11");
	k.ent.proof.nhashes = n;

	/* wrong tree size: one more leaf changes the path's shape */
	k.ent.proof.tree_size++;
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "inclusion proof: 11 hashes, a tree of size 75408394 needs 12");
	k.ent.proof.tree_size = 75408393;   /* same-length paths: synthetic log */

	/* wrong index (its path has another shape; the synthetic log has a
	 * same-shape one), and an index outside the tree */
	k.ent.proof.log_index--;
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "inclusion proof: 11 hashes, a tree of size 75408393 needs 14 at index 75408391");
	k.ent.proof.log_index = k.ent.proof.tree_size;
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "index 75408393 is not inside a tree of size 75408393");
	k.ent.proof.log_index = 75408392;

	/* a changed body is another leaf */
	k.ent.body[k.ent.body_len - 3] ^= 1;
	k.flags = 0;
	free(k.ent.set);
	k.ent.set = NULL;       /* the SET would catch it first */
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_true(strstr(e.msg, "inclusion proof: computed root") ||
		    strstr(e.msg, "log entry body"));
	free(saved);
	kase_free(&k);
}

static void test_v1_set_forgeries(void **state)
{
	struct kase k;
	struct wb_err e = WB_ERR_INIT;
	int64_t t;

	(void)state;
	load_v1(&k);
	t = k.ent.integrated_time;
	assert_int_equal(t, 1710869186);
	assert_int_equal(tlog_set_verify(&k.ent, &k.keys[0], &e) == 0 ||
			 tlog_set_verify(&k.ent, tlog_key_find(k.keys, k.nkeys, k.ent.log_id), &e) == 0, 1);

	/* the SET binds integratedTime, logIndex and the body */
	k.ent.integrated_time = t + 1;
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "inclusion promise (SET) does not verify");
	k.ent.integrated_time = t;
	k.ent.log_index++;
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "inclusion promise (SET) does not verify");
	k.ent.log_index--;
	k.ent.set[10] ^= 1;
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "inclusion promise (SET) does not verify");
	k.ent.set[10] ^= 1;

	/* a signed time in the future */
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, t - 1, &e), -1);
	assert_err(&e, WB_EVERIFY, "integrated time 1710869186 is in the future");
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, t, &e), 0);

	/* the log key's validity window, both ends inclusive */
	for (size_t i = 0; i < k.nkeys; i++) {
		k.keys[i].valid_from = t;
		k.keys[i].valid_to = t;
	}
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), 0);
	for (size_t i = 0; i < k.nkeys; i++)
		k.keys[i].valid_to = t - 1;
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "the log key is not valid at integrated time 1710869186");
	for (size_t i = 0; i < k.nkeys; i++) {
		k.keys[i].valid_from = t + 1;
		k.keys[i].valid_to = TLOG_TIME_MAX;
	}
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "not valid at integrated time");
	for (size_t i = 0; i < k.nkeys; i++)
		k.keys[i].valid_from = TLOG_TIME_MIN;

	/* a log the trusted root does not have */
	wb_err_clear(&e);
	assert_int_equal(tlog_entry_verify(&k.ent, k.keys, 0, 0, NOW, &(struct tlog_result){ 0 }, &e), -1);
	assert_err(&e, WB_EVERIFY, "unknown log c0d23d6ad406973f9559f3ba2d1ca01f84147d8ffc5b8445c224f98b9591801d");

	/* what the bundle version requires */
	free(k.ent.set);
	k.ent.set = NULL;
	wb_err_clear(&e);
	assert_int_equal(tlog_entry_verify(&k.ent, k.keys, k.nkeys, TLOG_REQUIRE_SET, NOW,
					   &(struct tlog_result){ 0 }, &e), -1);
	assert_err(&e, WB_EVERIFY, "has no inclusion promise (SET)");
	/* a proof alone verifies, but proves no time */
	{
		struct tlog_result res;

		wb_err_clear(&e);
		assert_int_equal(tlog_entry_verify(&k.ent, k.keys, k.nkeys, TLOG_REQUIRE_PROOF, NOW,
						   &res, &e), 0);
		assert_false(res.time_proven);
		assert_true(res.proof_verified);
	}
	k.ent.has_proof = 0;
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "has neither an inclusion promise nor an inclusion proof");
	k.ent.has_proof = 1;

	/* kindVersion must be what the body says */
	strcpy(k.ent.kind, "dsse");
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "log entry body is hashedrekord 0.0.1, the entry says dsse 0.0.1");
	kase_free(&k);
}

/* The real v1 checkpoint, edited: key hint, signature, witness lines. */
static void test_v1_checkpoint_forgeries(void **state)
{
	struct kase k;
	struct wb_err e = WB_ERR_INIT;
	char *orig, *cp;
	const char *dash;

	(void)state;
	load_v1(&k);
	orig = xstrdup(k.ent.proof.checkpoint);
	dash = strstr(orig, "\xe2\x80\x94 rekor.sigstore.dev ");
	assert_non_null(dash);

	/* the first base64 character holds the top of the key hint */
	cp = xstrdup(orig);
	cp[dash - orig + strlen("\xe2\x80\x94 rekor.sigstore.dev ")] = 'x';
	free(k.ent.proof.checkpoint);
	k.ent.proof.checkpoint = cp;
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "has key hint c4d23d6a, the log's is c0d23d6a");

	/* a changed byte inside the signature */
	cp = xstrdup(orig);
	swap_b64(&cp[dash - orig + strlen("\xe2\x80\x94 rekor.sigstore.dev ") + 20]);
	free(k.ent.proof.checkpoint);
	k.ent.proof.checkpoint = cp;
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "signature by 'rekor.sigstore.dev' does not verify with the log key");

	/* a changed tree head under the same signature */
	cp = xstrdup(orig);
	cp[strlen("rekor.sigstore.dev - ")] ^= 0x01;   /* tree id digit */
	free(k.ent.proof.checkpoint);
	k.ent.proof.checkpoint = cp;
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "signature by 'rekor.sigstore.dev' does not verify with the log key");

	/* Rekor v1 rules: every signature line must be the log's */
	cp = xasprintf("%s\xe2\x80\x94 witness.example AAAAAAAAAAAAAA==\n", orig);
	free(k.ent.proof.checkpoint);
	k.ent.proof.checkpoint = cp;
	k.ent.proof.checkpoint_len = strlen(cp);
	wb_err_clear(&e);
	assert_int_equal(verify_k(&k, NOW, &e), -1);
	assert_err(&e, WB_EVERIFY, "the signature by 'witness.example' has key hint 00000000");

	free(orig);
	kase_free(&k);
}

/* The Rekor API form of the same entry (hex where the bundle has base64). */
static json_t *to_rekor_api(const struct tlog_entry *ent)
{
	char hex[2 * TLOG_HASH_LEN + 1];
	char *b64 = xmalloc(4 * ((ent->body_len + 2) / 3) + 1);
	char *set64 = xmalloc(4 * ((ent->set_len + 2) / 3) + 1);
	json_t *hashes = json_array(), *root, *ip;

	EVP_EncodeBlock((unsigned char *)b64, ent->body, (int)ent->body_len);
	EVP_EncodeBlock((unsigned char *)set64, ent->set, (int)ent->set_len);
	for (size_t i = 0; i < ent->proof.nhashes; i++) {
		digest_hex(ent->proof.hashes[i], TLOG_HASH_LEN, hex);
		json_array_append_new(hashes, json_string(hex));
	}
	digest_hex(ent->proof.root_hash, TLOG_HASH_LEN, hex);
	ip = json_pack("{sIsssIsoss}", "logIndex", (json_int_t)ent->proof.log_index, "rootHash", hex,
		       "treeSize", (json_int_t)ent->proof.tree_size, "hashes", hashes,
		       "checkpoint", ent->proof.checkpoint);
	digest_hex(ent->log_id, TLOG_HASH_LEN, hex);
	root = json_pack("{s{sssIsssIs{ssso}}}", "3628b4c1a0d6e8f2",
			 "body", b64, "integratedTime", (json_int_t)ent->integrated_time,
			 "logID", hex, "logIndex", (json_int_t)ent->log_index,
			 "verification", "signedEntryTimestamp", set64, "inclusionProof", ip);
	free(b64);
	free(set64);
	return root;
}

static void test_rekor_api_form(void **state)
{
	struct kase k;
	struct tlog_entry api;
	struct tlog_result res;
	struct wb_err e = WB_ERR_INIT;
	json_t *j;
	char *text, *p;

	(void)state;
	load_v1(&k);
	j = to_rekor_api(&k.ent);
	text = json_dumps(j, JSON_COMPACT);
	assert_int_equal(tlog_entry_from_rekor_api(text, strlen(text), &api, &e), 0);
	assert_int_equal(api.log_index, k.ent.log_index);
	assert_int_equal(api.integrated_time, k.ent.integrated_time);
	assert_memory_equal(api.log_id, k.ent.log_id, TLOG_HASH_LEN);
	assert_string_equal(api.kind, "hashedrekord");
	assert_string_equal(api.version, "0.0.1");
	assert_int_equal(api.proof.nhashes, 11);
	assert_memory_equal(api.proof.hashes, k.ent.proof.hashes, 11 * TLOG_HASH_LEN);
	assert_int_equal(tlog_entry_verify(&api, k.keys, k.nkeys, TLOG_REQUIRE_SET | TLOG_REQUIRE_PROOF,
					   NOW, &res, &e), 0);
	assert_true(res.time_proven);
	tlog_entry_release(&api);

	/* a changed hex root hash */
	p = strstr(text, "\"rootHash\":\"") + strlen("\"rootHash\":\"");
	*p = *p == '0' ? '1' : '0';
	assert_int_equal(tlog_entry_from_rekor_api(text, strlen(text), &api, &e), 0);
	wb_err_clear(&e);
	assert_int_equal(tlog_entry_verify(&api, k.keys, k.nkeys, 0, NOW, &res, &e), -1);
	assert_err(&e, WB_EVERIFY, "inclusion proof: computed root");
	tlog_entry_release(&api);
	free(text);

	/* base64 where hex belongs, two entries, no entry */
	json_object_set_new(json_object_get(j, "3628b4c1a0d6e8f2"), "logID",
			    json_string("wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0="));
	text = json_dumps(j, JSON_COMPACT);
	wb_err_clear(&e);
	assert_int_equal(tlog_entry_from_rekor_api(text, strlen(text), &api, &e), -1);
	assert_err(&e, WB_EUSAGE, "'logID' is not 32 bytes of hex");
	free(text);
	json_object_set(j, "second", json_object_get(j, "3628b4c1a0d6e8f2"));
	text = json_dumps(j, JSON_COMPACT);
	wb_err_clear(&e);
	assert_int_equal(tlog_entry_from_rekor_api(text, strlen(text), &api, &e), -1);
	assert_err(&e, WB_EUSAGE, "expected one object keyed by the entry uuid");
	free(text);
	wb_err_clear(&e);
	assert_int_equal(tlog_entry_from_rekor_api("{}", 2, &api, &e), -1);
	assert_err(&e, WB_EUSAGE, "expected one object keyed by the entry uuid");
	json_decref(j);
	kase_free(&k);
}

static void test_bundle_entry_malformed(void **state)
{
	static const struct { const char *json, *needle; } bad[] = {
		{ "{\"logIndex\":\"-1\"}", "negative log index -1" },
		{ "{\"logId\":{\"keyId\":\"AAAA\"}}", "'keyId' is not 32 bytes of base64" },
		{ "{\"logIndex\":\"01\"}", "'logIndex' is not an integer" },
		{ "{\"logIndex\":\"1 \"}", "'logIndex' is not an integer" },
		{ "{\"logIndex\":\"99999999999999999999\"}", "'logIndex' is not an integer" },
		{ "{\"logIndex\":\"1\",\"logId\":{\"keyId\":\"AAAA\"}}", "'keyId' is not 32 bytes of base64" },
		{ "{\"logIndex\":\"1\",\"logId\":{\"keyId\":\"wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0=\"},"
		  "\"kindVersion\":{\"kind\":\"hashedrekord\"}}", "kind or version is missing" },
		{ "{\"logIndex\":\"1\",\"logId\":{\"keyId\":\"wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0=\"},"
		  "\"kindVersion\":{\"kind\":\"hashedrekord\",\"version\":\"0.0.1\"},"
		  "\"inclusionProof\":{\"logIndex\":\"1\",\"treeSize\":\"0\"}}", "tree size is missing or not positive" },
		{ "{\"logIndex\":\"1\",\"logId\":{\"keyId\":\"wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0=\"},"
		  "\"kindVersion\":{\"kind\":\"hashedrekord\",\"version\":\"0.0.1\"},"
		  "\"inclusionProof\":{\"logIndex\":\"1\",\"treeSize\":\"2\",\"rootHash\":"
		  "\"wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0=\",\"hashes\":[\"AA==\"]}}", "hash 0 is not 32 bytes" },
		{ "{\"logIndex\":\"1\",\"logId\":{\"keyId\":\"wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0=\"},"
		  "\"kindVersion\":{\"kind\":\"hashedrekord\",\"version\":\"0.0.1\"}}", "'canonicalizedBody' is missing" },
		{ "{\"logIndex\":\"1\",\"logId\":{\"keyId\":\"wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0=\"},"
		  "\"kindVersion\":{\"kind\":\"hashedrekord\",\"version\":\"0.0.1\"},\"canonicalizedBody\":\"e30 =\"}",
		  "'canonicalizedBody' is not base64" },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		json_t *j = json_loads(bad[i].json, 0, NULL);
		struct tlog_entry ent;
		struct wb_err e = WB_ERR_INIT;

		assert_non_null(j);
		assert_int_equal(tlog_entry_from_bundle(j, &ent, &e), -1);
		assert_err(&e, WB_EUSAGE, bad[i].needle);
		json_decref(j);
	}
}

/* ------------------------------------------------ RFC 6962 Merkle trees */

/* RFC 6962 2.1: MTH by the recursive definition (k = largest power of two
 * smaller than n). LEAVES are leaf hashes. */
static void mth(unsigned char (*leaves)[TLOG_HASH_LEN], uint64_t n, unsigned char *out)
{
	uint64_t k = 1;

	if (n == 1) {
		memcpy(out, leaves[0], TLOG_HASH_LEN);
		return;
	}
	while (k << 1 < n)
		k <<= 1;
	{
		unsigned char l[TLOG_HASH_LEN], r[TLOG_HASH_LEN];

		mth(leaves, k, l);
		mth(leaves + k, n - k, r);
		tlog_merkle_node_hash(l, r, out);
	}
}

/* RFC 6962 2.1.1 PATH(m, D[n]); appends to PROOF, returns the count. */
static size_t path(unsigned char (*leaves)[TLOG_HASH_LEN], uint64_t m, uint64_t n,
		   unsigned char (*proof)[TLOG_HASH_LEN])
{
	uint64_t k = 1;
	size_t c;

	if (n == 1)
		return 0;
	while (k << 1 < n)
		k <<= 1;
	if (m < k) {
		c = path(leaves, m, k, proof);
		mth(leaves + k, n - k, proof[c]);
	} else {
		c = path(leaves + k, m - k, n - k, proof);
		mth(leaves, k, proof[c]);
	}
	return c + 1;
}

static void test_merkle_rfc6962_paths(void **state)
{
	unsigned char leaves[40][TLOG_HASH_LEN], proof[TLOG_PROOF_MAX][TLOG_HASH_LEN];
	unsigned char root[TLOG_HASH_LEN];
	struct wb_err e = WB_ERR_INIT;

	(void)state;
	for (int i = 0; i < 40; i++) {
		unsigned char d[2] = { (unsigned char)i, 0x5a };

		tlog_merkle_leaf_hash(d, sizeof(d), leaves[i]);
	}
	for (uint64_t n = 1; n <= 40; n++) {
		mth(leaves, n, root);
		for (uint64_t m = 0; m < n; m++) {
			size_t c = path(leaves, m, n, proof);

			wb_err_clear(&e);
			if (tlog_merkle_verify_inclusion(m, n, leaves[m],
							 (const unsigned char (*)[TLOG_HASH_LEN])proof,
							 c, root, &e))
				fail_msg("index %llu size %llu: %s", (unsigned long long)m,
					 (unsigned long long)n, e.msg);
			/* another leaf at the same place, a short or long path */
			assert_int_equal(tlog_merkle_verify_inclusion(m, n, leaves[(m + 1) % 40],
					 (const unsigned char (*)[TLOG_HASH_LEN])proof, c, root, &e), -1);
			if (c) {
				assert_int_equal(tlog_merkle_verify_inclusion(m, n, leaves[m],
						 (const unsigned char (*)[TLOG_HASH_LEN])proof, c - 1, root, &e), -1);
				assert_err(&e, WB_EVERIFY, "needs");
			}
			memcpy(proof[c], root, TLOG_HASH_LEN);
			assert_int_equal(tlog_merkle_verify_inclusion(m, n, leaves[m],
					 (const unsigned char (*)[TLOG_HASH_LEN])proof, c + 1, root, &e), -1);
			assert_err(&e, WB_EVERIFY, "needs");
		}
		/* index == size */
		assert_int_equal(tlog_merkle_verify_inclusion(n, n, leaves[0],
				 (const unsigned char (*)[TLOG_HASH_LEN])proof, 0, root, &e), -1);
	}
	/* RFC 6962's empty tree: no index is inside it */
	assert_int_equal(tlog_merkle_verify_inclusion(0, 0, leaves[0],
			 (const unsigned char (*)[TLOG_HASH_LEN])proof, 0, root, &e), -1);
	assert_err(&e, WB_EVERIFY, "is not inside a tree of size 0");
}

/* transparency-dev/merkle's inclusion probes: each gives its wantErr. */
static int probe_bytes(const json_t *v, unsigned char *out)
{
	size_t n;
	unsigned char *b = fx_b64(v, &n);
	int ok = b && n == TLOG_HASH_LEN;

	if (ok)
		memcpy(out, b, TLOG_HASH_LEN);
	free(b);
	return ok ? 0 : -1;
}

static uint64_t probe_u64(const json_t *v)
{
	double d = json_real_value(v);

	return d >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)d;
}

static int run_probe(const char *path, int *want_err)
{
	/* two probes have leafIdx 2^64-1, past jansson's integers: read
	 * numbers as doubles (exact below 2^53) and saturate */
	json_t *j = json_load_file(path, JSON_DECODE_INT_AS_REAL, NULL);

	if (!j)
		fail_msg("cannot load %s", path);
	unsigned char root[TLOG_HASH_LEN], leaf[TLOG_HASH_LEN];
	unsigned char proof[TLOG_PROOF_MAX][TLOG_HASH_LEN];
	const json_t *pr, *h;
	struct wb_err e = WB_ERR_INIT;
	size_t i, n = 0;
	int r = -1;

	*want_err = json_is_true(json_object_get(j, "wantErr"));
	pr = json_object_get(j, "proof");
	if (probe_bytes(json_object_get(j, "root"), root) < 0 ||
	    probe_bytes(json_object_get(j, "leafHash"), leaf) < 0)
		goto out;       /* refused by length */
	json_array_foreach(pr, i, h) {
		if (n == TLOG_PROOF_MAX || probe_bytes(h, proof[n++]) < 0)
			goto out;
	}
	r = tlog_merkle_verify_inclusion(probe_u64(json_object_get(j, "leafIdx")),
					 probe_u64(json_object_get(j, "treeSize")),
					 leaf, (const unsigned char (*)[TLOG_HASH_LEN])proof, n, root, &e);
out:
	json_decref(j);
	return r;
}

static void test_merkle_probes(void **state)
{
	const char *base = getenv("WB_MERKLE_VECTORS");
	static const char *const dirs[] = { "0", "1", "2", "3", "4", "single-entry",
		"additional/0", "additional/1", "additional/2", "additional/3" };
	size_t total = 0, good = 0;

	(void)state;
	if (!base || !*base)
		base = "tests/vectors/merkle";
	for (size_t d = 0; d < ARRAY_SIZE(dirs); d++) {
		char *dir = xasprintf("%s/inclusion/%s", base, dirs[d]);
		DIR *dp = opendir(dir);
		struct dirent *de;

		if (!dp)
			fail_msg("cannot open %s", dir);
		while ((de = readdir(dp))) {
			char *p;
			int want_err, r;

			if (!strstr(de->d_name, ".json"))
				continue;
			p = xasprintf("%s/%s", dir, de->d_name);
			r = run_probe(p, &want_err);
			if ((r < 0) != want_err)
				fail_msg("%s: want %s", p, want_err ? "an error" : "success");
			good += !want_err;
			total++;
			free(p);
		}
		closedir(dp);
		free(dir);
	}
	assert_int_equal(total, 98);
	assert_int_equal(good, 6);
}

/* --------------------------------------------- a synthetic Rekor v2 log */

#define ORIGIN "test-log.example"

struct synth {
	EVP_PKEY *log, *witness, *other;
	struct tlog_key key;
	unsigned char leaves[5][TLOG_HASH_LEN];
	struct tlog_entry ent;
	char body[5][512];
};

static EVP_PKEY *ed25519_new(void)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");

	assert_non_null(k);
	return k;
}

static void b64enc(const unsigned char *in, size_t len, char *out)
{
	EVP_EncodeBlock((unsigned char *)out, in, (int)len);
}

/* Signed-note line by KEY under NAME over TEXT, with key hint HINT (NULL:
 * the Ed25519 hint of NAME and KEY). */
static void note_line(struct buf *b, EVP_PKEY *key, const char *name, const char *text,
		      const unsigned char *hint)
{
	unsigned char raw[4 + 64], pub[32], h[32];
	size_t siglen = 64, publen = 32;
	char enc[128];
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	struct buf m = BUF_INIT;

	assert_int_equal(EVP_PKEY_get_raw_public_key(key, pub, &publen), 1);
	buf_adds(&m, name);
	buf_add(&m, "\n\x01", 2);
	buf_add(&m, pub, 32);
	EVP_Digest(m.ptr, m.len, h, NULL, EVP_sha256(), NULL);
	buf_release(&m);
	memcpy(raw, hint ? hint : h, 4);
	assert_int_equal(EVP_DigestSignInit(md, NULL, NULL, NULL, key), 1);
	assert_int_equal(EVP_DigestSign(md, raw + 4, &siglen, (const unsigned char *)text,
					strlen(text)), 1);
	EVP_MD_CTX_free(md);
	b64enc(raw, 4 + siglen, enc);
	buf_addf(b, "\xe2\x80\x94 %s %s\n", name, enc);
}

static char *checkpoint_text(uint64_t size, const unsigned char *root)
{
	char r64[64];

	b64enc(root, TLOG_HASH_LEN, r64);
	return xasprintf("%s\n%llu\n%s\n", ORIGIN, (unsigned long long)size, r64);
}

static void synth_set_checkpoint(struct synth *s, const char *note)
{
	free(s->ent.proof.checkpoint);
	s->ent.proof.checkpoint = xstrdup(note);
	s->ent.proof.checkpoint_len = strlen(note);
}

/* Five hashedrekord 0.0.2 bodies; the entry is leaf 3 of a tree of 5. */
static void synth_init(struct synth *s)
{
	unsigned char spki_buf[64], *spki = spki_buf, root[TLOG_HASH_LEN], pub[32];
	char spki64[128], *text;
	size_t publen = 32;
	int spki_len;
	struct buf note = BUF_INIT, m = BUF_INIT;

	memset(s, 0, sizeof(*s));
	s->log = ed25519_new();
	s->witness = ed25519_new();
	s->other = ed25519_new();
	spki_len = i2d_PUBKEY(s->other, &spki);
	assert_true(spki_len > 0 && spki_len < 64);
	b64enc(spki_buf, (size_t)spki_len, spki64);
	for (int i = 0; i < 5; i++) {
		snprintf(s->body[i], sizeof(s->body[i]),
			 "{\"apiVersion\":\"0.0.2\",\"kind\":\"hashedrekord\",\"spec\":{\"hashedRekordV002\":"
			 "{\"data\":{\"algorithm\":\"SHA2_256\",\"digest\":\"%c%s\"},\"signature\":"
			 "{\"content\":\"AAEC\",\"verifier\":{\"keyDetails\":\"PKIX_ED25519\",\"publicKey\":"
			 "{\"rawBytes\":\"%s\"}}}}}}", 'A' + i, "O9+x8K0W8t0nS2BM8E0yMvhXn6vN1tQ4qv5yY9m2Dg=",
			 spki64);
		tlog_merkle_leaf_hash((const unsigned char *)s->body[i], strlen(s->body[i]), s->leaves[i]);
	}
	/* the log key as a trusted root would give it */
	s->key.pkey = s->log;
	EVP_PKEY_up_ref(s->log);
	assert_int_equal(EVP_PKEY_get_raw_public_key(s->log, pub, &publen), 1);
	buf_adds(&m, ORIGIN "\n\x01");
	buf_add(&m, pub, 32);
	EVP_Digest(m.ptr, m.len, s->key.log_id, NULL, EVP_sha256(), NULL);
	buf_release(&m);
	s->key.valid_from = TLOG_TIME_MIN;
	s->key.valid_to = TLOG_TIME_MAX;
	s->key.base_url = xstrdup("https://" ORIGIN);

	s->ent.log_index = 3;
	memcpy(s->ent.log_id, s->key.log_id, TLOG_HASH_LEN);
	strcpy(s->ent.kind, "hashedrekord");
	strcpy(s->ent.version, "0.0.2");
	s->ent.body = (unsigned char *)xstrdup(s->body[3]);
	s->ent.body_len = strlen(s->body[3]);
	s->ent.has_proof = 1;
	s->ent.proof.log_index = 3;
	s->ent.proof.tree_size = 5;
	s->ent.proof.hashes = xcalloc(TLOG_PROOF_MAX, TLOG_HASH_LEN);
	s->ent.proof.nhashes = path(s->leaves, 3, 5, s->ent.proof.hashes);
	mth(s->leaves, 5, root);
	memcpy(s->ent.proof.root_hash, root, TLOG_HASH_LEN);
	text = checkpoint_text(5, root);
	buf_adds(&note, text);
	buf_adds(&note, "\n");
	note_line(&note, s->log, ORIGIN, text, NULL);
	synth_set_checkpoint(s, note.ptr);
	free(text);
	buf_release(&note);
}

static void synth_free(struct synth *s)
{
	EVP_PKEY_free(s->log);
	EVP_PKEY_free(s->witness);
	EVP_PKEY_free(s->other);
	tlog_key_release(&s->key);
	tlog_entry_release(&s->ent);
}

static int synth_verify(struct synth *s, struct wb_err *e)
{
	struct tlog_result res;

	wb_err_clear(e);
	return tlog_entry_verify(&s->ent, &s->key, 1, TLOG_REQUIRE_PROOF, NOW, &res, e);
}

/* A checkpoint for (SIZE, ROOT), signed by the lines LINES describes:
 * 'L' the log, 'W' a witness under its own name, 'O' another key under
 * the log's name, 'H' the log's key with a wrong hint, 'B' the log's line
 * with a broken signature. */
static void synth_sign(struct synth *s, uint64_t size, const unsigned char *root,
		       const char *lines)
{
	char *text = checkpoint_text(size, root);
	struct buf note = BUF_INIT;
	static const unsigned char bad_hint[4] = { 1, 2, 3, 4 };

	buf_adds(&note, text);
	buf_adds(&note, "\n");
	for (const char *l = lines; *l; l++) {
		switch (*l) {
		case 'L': note_line(&note, s->log, ORIGIN, text, NULL); break;
		case 'W': note_line(&note, s->witness, "witness.example/w1", text, NULL); break;
		case 'O': note_line(&note, s->other, ORIGIN, text, NULL); break;
		case 'H': note_line(&note, s->log, ORIGIN, text, bad_hint); break;
		case 'B': {
			size_t at = note.len;

			note_line(&note, s->log, ORIGIN, text, NULL);
			/* change a signature character (not the hint, not padding) */
			swap_b64(&note.ptr[at + strlen("\xe2\x80\x94 " ORIGIN " ") + 30]);
			break;
		}
		}
	}
	synth_set_checkpoint(s, note.ptr);
	free(text);
	buf_release(&note);
}

static void test_v2_synthetic_log(void **state)
{
	struct synth s;
	struct wb_err e = WB_ERR_INIT;
	struct tlog_result res;
	unsigned char root[TLOG_HASH_LEN], other_root[TLOG_HASH_LEN];

	(void)state;
	synth_init(&s);
	memcpy(root, s.ent.proof.root_hash, TLOG_HASH_LEN);
	assert_int_equal(tlog_entry_verify(&s.ent, &s.key, 1, 0, NOW, &res, &e), 0);
	assert_true(res.rekor_v2);
	assert_false(res.time_proven);
	assert_true(res.proof_verified);
	assert_int_equal(res.tree_size, 5);

	/* cosignatures are ignored, in any order, the log's line is required */
	synth_sign(&s, 5, root, "WL");
	assert_int_equal(synth_verify(&s, &e), 0);
	synth_sign(&s, 5, root, "LWO");
	assert_int_equal(synth_verify(&s, &e), 0);
	synth_sign(&s, 5, root, "W");
	assert_int_equal(synth_verify(&s, &e), -1);
	assert_err(&e, WB_EVERIFY, "checkpoint: no signature by the log '" ORIGIN "'");
	/* another key under the log's name is not the log */
	synth_sign(&s, 5, root, "O");
	assert_int_equal(synth_verify(&s, &e), -1);
	assert_err(&e, WB_EVERIFY, "no signature by the log");
	/* the log's key behind a wrong key hint is not recognised */
	synth_sign(&s, 5, root, "H");
	assert_int_equal(synth_verify(&s, &e), -1);
	assert_err(&e, WB_EVERIFY, "no signature by the log");
	/* a line the log's hint claims must verify, even beside a good one */
	synth_sign(&s, 5, root, "BL");
	assert_int_equal(synth_verify(&s, &e), -1);
	assert_err(&e, WB_EVERIFY, "the signature by '" ORIGIN "' does not verify with the log key");

	/* a validly signed checkpoint for another root or another size */
	mth(s.leaves, 4, other_root);
	synth_sign(&s, 5, other_root, "L");
	assert_int_equal(synth_verify(&s, &e), -1);
	assert_err(&e, WB_EVERIFY, "checkpoint: root hash is not the proof's");
	synth_sign(&s, 6, root, "L");
	assert_int_equal(synth_verify(&s, &e), -1);
	assert_err(&e, WB_EVERIFY, "checkpoint: tree size 6 is not the proof's 5");
	synth_sign(&s, 5, root, "L");
	assert_int_equal(synth_verify(&s, &e), 0);

	/* another tree size with the same path shape (index 3 of 5 or of 6
	 * leaves): the Merkle path alone cannot tell, the signed checkpoint
	 * does */
	s.ent.proof.tree_size = 6;
	assert_int_equal(synth_verify(&s, &e), -1);
	assert_err(&e, WB_EVERIFY, "checkpoint: tree size 5 is not the proof's 6");
	s.ent.proof.tree_size = 5;
	/* another index with the same path shape (2 and 3 of 5): the root
	 * computed from leaf 3's hash at index 2 is not the tree's */
	s.ent.log_index = s.ent.proof.log_index = 2;
	assert_int_equal(synth_verify(&s, &e), -1);
	assert_err(&e, WB_EVERIFY, "inclusion proof: computed root");
	s.ent.log_index = s.ent.proof.log_index = 3;

	/* Rekor v2: the entry's index is the proof's */
	s.ent.log_index = 2;
	assert_int_equal(synth_verify(&s, &e), -1);
	assert_err(&e, WB_EVERIFY, "inclusion proof: log index 3 is not the entry's 2");
	s.ent.log_index = 3;

	/* the origin comes from the trusted root's base URL */
	free(s.key.base_url);
	s.key.base_url = xstrdup("https://other-log.example");
	assert_int_equal(synth_verify(&s, &e), -1);
	assert_err(&e, WB_EVERIFY, "origin '" ORIGIN "' is not the log's 'other-log.example'");
	free(s.key.base_url);
	s.key.base_url = xstrdup("https://" ORIGIN ":443/api");
	assert_int_equal(synth_verify(&s, &e), 0);

	/* no promise on a v2 entry, and a proof is required */
	s.ent.set = xmalloc(1);
	s.ent.set_len = 1;
	assert_int_equal(synth_verify(&s, &e), -1);
	assert_err(&e, WB_EVERIFY, "a Rekor v2 entry carries no inclusion promise");
	free(s.ent.set);
	s.ent.set = NULL;
	s.ent.set_len = 0;
	s.ent.has_proof = 0;
	wb_err_clear(&e);
	assert_int_equal(tlog_entry_verify(&s.ent, &s.key, 1, 0, NOW, &res, &e), -1);
	assert_err(&e, WB_EVERIFY, "has no inclusion proof (a Rekor v2 entry needs one)");
	synth_free(&s);
}

/* ------------------------------------------------------- checkpoints */

static void test_checkpoint_parse(void **state)
{
	static const struct { const char *text, *needle; } bad[] = {
		{ "o\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n— o AAAAAAAA\n", "no blank line" },
		{ "o\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— o AAAAAAAA", "does not end with a newline" },
		{ "o\n05\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— o AAAAAAAA\n", "invalid tree size '05'" },
		{ "o\n-5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— o AAAAAAAA\n", "invalid tree size" },
		{ "o\n5\nAAAA\n\n— o AAAAAAAA\n", "root hash is not 32 bytes" },
		{ "\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— o AAAAAAAA\n", "empty origin" },
		{ "o\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n- o AAAAAAAA\n", "does not start with an em dash" },
		{ "o\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— o+x AAAAAAAA\n", "invalid key name" },
		{ "o\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— o AAAA\n", "too short" },
		{ "o\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— o AA!AAAAA\n", "not base64" },
		{ "o\t\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— o AAAAAAAA\n", "control character" },
		{ "o\xff\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n— o AAAAAAAA\n", "not valid UTF-8" },
	};
	struct tlog_checkpoint cp;
	struct wb_err e = WB_ERR_INIT;
	const char *good = "origin.example - 42\n5\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"
			   "Timestamp: 1\n\n— a.example AAAAAAAA\n— b AQIDBAU=\n";

	(void)state;
	assert_int_equal(tlog_checkpoint_parse(good, strlen(good), &cp, &e), 0);
	assert_string_equal(cp.origin, "origin.example - 42");
	assert_int_equal(cp.size, 5);
	assert_int_equal(cp.nsigs, 2);
	assert_string_equal(cp.sigs[1].name, "b");
	assert_memory_equal(cp.sigs[1].hint, "\x01\x02\x03\x04", 4);
	assert_int_equal(cp.sigs[1].sig_len, 1);
	/* the signed text ends with the line before the blank line */
	assert_int_equal(cp.text_len, strlen("origin.example - 42\n5\n"
					     "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\nTimestamp: 1\n"));
	tlog_checkpoint_release(&cp);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		wb_err_clear(&e);
		assert_int_equal(tlog_checkpoint_parse(bad[i].text, strlen(bad[i].text), &cp, &e), -1);
		assert_err(&e, WB_EUSAGE, bad[i].needle);
	}
}

/* ----------------------------------------------------- bodies */

static void test_body_forgeries(void **state)
{
	struct kase k;
	struct tlog_body body;
	struct expect ex;
	struct wb_err e = WB_ERR_INIT;
	unsigned char saved;

	(void)state;
	/* dsse 0.0.1: the payload hash binds the envelope's payload */
	assert_int_equal(kase_load(&k, "happy-path-intoto-in-dsse-v3", &e), 0);
	assert_int_equal(tlog_body_parse(&k.ent, &body, &e), 0);
	assert_int_equal(body.kind, TLOG_KIND_DSSE);
	assert_true(body.has_envelope_hash);
	expect_fill(&k, "happy-path-intoto-in-dsse-v3", &ex);
	assert_int_equal(tlog_body_match(&body, &ex.x, &e), 0);
	ex.bufs[2][5] ^= 1;
	assert_int_equal(tlog_body_match(&body, &ex.x, &e), -1);
	assert_err(&e, WB_EVERIFY, "payload hash is not that of the envelope's payload");
	ex.bufs[2][5] ^= 1;
	/* a DSSE entry cannot stand for a message signature */
	ex.x.payload_type = NULL;
	ex.x.digest_alg = "sha256";
	wb_err_clear(&e);
	assert_int_equal(tlog_body_match(&body, &ex.x, &e), -1);
	assert_err(&e, WB_EVERIFY, "a dsse entry does not log a message signature");
	expect_free(&ex);
	tlog_body_release(&body);
	kase_free(&k);

	/* an intoto entry whose signature is not base64 text inside base64
	 * holds no signature, not even an empty one */
	assert_int_equal(kase_load(&k, "intoto-log-entry-mismatch_fail", &e), 0);
	assert_int_equal(tlog_body_parse(&k.ent, &body, &e), 0);
	assert_int_equal(body.kind, TLOG_KIND_INTOTO);
	assert_int_equal(body.sigs[0].sig_len, 0);
	expect_fill(&k, "intoto-log-entry-mismatch_fail", &ex);
	ex.x.signature_len = 0;
	wb_err_clear(&e);
	assert_int_equal(tlog_body_match(&body, &ex.x, &e), -1);
	assert_err(&e, WB_EVERIFY, "does not hold the bundle's signature");
	expect_free(&ex);
	tlog_body_release(&body);
	kase_free(&k);

	/* hashedrekord 0.0.2 over a DSSE PAE (Rekor v2) */
	assert_int_equal(kase_load(&k, "rekor2-dsse-happy-path", &e), 0);
	assert_int_equal(tlog_body_parse(&k.ent, &body, &e), 0);
	expect_fill(&k, "rekor2-dsse-happy-path", &ex);
	assert_int_equal(tlog_body_match(&body, &ex.x, &e), 0);
	ex.x.payload_type = "application/vnd.in-toto+json+x";
	wb_err_clear(&e);
	assert_int_equal(tlog_body_match(&body, &ex.x, &e), -1);
	assert_err(&e, WB_EVERIFY, "digest is not that of the DSSE envelope");
	expect_free(&ex);
	tlog_body_release(&body);
	kase_free(&k);

	/* hashedrekord 0.0.1: digest, signature, certificate */
	assert_int_equal(kase_load(&k, "happy-path-v0.3", &e), 0);
	assert_int_equal(tlog_body_parse(&k.ent, &body, &e), 0);
	assert_string_equal(body.digest_alg, "sha256");
	assert_int_equal(body.nsigs, 1);
	assert_non_null(body.sigs[0].verifier.cert);
	expect_fill(&k, "happy-path-v0.3", &ex);
	assert_int_equal(tlog_body_match(&body, &ex.x, &e), 0);
	ex.x.digest_alg = "sha512";
	assert_int_equal(tlog_body_match(&body, &ex.x, &e), -1);
	assert_err(&e, WB_EVERIFY, "digest algorithm sha256 is not the bundle's sha512");
	ex.x.digest_alg = "sha256";
	saved = ex.bufs[0][ex.x.signature_len - 1];
	ex.bufs[0][ex.x.signature_len - 1] ^= 1;
	wb_err_clear(&e);
	assert_int_equal(tlog_body_match(&body, &ex.x, &e), -1);
	assert_err(&e, WB_EVERIFY, "does not hold the bundle's signature");
	ex.bufs[0][ex.x.signature_len - 1] = saved;
	{
		/* another certificate (from another case) */
		struct kase k2;
		struct expect ex2;

		assert_int_equal(kase_load(&k2, "happy-path-v0.1", &e), 0);
		expect_fill(&k2, "happy-path-v0.1", &ex2);
		X509_free(ex.x.cert);
		ex.x.cert = ex2.x.cert;
		ex2.x.cert = NULL;
		wb_err_clear(&e);
		assert_int_equal(tlog_body_match(&body, &ex.x, &e), -1);
		assert_err(&e, WB_EVERIFY, "the transparency log entry's certificate is not the bundle's certificate");
		/* a bare key where the entry logged a certificate */
		ex.x.pkey = X509_get_pubkey(ex.x.cert);
		X509_free(ex.x.cert);
		ex.x.cert = NULL;
		wb_err_clear(&e);
		assert_int_equal(tlog_body_match(&body, &ex.x, &e), -1);
		assert_err(&e, WB_EVERIFY, "certificate is not the bundle's public key");
		expect_free(&ex2);
		kase_free(&k2);
	}
	expect_free(&ex);
	tlog_body_release(&body);
	kase_free(&k);
}

static void test_body_malformed(void **state)
{
	static const struct { const char *kind, *version, *body, *needle; int code; } bad[] = {
		{ "hashedrekord", "0.0.1", "[]", "not a JSON object", WB_EUSAGE },
		{ "hashedrekord", "0.0.1", "{\"kind\":\"hashedrekord\",\"apiVersion\":\"0.0.1\"}", "no spec", WB_EUSAGE },
		{ "rekord", "0.0.1", "{\"kind\":\"rekord\",\"apiVersion\":\"0.0.1\",\"spec\":{}}", "kind rekord 0.0.1 is not supported", WB_EUSAGE },
		{ "intoto", "0.0.1", "{\"kind\":\"intoto\",\"apiVersion\":\"0.0.1\",\"spec\":{}}", "kind intoto 0.0.1 is not supported", WB_EUSAGE },
		{ "hashedrekord", "0.0.2", "{\"kind\":\"hashedrekord\",\"apiVersion\":\"0.0.1\",\"spec\":{}}", "log entry body is hashedrekord 0.0.1, the entry says hashedrekord 0.0.2", WB_EVERIFY },
		{ "hashedrekord", "0.0.1", "{\"kind\":\"hashedrekord\",\"apiVersion\":\"0.0.1\",\"spec\":{\"data\":{\"hash\":{\"algorithm\":\"md5\",\"value\":\"00\"}}}}", "algorithm 'md5' is not supported", WB_EUSAGE },
		{ "hashedrekord", "0.0.1", "{\"kind\":\"hashedrekord\",\"apiVersion\":\"0.0.1\",\"spec\":{\"data\":{\"hash\":{\"algorithm\":\"sha256\",\"value\":\"00\"}}}}", "'value' is not 32 bytes of hex", WB_EUSAGE },
		{ "hashedrekord", "0.0.2", "{\"kind\":\"hashedrekord\",\"apiVersion\":\"0.0.2\",\"spec\":{\"hashedRekordV002\":{\"data\":{\"algorithm\":\"SHA2_256\",\"digest\":\"AAAA\"}}}}", "'digest' is not 32 bytes of base64", WB_EUSAGE },
		{ "dsse", "0.0.1", "{\"kind\":\"dsse\",\"apiVersion\":\"0.0.1\",\"spec\":{\"payloadHash\":{\"algorithm\":\"sha256\",\"value\":\"0000000000000000000000000000000000000000000000000000000000000000\"},\"signatures\":[]}}", "no signatures", WB_EUSAGE },
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct tlog_entry ent;
		struct tlog_body b;
		struct wb_err e = WB_ERR_INIT;

		memset(&ent, 0, sizeof(ent));
		strcpy(ent.kind, bad[i].kind);
		strcpy(ent.version, bad[i].version);
		ent.body = (unsigned char *)(uintptr_t)bad[i].body;
		ent.body_len = strlen(bad[i].body);
		assert_int_equal(tlog_body_parse(&ent, &b, &e), -1);
		assert_err(&e, bad[i].code, bad[i].needle);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conformance),
		cmocka_unit_test(test_table_covers_cases),
		cmocka_unit_test(test_v1_proof_forgeries),
		cmocka_unit_test(test_v1_set_forgeries),
		cmocka_unit_test(test_v1_checkpoint_forgeries),
		cmocka_unit_test(test_rekor_api_form),
		cmocka_unit_test(test_bundle_entry_malformed),
		cmocka_unit_test(test_merkle_rfc6962_paths),
		cmocka_unit_test(test_merkle_probes),
		cmocka_unit_test(test_v2_synthetic_log),
		cmocka_unit_test(test_checkpoint_parse),
		cmocka_unit_test(test_body_forgeries),
		cmocka_unit_test(test_body_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
