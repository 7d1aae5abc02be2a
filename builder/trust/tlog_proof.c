/*
 * Rekor transparency-log proofs: the inclusion promise (SET), the RFC 6962
 * inclusion proof and signed-note checkpoints. Moved out of tlog.c (which
 * keeps keys, entries, the whole-entry check and the canonicalized
 * bodies); the rules are in tlog.h.
 *
 * @where where a Rekor transparency-log entry is checked (SET, RFC 6962
 *   inclusion proof, signed checkpoint, body against the bundle) -- the
 *   proofs: SET, inclusion, checkpoint
 */
#include "trust/tlog.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "lib/base64.h"
#include "lib/buf.h"
#include "lib/text.h"
#include "trust/digest.h"

#define NOTE_SIGS_MAX 100   /* as golang.org/x/mod/sumdb/note */
#define NOTE_DASH "\xe2\x80\x94 "   /* U+2014 EM DASH, space */

static void sha256(const void *data, size_t len, unsigned char out[TLOG_HASH_LEN])
{
	EVP_Digest(data, len, out, NULL, EVP_sha256(), NULL);
}

/* ------------------------------------------------------------- signatures */

/* The digest a key signs with, as Sigstore pairs them: ECDSA P-256 with
 * SHA-256, P-384 with SHA-384, P-521 with SHA-512; Ed25519 signs the
 * message itself (NULL). RSA keys: SHA-256 (PKCS#1 v1.5). */
static const EVP_MD *key_md(EVP_PKEY *pkey)
{
	char group[64];
	size_t glen = 0;

	if (EVP_PKEY_is_a(pkey, "ED25519"))
		return NULL;
	if (EVP_PKEY_is_a(pkey, "EC") &&
	    EVP_PKEY_get_utf8_string_param(pkey, "group", group, sizeof(group), &glen)) {
		if (!strcmp(group, "secp384r1") || !strcmp(group, "P-384"))
			return EVP_sha384();
		if (!strcmp(group, "secp521r1") || !strcmp(group, "P-521"))
			return EVP_sha512();
	}
	return EVP_sha256();
}

/* 1 when SIG is KEY's signature over MSG, else 0. MD NULL picks key_md. */
static int sig_ok(EVP_PKEY *key, const EVP_MD *md, const void *msg, size_t len,
		  const unsigned char *sig, size_t siglen)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok;

	if (!md)
		md = key_md(key);
	ok = ctx && EVP_DigestVerifyInit(ctx, NULL, md, NULL, key) == 1 &&
		EVP_DigestVerify(ctx, sig, siglen, msg, len) == 1;
	EVP_MD_CTX_free(ctx);
	return ok;
}

int tlog_set_verify(const struct tlog_entry *ent, const struct tlog_key *key,
		    struct wb_err *e)
{
	struct buf payload = BUF_INIT;
	char hex[2 * TLOG_HASH_LEN + 1];
	char *b64;
	int ok;

	if (!ent->set)
		return wb_error(e, WB_EVERIFY, "the entry has no inclusion promise (SET)");
	b64 = xmalloc(4 * ((ent->body_len + 2) / 3) + 1);
	EVP_EncodeBlock((unsigned char *)b64, ent->body, (int)ent->body_len);
	digest_hex(ent->log_id, TLOG_HASH_LEN, hex);
	/* RFC 8785 form of Rekor's payload: keys sorted, no spaces; the values
	 * need no escaping (base64, hex, decimal). */
	buf_addf(&payload, "{\"body\":\"%s\",\"integratedTime\":%" PRId64
		 ",\"logID\":\"%s\",\"logIndex\":%" PRId64 "}",
		 b64, ent->integrated_time, hex, ent->log_index);
	free(b64);
	ok = sig_ok(key->pkey, NULL, payload.ptr, payload.len, ent->set, ent->set_len);
	buf_release(&payload);
	if (!ok)
		return wb_error(e, WB_EVERIFY,
				"the inclusion promise (SET) does not verify with the log key");
	return 0;
}

/* ------------------------------------------------------------------ Merkle */

void tlog_merkle_leaf_hash(const unsigned char *data, size_t len,
			   unsigned char out[TLOG_HASH_LEN])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char zero = 0;

	if (!ctx)
		abort();
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	EVP_DigestUpdate(ctx, &zero, 1);
	EVP_DigestUpdate(ctx, data, len);
	EVP_DigestFinal_ex(ctx, out, NULL);
	EVP_MD_CTX_free(ctx);
}

void tlog_merkle_node_hash(const unsigned char l[TLOG_HASH_LEN],
			   const unsigned char r[TLOG_HASH_LEN],
			   unsigned char out[TLOG_HASH_LEN])
{
	unsigned char m[1 + 2 * TLOG_HASH_LEN];

	m[0] = 1;
	memcpy(m + 1, l, TLOG_HASH_LEN);
	memcpy(m + 1 + TLOG_HASH_LEN, r, TLOG_HASH_LEN);
	sha256(m, sizeof(m), out);
}

static unsigned bit_length(uint64_t x)
{
	unsigned n = 0;

	while (x) {
		n++;
		x >>= 1;
	}
	return n;
}

static unsigned popcount64(uint64_t x)
{
	unsigned n = 0;

	for (; x; x &= x - 1)
		n++;
	return n;
}

int tlog_merkle_verify_inclusion(uint64_t index, uint64_t size,
				 const unsigned char leaf_hash[TLOG_HASH_LEN],
				 const unsigned char (*proof)[TLOG_HASH_LEN],
				 size_t nproof,
				 const unsigned char root[TLOG_HASH_LEN],
				 struct wb_err *e)
{
	unsigned char h[TLOG_HASH_LEN];
	unsigned inner, border;
	size_t i;

	if (index >= size)
		return wb_error(e, WB_EVERIFY,
				"inclusion proof: index %" PRIu64 " is not inside a tree of size %" PRIu64,
				index, size);
	/* RFC 9162 2.1.3.2: the path splits into the levels below the point
	 * where the leaf's and the last leaf's paths part ("inner"), and the
	 * right border above it, one hash per set bit of index >> inner. */
	inner = bit_length(index ^ (size - 1));
	border = popcount64(index >> inner);
	if (nproof != (size_t)inner + border)
		return wb_error(e, WB_EVERIFY,
				"inclusion proof: %zu hashes, a tree of size %" PRIu64 " needs %u at index %" PRIu64,
				nproof, size, inner + border, index);
	memcpy(h, leaf_hash, TLOG_HASH_LEN);
	for (i = 0; i < inner; i++) {
		if ((index >> i) & 1)
			tlog_merkle_node_hash(proof[i], h, h);
		else
			tlog_merkle_node_hash(h, proof[i], h);
	}
	for (; i < nproof; i++)
		tlog_merkle_node_hash(proof[i], h, h);
	if (!digest_equal(h, root, TLOG_HASH_LEN)) {
		char want[2 * TLOG_HASH_LEN + 1], got[2 * TLOG_HASH_LEN + 1];

		digest_hex(root, TLOG_HASH_LEN, want);
		digest_hex(h, TLOG_HASH_LEN, got);
		return wb_error(e, WB_EVERIFY, "inclusion proof: computed root %s does not match root hash %s",
				got, want);
	}
	return 0;
}

/* -------------------------------------------------------------- checkpoints */

void tlog_checkpoint_release(struct tlog_checkpoint *cp)
{
	if (!cp)
		return;
	free(cp->origin);
	free(cp->text);
	for (size_t i = 0; i < cp->nsigs; i++) {
		free(cp->sigs[i].name);
		free(cp->sigs[i].sig);
	}
	free(cp->sigs);
	memset(cp, 0, sizeof(*cp));
}

/* Find the end of the line starting at P (before END): the '\n' or NULL. */
static const char *line_end(const char *p, const char *end)
{
	return memchr(p, '\n', (size_t)(end - p));
}

static int parse_sig_line(const char *p, size_t n, struct tlog_note_sig *s,
			  struct wb_err *e)
{
	const char *name, *sp;
	unsigned char *raw;
	size_t rawlen;

	if (n < strlen(NOTE_DASH) || memcmp(p, NOTE_DASH, strlen(NOTE_DASH)))
		return wb_error(e, WB_EUSAGE, "checkpoint: a signature line does not start with an em dash");
	name = p + strlen(NOTE_DASH);
	n -= strlen(NOTE_DASH);
	sp = memchr(name, ' ', n);
	if (!sp || sp == name)
		return wb_error(e, WB_EUSAGE, "checkpoint: a signature line has no key name");
	for (const char *q = name; q < sp; q++)
		if (*q == '+' || (unsigned char)*q <= ' ')
			return wb_error(e, WB_EUSAGE, "checkpoint: invalid key name in a signature line");
	raw = b64_decode(sp + 1, n - (size_t)(sp + 1 - name), &rawlen);
	if (!raw)
		return wb_error(e, WB_EUSAGE, "checkpoint: the signature of '%.*s' is not base64",
				(int)(sp - name), name);
	if (rawlen <= TLOG_KEYHINT_LEN) {
		free(raw);
		return wb_error(e, WB_EUSAGE, "checkpoint: the signature of '%.*s' is too short",
				(int)(sp - name), name);
	}
	s->name = xstrndup(name, (size_t)(sp - name));
	memcpy(s->hint, raw, TLOG_KEYHINT_LEN);
	s->sig_len = rawlen - TLOG_KEYHINT_LEN;
	s->sig = xmalloc(s->sig_len);
	memcpy(s->sig, raw + TLOG_KEYHINT_LEN, s->sig_len);
	free(raw);
	return 0;
}

int tlog_checkpoint_parse(const char *text, size_t len,
			  struct tlog_checkpoint *cp, struct wb_err *e)
{
	const char *end = text + len, *p, *nl, *split = NULL;
	const char *lines[3];
	size_t lens[3], alloc = 0;
	unsigned char *root = NULL;
	size_t rootlen;
	int r = -1;

	memset(cp, 0, sizeof(*cp));
	if (len > TLOG_CHECKPOINT_MAX)
		return wb_error(e, WB_EUSAGE, "checkpoint: larger than %d bytes", TLOG_CHECKPOINT_MAX);
	if (!text_utf8_valid(text, len))
		return wb_error(e, WB_EUSAGE, "checkpoint: not valid UTF-8");
	for (size_t i = 0; i < len; i++)
		if (((unsigned char)text[i] < 0x20 && text[i] != '\n') || text[i] == 0x7f)
			return wb_error(e, WB_EUSAGE, "checkpoint: control character at byte %zu", i);
	if (len == 0 || text[len - 1] != '\n')
		return wb_error(e, WB_EUSAGE, "checkpoint: does not end with a newline");
	/* the note text ends at the last blank line; signatures follow */
	for (p = text; p + 1 < end; p++)
		if (p[0] == '\n' && p[1] == '\n')
			split = p;
	if (!split)
		return wb_error(e, WB_EUSAGE, "checkpoint: no blank line before the signatures");
	cp->text_len = (size_t)(split + 1 - text);
	cp->text = xstrndup(text, cp->text_len);

	/* origin, tree size, root hash, then optional extension lines */
	p = text;
	for (int i = 0; i < 3; i++) {
		nl = line_end(p, split + 1);
		if (!nl) {
			wb_error(e, WB_EUSAGE, "checkpoint: %d lines, needs origin, tree size and root hash", i);
			goto out;
		}
		lines[i] = p;
		lens[i] = (size_t)(nl - p);
		p = nl + 1;
	}
	if (!lens[0]) {
		wb_error(e, WB_EUSAGE, "checkpoint: empty origin");
		goto out;
	}
	cp->origin = xstrndup(lines[0], lens[0]);
	{
		uint64_t v = 0;

		if (!lens[1] || lens[1] > 20 || (lines[1][0] == '0' && lens[1] > 1)) {
			wb_error(e, WB_EUSAGE, "checkpoint: invalid tree size '%.*s'", (int)lens[1], lines[1]);
			goto out;
		}
		for (size_t i = 0; i < lens[1]; i++) {
			unsigned d = (unsigned)(lines[1][i] - '0');

			if (d > 9 || v > (UINT64_MAX - d) / 10) {
				wb_error(e, WB_EUSAGE, "checkpoint: invalid tree size '%.*s'",
					 (int)lens[1], lines[1]);
				goto out;
			}
			v = v * 10 + d;
		}
		cp->size = v;
	}
	root = b64_decode(lines[2], lens[2], &rootlen);
	if (!root || rootlen != TLOG_HASH_LEN) {
		wb_error(e, WB_EUSAGE, "checkpoint: the root hash is not 32 bytes of base64");
		goto out;
	}
	memcpy(cp->root_hash, root, TLOG_HASH_LEN);

	for (p = split + 2; p < end; p = nl + 1) {
		nl = line_end(p, end);
		if (cp->nsigs == NOTE_SIGS_MAX) {
			wb_error(e, WB_EUSAGE, "checkpoint: more than %d signatures", NOTE_SIGS_MAX);
			goto out;
		}
		ALLOC_GROW(cp->sigs, cp->nsigs + 1, alloc);
		memset(&cp->sigs[cp->nsigs], 0, sizeof(cp->sigs[0]));
		cp->nsigs++;
		if (parse_sig_line(p, (size_t)(nl - p), &cp->sigs[cp->nsigs - 1], e) < 0)
			goto out;
	}
	if (!cp->nsigs) {
		wb_error(e, WB_EUSAGE, "checkpoint: no signature lines");
		goto out;
	}
	r = 0;
out:
	free(root);
	if (r < 0)
		tlog_checkpoint_release(cp);
	return r;
}

/* The signed-note key hint of KEY under NAME (see tlog.h). */
static int key_hint(EVP_PKEY *key, const char *name, unsigned char hint[TLOG_KEYHINT_LEN],
		    struct wb_err *e)
{
	unsigned char h[TLOG_HASH_LEN];

	if (EVP_PKEY_is_a(key, "ED25519")) {
		unsigned char raw[32];
		size_t rawlen = sizeof(raw);
		struct buf m = BUF_INIT;

		if (EVP_PKEY_get_raw_public_key(key, raw, &rawlen) != 1 || rawlen != 32)
			return wb_error(e, WB_EUSAGE, "transparency log key: cannot read the Ed25519 key");
		buf_adds(&m, name);
		buf_add(&m, "\n\x01", 2);
		buf_add(&m, raw, rawlen);
		sha256(m.ptr, m.len, h);
		buf_release(&m);
	} else if (EVP_PKEY_is_a(key, "EC")) {
		unsigned char *der = NULL;
		int n = i2d_PUBKEY(key, &der);

		if (n <= 0)
			return wb_error(e, WB_EUSAGE, "transparency log key: cannot encode the key");
		sha256(der, (size_t)n, h);
		OPENSSL_free(der);
	} else {
		return wb_error(e, WB_EUSAGE, "transparency log key: only ECDSA and Ed25519 logs are supported");
	}
	memcpy(hint, h, TLOG_KEYHINT_LEN);
	return 0;
}

int tlog_checkpoint_verify(const struct tlog_checkpoint *cp,
			   const struct tlog_key *key, const char *origin,
			   struct wb_err *e)
{
	unsigned char hint[TLOG_KEYHINT_LEN];
	size_t verified = 0;

	if (origin && strcmp(cp->origin, origin))
		return wb_error(e, WB_EVERIFY, "checkpoint: origin '%s' is not the log's '%s'",
				cp->origin, origin);
	for (size_t i = 0; i < cp->nsigs; i++) {
		const struct tlog_note_sig *s = &cp->sigs[i];

		if (origin && strcmp(s->name, origin))
			continue;        /* a witness or another signer */
		if (key_hint(key->pkey, origin ? origin : s->name, hint, e) < 0)
			return -1;
		if (memcmp(hint, s->hint, TLOG_KEYHINT_LEN)) {
			if (origin)
				continue;    /* another key under the log's name */
			return wb_error(e, WB_EVERIFY, "checkpoint: the signature by '%s' has key hint "
					"%02x%02x%02x%02x, the log's is %02x%02x%02x%02x",
					s->name, s->hint[0], s->hint[1], s->hint[2], s->hint[3],
					hint[0], hint[1], hint[2], hint[3]);
		}
		if (!sig_ok(key->pkey, NULL, cp->text, cp->text_len, s->sig, s->sig_len))
			return wb_error(e, WB_EVERIFY,
					"checkpoint: the signature by '%s' does not verify with the log key",
					s->name);
		verified++;
	}
	if (!verified)
		return wb_error(e, WB_EVERIFY, "checkpoint: no signature by the log '%s'",
				origin ? origin : "(any name)");
	return 0;
}
