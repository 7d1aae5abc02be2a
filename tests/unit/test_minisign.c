/*
 * trust/minisign with real Ed25519 signatures: the tests make a key pair
 * with OpenSSL, write minisign-format keys and signatures in memory, and
 * require every forgery and every malformed input to be refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "trust/minisign.h"

#define TC_A "timestamp:1700000000\tfile:a.bin\thashed"
#define DATA "the artifact\n"

struct fixture {
	EVP_PKEY *key;
	unsigned char keyid[MINISIGN_KEYID_LEN];
	unsigned char pk[MINISIGN_PK_LEN];
	char legacy_path[64];
};

/* The parts of a signature file before encoding, so tests can forge. */
struct parts {
	char alg[3];
	unsigned char keyid[MINISIGN_KEYID_LEN];
	unsigned char sig[MINISIGN_SIG_LEN];
	char tc[4096];
	unsigned char gsig[MINISIGN_SIG_LEN];
};

static void ed_sign(EVP_PKEY *key, const void *msg, size_t len, unsigned char *sig)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	size_t slen = MINISIGN_SIG_LEN;

	assert_non_null(md);
	assert_int_equal(EVP_DigestSignInit(md, NULL, NULL, NULL, key), 1);
	assert_int_equal(EVP_DigestSign(md, sig, &slen, msg, len), 1);
	assert_int_equal(slen, MINISIGN_SIG_LEN);
	EVP_MD_CTX_free(md);
}

static void blake2b(const void *data, size_t len, unsigned char *out)
{
	assert_int_equal(EVP_Digest(data, len, out, NULL, EVP_blake2b512(), NULL), 1);
}

/* Sign DATA as minisign does: ALG "ED" (prehashed) or "Ed" (legacy). */
static void sign_parts(struct fixture *fx, const char *alg, const void *data,
		       size_t len, const char *tc, struct parts *p)
{
	unsigned char h[64], gmsg[MINISIGN_SIG_LEN + sizeof(p->tc)];
	size_t tclen = strlen(tc);

	memset(p, 0, sizeof(*p));
	memcpy(p->alg, alg, 2);
	memcpy(p->keyid, fx->keyid, MINISIGN_KEYID_LEN);
	if (!strcmp(alg, "Ed")) {
		ed_sign(fx->key, data, len, p->sig);
	} else {
		blake2b(data, len, h);
		ed_sign(fx->key, h, 64, p->sig);
	}
	assert_true(tclen < sizeof(p->tc));
	memcpy(p->tc, tc, tclen);
	memcpy(gmsg, p->sig, MINISIGN_SIG_LEN);
	memcpy(gmsg + MINISIGN_SIG_LEN, tc, tclen);
	ed_sign(fx->key, gmsg, MINISIGN_SIG_LEN + tclen, p->gsig);
}

static void b64(const unsigned char *in, size_t len, char *out)
{
	EVP_EncodeBlock((unsigned char *)out, in, (int)len);
}

/* Render P as a signature file with line ending EOL into OUT. */
static void render(const struct parts *p, const char *eol, char *out, size_t cap)
{
	unsigned char raw[2 + MINISIGN_KEYID_LEN + MINISIGN_SIG_LEN];
	char l2[128], l4[128];

	memcpy(raw, p->alg, 2);
	memcpy(raw + 2, p->keyid, MINISIGN_KEYID_LEN);
	memcpy(raw + 2 + MINISIGN_KEYID_LEN, p->sig, MINISIGN_SIG_LEN);
	b64(raw, sizeof(raw), l2);
	b64(p->gsig, MINISIGN_SIG_LEN, l4);
	snprintf(out, cap, "untrusted comment: signature from test key%s%s%s"
		 "trusted comment: %s%s%s%s", eol, l2, eol, p->tc, eol, l4, eol);
}

/* A .pub file for a key id and raw point. */
static void render_pub(const unsigned char *keyid, const unsigned char *pk,
		       char *out, size_t cap)
{
	unsigned char raw[2 + MINISIGN_KEYID_LEN + MINISIGN_PK_LEN];
	char line[128];

	raw[0] = 'E';
	raw[1] = 'd';
	memcpy(raw + 2, keyid, MINISIGN_KEYID_LEN);
	memcpy(raw + 2 + MINISIGN_KEYID_LEN, pk, MINISIGN_PK_LEN);
	b64(raw, sizeof(raw), line);
	snprintf(out, cap, "untrusted comment: minisign public key\n%s\n", line);
}

static int make_key(struct fixture *fx)
{
	EVP_PKEY_CTX *kc = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
	size_t len = MINISIGN_PK_LEN;
	int ok = kc && EVP_PKEY_keygen_init(kc) == 1 &&
		 EVP_PKEY_keygen(kc, &fx->key) == 1 &&
		 EVP_PKEY_get_raw_public_key(fx->key, fx->pk, &len) == 1;

	EVP_PKEY_CTX_free(kc);
	memcpy(fx->keyid, "\x01\x02\x03\x04\x05\x06\x07\x08", MINISIGN_KEYID_LEN);
	return ok ? 0 : -1;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	int fd;

	if (!fx || make_key(fx) < 0)
		return -1;
	strcpy(fx->legacy_path, "/tmp/wb-minisign-XXXXXX");
	fd = mkstemp(fx->legacy_path);
	if (fd < 0 || write(fd, DATA, strlen(DATA)) != (ssize_t)strlen(DATA))
		return -1;
	close(fd);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	unlink(fx->legacy_path);
	EVP_PKEY_free(fx->key);
	free(fx);
	return 0;
}

static void pinned(struct fixture *fx, struct minisign_pubkey *k)
{
	char text[256];
	struct wb_err e = WB_ERR_INIT;

	render_pub(fx->keyid, fx->pk, text, sizeof(text));
	assert_int_equal(minisign_pubkey_parse(text, strlen(text), k, &e), 0);
}

/*
 * Parse TEXT and verify it against KEYS for DATA (the legacy file holds
 * DATA too) as "a.bin". Returns 0 or the error class; E gets the message.
 */
static int check(struct fixture *fx, const char *text, const void *data,
		 const struct minisign_pubkey *keys, size_t nkeys,
		 struct minisign_result *res, struct wb_err *e)
{
	struct minisign_sig sig;
	struct minisign_result local;
	unsigned char h[64];
	int ret;

	wb_err_clear(e);
	if (minisign_sig_parse(text, strlen(text), &sig, e) < 0)
		return e->code;
	blake2b(data, strlen(data), h);
	ret = minisign_verify(&sig, keys, nkeys, h, fx->legacy_path, "a.bin",
			      res ? res : &local, e);
	if (!res)
		minisign_result_release(&local);
	minisign_sig_release(&sig);
	return ret < 0 ? e->code : 0;
}

/* Render P and check it for DATA against K, or the fixture's key. */
static int check_parts(struct fixture *fx, const struct parts *p,
		       const char *data, const struct minisign_pubkey *k,
		       struct wb_err *e)
{
	struct minisign_pubkey own;
	char text[8192];

	if (!k) {
		pinned(fx, &own);
		k = &own;
	}
	render(p, "\n", text, sizeof(text));
	return check(fx, text, data, k, 1, NULL, e);
}

/* Sign DATA with ALG and TC and check it against the pinned key. */
static int sign_and_check(struct fixture *fx, const char *alg, const char *tc,
			  int allow_legacy, int file_check, struct wb_err *e)
{
	struct minisign_pubkey k;
	struct parts p;

	pinned(fx, &k);
	k.allow_legacy = allow_legacy;
	k.file_check = file_check;
	sign_parts(fx, alg, DATA, strlen(DATA), tc, &p);
	return check_parts(fx, &p, DATA, &k, e);
}

static void assert_msg(const struct wb_err *e, const char *part)
{
	if (!strstr(e->msg, part))
		fail_msg("message '%s' lacks '%s'", e->msg, part);
}

/* ---- good signatures ---- */

static void test_good_signature(void **state)
{
	struct fixture *fx = *state;
	struct wb_err e = WB_ERR_INIT;
	struct minisign_pubkey k;
	struct minisign_result res;
	struct parts p;
	char text[8192];

	pinned(fx, &k);
	assert_int_equal(k.allow_legacy, 0);
	assert_int_equal(k.file_check, 1);
	sign_parts(fx, "ED", DATA, strlen(DATA), TC_A, &p);
	render(&p, "\n", text, sizeof(text));
	assert_int_equal(check(fx, text, DATA, &k, 1, &res, &e), 0);
	assert_int_equal(res.key_index, 0);
	assert_string_equal(res.keyid_hex, "0807060504030201");
	assert_string_equal(res.trusted_comment, TC_A);
	minisign_result_release(&res);
}

static void test_keyid_hex_order(void **state)
{
	const unsigned char id[8] = { 0xe3, 0x0e, 0xea, 0xea, 0xda, 0xe4, 0xb7, 0x76 };
	char hex[17];

	(void)state;
	minisign_keyid_hex(id, hex);
	assert_string_equal(hex, "76B7E4DAEAEA0EE3");   /* as minisign prints it */
}

static void test_crlf_and_no_final_newline(void **state)
{
	struct fixture *fx = *state;
	struct wb_err e = WB_ERR_INIT;
	struct minisign_pubkey k;
	struct parts p;
	char text[8192];

	pinned(fx, &k);
	sign_parts(fx, "ED", DATA, strlen(DATA), TC_A, &p);
	render(&p, "\r\n", text, sizeof(text));
	assert_int_equal(check(fx, text, DATA, &k, 1, NULL, &e), 0);
	render(&p, "\n", text, sizeof(text));
	text[strlen(text) - 1] = '\0';
	assert_int_equal(check(fx, text, DATA, &k, 1, NULL, &e), 0);
}

static void test_key_rotation(void **state)
{
	struct fixture *fx = *state;
	struct wb_err e = WB_ERR_INIT;
	struct minisign_pubkey k[2];
	struct minisign_result res;
	struct parts p;
	char text[8192];

	pinned(fx, &k[1]);
	k[0] = k[1];
	k[0].keyid[0] ^= 0xff;
	sign_parts(fx, "ED", DATA, strlen(DATA), TC_A, &p);
	render(&p, "\n", text, sizeof(text));
	assert_int_equal(check(fx, text, DATA, k, 2, &res, &e), 0);
	assert_int_equal(res.key_index, 1);
	minisign_result_release(&res);
}

/* ---- forgeries ---- */

static void test_tampered_file(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct parts p;
	char data[] = DATA;

	sign_parts(*state, "ED", DATA, strlen(DATA), TC_A, &p);
	data[3] ^= 0x01;
	assert_int_equal(check_parts(*state, &p, data, NULL, &e), WB_EVERIFY);
	assert_msg(&e, "signature verification failed");
}

static void test_tampered_sig(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct parts p, q;

	sign_parts(*state, "ED", DATA, strlen(DATA), TC_A, &p);
	for (int bit = 0; bit < 512; bit += 37) {
		q = p;
		q.sig[bit / 8] ^= (unsigned char)(1 << bit % 8);
		assert_int_equal(check_parts(*state, &q, DATA, NULL, &e), WB_EVERIFY);
	}
}

static void test_tampered_global_sig(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct parts p;

	sign_parts(*state, "ED", DATA, strlen(DATA), TC_A, &p);
	p.gsig[40] ^= 0x10;
	assert_int_equal(check_parts(*state, &p, DATA, NULL, &e), WB_EVERIFY);
	assert_msg(&e, "comment signature verification failed");
}

static void test_tampered_trusted_comment(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct parts p;

	sign_parts(*state, "ED", DATA, strlen(DATA), TC_A, &p);
	p.tc[5] ^= 0x01;   /* "timestamp" -> "timesuamp" */
	assert_int_equal(check_parts(*state, &p, DATA, NULL, &e), WB_EVERIFY);
	assert_msg(&e, "comment signature verification failed");
}

static void test_wrong_key_id(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct parts p;

	sign_parts(*state, "ED", DATA, strlen(DATA), TC_A, &p);
	p.keyid[7] = 0xaa;
	assert_int_equal(check_parts(*state, &p, DATA, NULL, &e), WB_EVERIFY);
	assert_msg(&e, "signature key id 'AA07060504030201' does not match the pinned key '0807060504030201'");
}

static void test_wrong_key(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct minisign_pubkey k;
	struct parts p;
	struct fixture other;

	/* another key under the same key id: the signature must not verify */
	memset(&other, 0, sizeof(other));
	assert_int_equal(make_key(&other), 0);
	pinned(&other, &k);
	EVP_PKEY_free(other.key);
	sign_parts(*state, "ED", DATA, strlen(DATA), TC_A, &p);
	assert_int_equal(check_parts(*state, &p, DATA, &k, &e), WB_EVERIFY);
}

static void test_legacy_refused_by_default(void **state)
{
	struct wb_err e = WB_ERR_INIT;

	assert_int_equal(sign_and_check(*state, "Ed", TC_A, 0, 1, &e), WB_EVERIFY);
	assert_msg(&e, "legacy");
	assert_msg(&e, "does not allow legacy signatures");
}

static void test_legacy_allowed(void **state)
{
	struct fixture *fx = *state;
	struct wb_err e = WB_ERR_INIT;
	struct minisign_pubkey k;
	struct parts p;

	assert_int_equal(sign_and_check(fx, "Ed", TC_A, 1, 1, &e), 0);
	/* a legacy signature over other bytes still fails */
	pinned(fx, &k);
	k.allow_legacy = 1;
	sign_parts(fx, "Ed", "other", 5, TC_A, &p);
	assert_int_equal(check_parts(fx, &p, DATA, &k, &e), WB_EVERIFY);
	/* and a prehashed signature passed off as legacy fails */
	sign_parts(fx, "ED", DATA, strlen(DATA), TC_A, &p);
	memcpy(p.alg, "Ed", 2);
	assert_int_equal(check_parts(fx, &p, DATA, &k, &e), WB_EVERIFY);
}

static void test_legacy_file_unreadable(void **state)
{
	struct fixture *fx = *state;
	struct wb_err e = WB_ERR_INIT;
	struct minisign_pubkey k;
	struct minisign_sig sig;
	struct minisign_result res;
	struct parts p;
	unsigned char h[64] = { 0 };
	char text[8192], empty[] = "/tmp/wb-empty-XXXXXX";
	int fd;

	pinned(fx, &k);
	k.allow_legacy = 1;
	sign_parts(fx, "Ed", "", 0, TC_A, &p);
	render(&p, "\n", text, sizeof(text));
	assert_int_equal(minisign_sig_parse(text, strlen(text), &sig, &e), 0);
	/* a directory is not an empty file: could not verify, not verified */
	assert_int_equal(minisign_verify(&sig, &k, 1, h, "/tmp", "a.bin", &res, &e), -1);
	assert_int_equal(e.code, WB_EIO);
	assert_int_equal(minisign_verify(&sig, &k, 1, h, "/nonexistent/a.bin", "a.bin",
					 &res, &e), -1);
	assert_int_equal(e.code, WB_EIO);
	assert_int_equal(minisign_verify(&sig, &k, 1, h, NULL, "a.bin", &res, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	/* an empty regular file is fine */
	fd = mkstemp(empty);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(minisign_verify(&sig, &k, 1, h, empty, "a.bin", &res, &e), 0);
	minisign_result_release(&res);
	unlink(empty);
	minisign_sig_release(&sig);
}

static void test_comment_control_bytes(void **state)
{
	struct wb_err e = WB_ERR_INIT;

	assert_int_equal(sign_and_check(*state, "ED", "file:a.bin\rx", 0, 1, &e),
			 WB_EVERIFY);
	assert_msg(&e, "control byte 0x0d");
	assert_int_equal(sign_and_check(*state, "ED", "file:a.bin\x1b[2J", 0, 1, &e),
			 WB_EVERIFY);
	assert_int_equal(sign_and_check(*state, "ED", "file:a.bin\x7f", 0, 0, &e),
			 WB_EVERIFY);
	/* TAB separates minisign's fields */
	assert_int_equal(sign_and_check(*state, "ED", "x:1\tfile:a.bin\ty", 0, 1, &e), 0);
}

static void test_file_field(void **state)
{
	struct wb_err e = WB_ERR_INIT;

	assert_int_equal(sign_and_check(*state, "ED",
					"timestamp:1\tfile:b.bin\thashed", 0, 1, &e),
			 WB_EVERIFY);
	assert_msg(&e, "trusted comment names file 'b.bin', expected 'a.bin'");
	assert_int_equal(sign_and_check(*state, "ED", "timestamp:1\tfile:a.bin.evil",
					0, 1, &e), WB_EVERIFY);
	assert_int_equal(sign_and_check(*state, "ED", "file:a.bin", 0, 1, &e), 0);
	assert_int_equal(sign_and_check(*state, "ED", "no file here", 0, 1, &e),
			 WB_EVERIFY);
	assert_msg(&e, "names no file");
	/* "xfile:" is not the file field */
	assert_int_equal(sign_and_check(*state, "ED", "xfile:a.bin", 0, 1, &e),
			 WB_EVERIFY);
}

/* The file field is compared in full, not as a prefix (a mutant that drops
 * the length check lets an empty or a cut-short name through). */
static void test_file_field_not_a_prefix(void **state)
{
	static const char *const near[] = {
		"timestamp:1\tfile:\thashed", "file:", "file:a.bi", "timestamp:1\tfile:a",
		"file:a.bin\x20", "file:A.bin",
	};
	struct wb_err e = WB_ERR_INIT;

	for (size_t i = 0; i < sizeof(near) / sizeof(near[0]); i++) {
		wb_err_clear(&e);
		if (sign_and_check(*state, "ED", near[i], 0, 1, &e) != WB_EVERIFY)
			fail_msg("trusted comment '%s' passed as 'file:a.bin'", near[i]);
		assert_msg(&e, "expected 'a.bin'");
	}
}

/* Two file: fields are ambiguous: refused whichever one names the file,
 * and also when the key does not check the field. */
static void test_file_field_twice(void **state)
{
	static const char *const twice[] = {
		"file:a.bin\tfile:b.bin", "file:b.bin\tfile:a.bin", "file:a.bin\tfile:a.bin",
		"timestamp:1\tfile:a.bin\thashed\tfile:", "file:\tfile:a.bin",
	};
	struct wb_err e = WB_ERR_INIT;

	for (size_t i = 0; i < sizeof(twice) / sizeof(twice[0]); i++) {
		for (int check = 0; check <= 1; check++) {
			wb_err_clear(&e);
			if (sign_and_check(*state, "ED", twice[i], 0, check, &e) != WB_EVERIFY)
				fail_msg("trusted comment '%s' with two file: fields passed",
					 twice[i]);
			assert_msg(&e, "trusted comment has more than one 'file:' field");
		}
	}
	/* "xfile:" and "file" without a colon are other fields */
	assert_int_equal(sign_and_check(*state, "ED", "file:a.bin\txfile:b.bin\tfile", 0, 1,
					&e), 0);
}

static void test_file_check_off(void **state)
{
	struct wb_err e = WB_ERR_INIT;

	assert_int_equal(sign_and_check(*state, "ED",
					"timestamp:1\tfile:b.bin\thashed", 0, 0, &e), 0);
	assert_int_equal(sign_and_check(*state, "ED", "anything", 0, 0, &e), 0);
}

static void test_bad_r_and_s(void **state)
{
	struct fixture *fx = *state;
	struct wb_err e = WB_ERR_INIT;
	struct parts p, q;
	unsigned carry = 0;
	/* L, little-endian */
	static const unsigned char l[32] = {
		0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7,
		0xa2, 0xde, 0xf9, 0xde, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0x10,
	};

	sign_parts(fx, "ED", DATA, strlen(DATA), TC_A, &p);
	/* S + L: the same scalar, not canonical */
	q = p;
	for (int i = 0; i < 32; i++) {
		carry += q.sig[32 + i] + l[i];
		q.sig[32 + i] = (unsigned char)carry;
		carry >>= 8;
	}
	assert_int_equal(check_parts(fx, &q, DATA, NULL, &e), WB_EVERIFY);
	/* R the identity point, R with y >= p */
	q = p;
	memset(q.sig, 0, 32);
	q.sig[0] = 1;
	assert_int_equal(check_parts(fx, &q, DATA, NULL, &e), WB_EVERIFY);
	memset(q.sig, 0xff, 32);
	q.sig[0] = 0xf0;
	q.sig[31] = 0x7f;
	assert_int_equal(check_parts(fx, &q, DATA, NULL, &e), WB_EVERIFY);
}

/* ---- public keys ---- */

static int parse_pub_point(const unsigned char *pt)
{
	struct wb_err e = WB_ERR_INIT;
	struct minisign_pubkey k;
	char text[256];
	const unsigned char id[8] = { 1 };

	render_pub(id, pt, text, sizeof(text));
	return minisign_pubkey_parse(text, strlen(text), &k, &e) < 0 ? e.code : 0;
}

static void test_small_order_keys(void **state)
{
	unsigned char pt[32];
	/* the two order-8 points' y (little-endian) */
	static const unsigned char y8[2][32] = {
		{ 0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4,
		  0x89, 0xf2, 0xef, 0x98, 0xf0, 0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6,
		  0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05 },
		{ 0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b,
		  0x76, 0x0d, 0x10, 0x67, 0x0f, 0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39,
		  0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a },
	};

	(void)state;
	memset(pt, 0, 32);
	pt[0] = 1;                                        /* identity */
	assert_int_equal(parse_pub_point(pt), WB_EUSAGE);
	pt[31] = 0x80;                                    /* with x sign set */
	assert_int_equal(parse_pub_point(pt), WB_EUSAGE);
	memset(pt, 0, 32);                                /* y = 0, order 4 */
	assert_int_equal(parse_pub_point(pt), WB_EUSAGE);
	memset(pt, 0xff, 32);                             /* y = p - 1, order 2 */
	pt[0] = 0xec;
	pt[31] = 0x7f;
	assert_int_equal(parse_pub_point(pt), WB_EUSAGE);
	assert_int_equal(parse_pub_point(y8[0]), WB_EUSAGE);
	memcpy(pt, y8[1], 32);
	pt[31] |= 0x80;
	assert_int_equal(parse_pub_point(pt), WB_EUSAGE);
}

static void test_noncanonical_key(void **state)
{
	struct fixture *fx = *state;
	unsigned char pt[32];
	struct wb_err e = WB_ERR_INIT;
	struct minisign_pubkey k;
	char text[256];

	memset(pt, 0xff, 32);                             /* y = p + 2 */
	pt[0] = 0xef;
	pt[31] = 0x7f;
	assert_int_equal(parse_pub_point(pt), WB_EUSAGE);
	pt[0] = 0xff;                                     /* y = 2^255 - 1 */
	assert_int_equal(parse_pub_point(pt), WB_EUSAGE);
	assert_int_equal(parse_pub_point(fx->pk), 0);
	render_pub(fx->keyid, fx->pk, text, sizeof(text));
	assert_int_equal(minisign_pubkey_parse(text, strlen(text), &k, &e), 0);
	assert_memory_equal(k.pk, fx->pk, 32);
	assert_memory_equal(k.keyid, fx->keyid, 8);
}

static void test_pubkey_forms(void **state)
{
	struct fixture *fx = *state;
	struct wb_err e = WB_ERR_INIT;
	struct minisign_pubkey k;
	char text[256], line[128], crlf[300];
	char *nl;

	render_pub(fx->keyid, fx->pk, text, sizeof(text));
	nl = strchr(text, '\n');
	strcpy(line, nl + 1);
	/* bare base64, with or without newline, spaces around */
	assert_int_equal(minisign_pubkey_parse(line, strlen(line), &k, &e), 0);
	line[strlen(line) - 1] = '\0';
	assert_int_equal(minisign_pubkey_parse(line, strlen(line), &k, &e), 0);
	snprintf(crlf, sizeof(crlf), " %s \n", line);
	assert_int_equal(minisign_pubkey_parse(crlf, strlen(crlf), &k, &e), 0);
	snprintf(crlf, sizeof(crlf), "untrusted comment: k\r\n%s\r\n", line);
	assert_int_equal(minisign_pubkey_parse(crlf, strlen(crlf), &k, &e), 0);
	/* bad: wrong comment line, three lines, bad char, short */
	snprintf(crlf, sizeof(crlf), "comment: k\n%s\n", line);
	assert_int_equal(minisign_pubkey_parse(crlf, strlen(crlf), &k, &e), -1);
	snprintf(crlf, sizeof(crlf), "untrusted comment: k\n%s\nextra\n", line);
	assert_int_equal(minisign_pubkey_parse(crlf, strlen(crlf), &k, &e), -1);
	line[10] = '*';
	assert_int_equal(minisign_pubkey_parse(line, strlen(line), &k, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	assert_int_equal(minisign_pubkey_parse("RWQ=", 4, &k, &e), -1);
	assert_msg(&e, "42-byte");
}

static void test_pubkey_wrong_alg(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct minisign_pubkey k;
	unsigned char raw[42];
	char line[128];

	(void)state;
	memset(raw, 0x11, sizeof(raw));
	raw[0] = 'E';
	raw[1] = 'D';   /* "ED" is a signature algorithm, not a key's */
	b64(raw, sizeof(raw), line);
	assert_int_equal(minisign_pubkey_parse(line, strlen(line), &k, &e), -1);
	assert_msg(&e, "unknown algorithm");
}

/* ---- malformed signature files ---- */

static int parse_sig_text(const char *text, struct wb_err *e)
{
	struct minisign_sig sig;

	wb_err_clear(e);
	if (minisign_sig_parse(text, strlen(text), &sig, e) < 0)
		return e->code;
	minisign_sig_release(&sig);
	return 0;
}

static void good_text(struct fixture *fx, char *text, size_t cap)
{
	struct parts p;

	sign_parts(fx, "ED", DATA, strlen(DATA), TC_A, &p);
	render(&p, "\n", text, cap);
}

/* Replace line N (1-based) of TEXT with REPL. */
static void replace_line(char *text, int n, const char *repl)
{
	char out[8192], *s = text, *eol;

	for (int i = 1; i < n; i++)
		s = strchr(s, '\n') + 1;
	eol = strchr(s, '\n');
	snprintf(out, sizeof(out), "%.*s%s%s", (int)(s - text), text, repl,
		 eol ? eol : "");
	strcpy(text, out);
}

static void test_bad_base64(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	char text[8192], line[128], *l2, *end;

	good_text(*state, text, sizeof(text));
	l2 = strchr(text, '\n') + 1;
	end = strchr(l2, '\n');
	snprintf(line, sizeof(line), "%.*s", (int)(end - l2), l2);
	assert_int_equal(strlen(line), 100);
	assert_int_equal(line[99], '=');

	char bad[8192];

	strcpy(bad, text);
	bad[(l2 - text) + 10] = '!';                      /* bad character */
	assert_int_equal(parse_sig_text(bad, &e), WB_EUSAGE);
	assert_msg(&e, "signature line 2");
	strcpy(bad, text);
	replace_line(bad, 2, "RUQ");                      /* truncated */
	assert_int_equal(parse_sig_text(bad, &e), WB_EUSAGE);
	strcpy(bad, text);
	line[99] = 'A';                                   /* padding missing */
	replace_line(bad, 2, line);
	assert_int_equal(parse_sig_text(bad, &e), WB_EUSAGE);
	line[99] = '=';
	line[98] = (char)(line[98] == 'B' ? 'C' : 'B');   /* unused bits set */
	strcpy(bad, text);
	replace_line(bad, 2, line);
	assert_int_equal(parse_sig_text(bad, &e), WB_EUSAGE);
	strcpy(bad, text);
	replace_line(bad, 4, "AAAA====");                 /* bad padding */
	assert_int_equal(parse_sig_text(bad, &e), WB_EUSAGE);
	assert_msg(&e, "signature line 4");
}

static void test_wrong_lengths(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	unsigned char raw[80];
	char text[8192], line[200];

	good_text(*state, text, sizeof(text));
	memset(raw, 0, sizeof(raw));
	memcpy(raw, "ED", 2);
	b64(raw, 75, line);                               /* one byte long */
	replace_line(text, 2, line);
	assert_int_equal(parse_sig_text(text, &e), WB_EUSAGE);
	good_text(*state, text, sizeof(text));
	b64(raw, 63, line);                               /* global sig short */
	replace_line(text, 4, line);
	assert_int_equal(parse_sig_text(text, &e), WB_EUSAGE);
	b64(raw, 64, line);
	replace_line(text, 4, line);
	assert_int_equal(parse_sig_text(text, &e), 0);
}

static void test_unknown_algorithm(void **state)
{
	struct fixture *fx = *state;
	struct wb_err e = WB_ERR_INIT;
	struct parts p;
	char text[8192];

	sign_parts(fx, "ED", DATA, strlen(DATA), TC_A, &p);
	memcpy(p.alg, "XX", 2);
	render(&p, "\n", text, sizeof(text));
	assert_int_equal(parse_sig_text(text, &e), WB_EUSAGE);
	assert_msg(&e, "unknown algorithm '5858'");
	memcpy(p.alg, "eD", 2);
	render(&p, "\n", text, sizeof(text));
	assert_int_equal(parse_sig_text(text, &e), WB_EUSAGE);
}

static void test_line_count(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	char text[8192], more[8300];

	good_text(*state, text, sizeof(text));
	snprintf(more, sizeof(more), "%sextra\n", text);
	assert_int_equal(parse_sig_text(more, &e), WB_EUSAGE);
	assert_msg(&e, "more than 4");
	snprintf(more, sizeof(more), "%s\n", text);      /* an empty 5th line */
	assert_int_equal(parse_sig_text(more, &e), WB_EUSAGE);
	*strrchr(text, '\n') = '\0';
	*(strrchr(text, '\n') + 1) = '\0';                /* three lines */
	assert_int_equal(parse_sig_text(text, &e), WB_EUSAGE);
	assert_msg(&e, "3 lines");
	assert_int_equal(parse_sig_text("", &e), WB_EUSAGE);
}

static void test_missing_prefixes(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	char text[8192];

	good_text(*state, text, sizeof(text));
	replace_line(text, 1, "comment: x");
	assert_int_equal(parse_sig_text(text, &e), WB_EUSAGE);
	assert_msg(&e, "signature line 1: expected 'untrusted comment: ...'");
	good_text(*state, text, sizeof(text));
	replace_line(text, 3, "trusted comment:x");
	assert_int_equal(parse_sig_text(text, &e), WB_EUSAGE);
	assert_msg(&e, "signature line 3");
}

static void test_overlong_comments(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	char text[8192], c[MINISIGN_COMMENT_MAX + 40];

	memcpy(c, "untrusted comment: ", 19);
	memset(c + 19, 'x', MINISIGN_COMMENT_MAX);
	c[19 + MINISIGN_COMMENT_MAX] = '\0';
	good_text(*state, text, sizeof(text));
	replace_line(text, 1, c);                         /* at the limit */
	assert_int_equal(parse_sig_text(text, &e), 0);
	strcat(c, "x");
	good_text(*state, text, sizeof(text));
	replace_line(text, 1, c);
	assert_int_equal(parse_sig_text(text, &e), WB_EUSAGE);
	assert_msg(&e, "longer than");
	good_text(*state, text, sizeof(text));
	replace_line(text, 3, c + 2);                     /* "trusted comment: ..." */
	assert_int_equal(parse_sig_text(text, &e), WB_EUSAGE);
	assert_msg(&e, "signature line 3");
}

static void test_nul_and_size(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct minisign_sig sig;
	char text[8192];
	char *big;
	size_t n;

	good_text(*state, text, sizeof(text));
	n = strlen(text);
	text[25] = '\0';
	assert_int_equal(minisign_sig_parse(text, n, &sig, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	assert_msg(&e, "NUL");
	big = calloc(1, MINISIGN_SIGFILE_MAX + 2);
	assert_non_null(big);
	memset(big, 'x', MINISIGN_SIGFILE_MAX + 1);
	assert_int_equal(minisign_sig_parse(big, MINISIGN_SIGFILE_MAX + 1, &sig, &e), -1);
	assert_msg(&e, "larger than");
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_signature),
		cmocka_unit_test(test_file_field_not_a_prefix),
		cmocka_unit_test(test_file_field_twice),
		cmocka_unit_test(test_keyid_hex_order),
		cmocka_unit_test(test_crlf_and_no_final_newline),
		cmocka_unit_test(test_key_rotation),
		cmocka_unit_test(test_tampered_file),
		cmocka_unit_test(test_tampered_sig),
		cmocka_unit_test(test_tampered_global_sig),
		cmocka_unit_test(test_tampered_trusted_comment),
		cmocka_unit_test(test_wrong_key_id),
		cmocka_unit_test(test_wrong_key),
		cmocka_unit_test(test_legacy_refused_by_default),
		cmocka_unit_test(test_legacy_allowed),
		cmocka_unit_test(test_legacy_file_unreadable),
		cmocka_unit_test(test_comment_control_bytes),
		cmocka_unit_test(test_file_field),
		cmocka_unit_test(test_file_check_off),
		cmocka_unit_test(test_bad_r_and_s),
		cmocka_unit_test(test_small_order_keys),
		cmocka_unit_test(test_noncanonical_key),
		cmocka_unit_test(test_pubkey_forms),
		cmocka_unit_test(test_pubkey_wrong_alg),
		cmocka_unit_test(test_bad_base64),
		cmocka_unit_test(test_wrong_lengths),
		cmocka_unit_test(test_unknown_algorithm),
		cmocka_unit_test(test_line_count),
		cmocka_unit_test(test_missing_prefixes),
		cmocka_unit_test(test_overlong_comments),
		cmocka_unit_test(test_nul_and_size),
	};

	return cmocka_run_group_tests_name("minisign", tests, setup, teardown);
}
