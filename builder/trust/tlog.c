/*
 * Rekor transparency-log entries: parsing (bundle and Rekor API forms), the
 * whole-entry check and the canonicalized bodies; the proofs (inclusion
 * promise, RFC 6962 inclusion proof, signed-note checkpoints) are in
 * tlog_proof.c. See tlog.h for the rules.
 */
#include "trust/tlog.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "lib/base64.h"
#include "lib/buf.h"
#include "lib/json.h"
#include "lib/text.h"
#include "trust/digest.h"


/* ------------------------------------------------------------------ keys */

void tlog_key_release(struct tlog_key *k)
{
	if (!k)
		return;
	EVP_PKEY_free(k->pkey);
	free(k->base_url);
	free(k->origin);
	memset(k, 0, sizeof(*k));
}

int tlog_key_valid_at(const struct tlog_key *k, int64_t t)
{
	return t >= k->valid_from && t <= k->valid_to;
}

const struct tlog_key *tlog_key_find(const struct tlog_key *keys, size_t nkeys,
				     const unsigned char log_id[TLOG_HASH_LEN])
{
	for (size_t i = 0; i < nkeys; i++)
		if (!memcmp(keys[i].log_id, log_id, TLOG_HASH_LEN))
			return &keys[i];
	return NULL;
}

int tlog_key_origin(const struct tlog_key *key, char *out, size_t outsz,
		    struct wb_err *e)
{
	const char *s = key->origin, *end;

	if (!s) {
		s = key->base_url;
		if (!s)
			return wb_error(e, WB_EUSAGE, "transparency log has no base URL to name its checkpoints");
		if (!strncmp(s, "https://", 8))
			s += 8;
		else if (!strncmp(s, "http://", 7))
			s += 7;
		end = s + strcspn(s, ":/?#");
	} else {
		end = s + strlen(s);
	}
	if (end == s || (size_t)(end - s) >= outsz)
		return wb_error(e, WB_EUSAGE, "transparency log base URL '%s' has no usable host name",
				key->base_url ? key->base_url : "");
	memcpy(out, s, (size_t)(end - s));
	out[end - s] = 0;
	return 0;
}

/* --------------------------------------------------------------- helpers */

/* A JSON integer field: a JSON integer or a decimal string (protobuf JSON
 * writes int64 as strings). Strict: no sign, no leading zero, no space. */
static int json_int64(const json_t *v, int64_t *out)
{
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);
		int neg = n > 0 && s[0] == '-';
		int64_t r = 0;

		if (n == (size_t)neg || n > 20)
			return -1;
		if (s[neg] == '0' && n > (size_t)neg + 1)
			return -1;
		for (size_t i = (size_t)neg; i < n; i++) {
			if (s[i] < '0' || s[i] > '9')
				return -1;
			if (r > (INT64_MAX - (s[i] - '0')) / 10)
				return -1;
			r = r * 10 + (s[i] - '0');
		}
		*out = neg ? -r : r;
		return 0;
	}
	return -1;
}

/* Optional int64 field NAME of OBJ: 0 absent (*out = 0), 1 present, -1
 * malformed (error recorded). */
static int get_int64(const json_t *obj, const char *name, const char *what,
		     int64_t *out, struct wb_err *e)
{
	const json_t *v = json_object_get(obj, name);

	*out = 0;
	if (!v)
		return 0;
	if (json_int64(v, out) < 0)
		return wb_error(e, WB_EUSAGE, "%s: '%s' is not an integer", what, name);
	return 1;
}

/* String V holding exactly LEN bytes, as hex (HEX) or base64. */
static int str_bytes(const json_t *v, int hex, unsigned char *out, size_t len)
{
	unsigned char *r;
	size_t n;

	if (!json_is_string(v))
		return -1;
	if (hex)
		return json_string_length(v) == 2 * len &&
			!digest_unhex(json_string_value(v), out, len) ? 0 : -1;
	r = b64_decode(json_string_value(v), json_string_length(v), &n);
	if (r && n == len)
		memcpy(out, r, len);
	free(r);
	return r && n == len ? 0 : -1;
}

/* Field NAME of OBJ holding exactly LEN bytes of base64 (or hex). */
static int get_fixed(const json_t *obj, const char *name, int hex, const char *what,
		     unsigned char *out, size_t len, struct wb_err *e)
{
	if (str_bytes(json_object_get(obj, name), hex, out, len) < 0)
		return wb_error(e, WB_EUSAGE, "%s: '%s' is not %zu bytes of %s", what, name, len,
				hex ? "hex" : "base64");
	return 0;
}

static const char *get_str(const json_t *obj, const char *name)
{
	const json_t *v = json_object_get(obj, name);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static void sha256(const void *data, size_t len, unsigned char out[TLOG_HASH_LEN])
{
	EVP_Digest(data, len, out, NULL, EVP_sha256(), NULL);
}

/* ----------------------------------------------------------------- entries */

void tlog_entry_release(struct tlog_entry *ent)
{
	if (!ent)
		return;
	free(ent->set);
	free(ent->proof.hashes);
	free(ent->proof.checkpoint);
	free(ent->body);
	memset(ent, 0, sizeof(*ent));
}

static int set_checkpoint(struct tlog_proof *p, const char *text, size_t len,
			  struct wb_err *e)
{
	if (len == 0)
		return wb_error(e, WB_EUSAGE, "inclusion proof: the checkpoint is empty");
	if (len > TLOG_CHECKPOINT_MAX)
		return wb_error(e, WB_EUSAGE, "inclusion proof: the checkpoint is larger than %d bytes",
				TLOG_CHECKPOINT_MAX);
	p->checkpoint = xstrndup(text, len);
	p->checkpoint_len = len;
	return 0;
}

/* The proof object of either form; HEX selects Rekor API hex hashes. */
static int parse_proof(const json_t *ip, int hex, struct tlog_proof *p,
		       struct wb_err *e)
{
	const char *what = "inclusion proof";
	const json_t *hashes = json_object_get(ip, "hashes"), *cp;
	int r;

	if (!json_is_object(ip))
		return wb_error(e, WB_EUSAGE, "%s is not an object", what);
	if ((r = get_int64(ip, "logIndex", what, &p->log_index, e)) < 0)
		return -1;
	if (p->log_index < 0)
		return wb_error(e, WB_EUSAGE, "%s: negative log index %" PRId64, what, p->log_index);
	if ((r = get_int64(ip, "treeSize", what, &p->tree_size, e)) < 0)
		return -1;
	if (!r || p->tree_size <= 0)
		return wb_error(e, WB_EUSAGE, "%s: tree size is missing or not positive", what);
	if (get_fixed(ip, "rootHash", hex, what, p->root_hash, TLOG_HASH_LEN, e) < 0)
		return -1;
	if (hashes && !json_is_array(hashes))
		return wb_error(e, WB_EUSAGE, "%s: 'hashes' is not an array", what);
	p->nhashes = json_array_size(hashes);
	if (p->nhashes > TLOG_PROOF_MAX)
		return wb_error(e, WB_EUSAGE, "%s: %zu hashes, more than %d", what, p->nhashes,
				TLOG_PROOF_MAX);
	p->hashes = xcalloc(p->nhashes ? p->nhashes : 1, TLOG_HASH_LEN);
	for (size_t i = 0; i < p->nhashes; i++)
		if (str_bytes(json_array_get(hashes, i), hex, p->hashes[i], TLOG_HASH_LEN) < 0)
			return wb_error(e, WB_EUSAGE, "%s: hash %zu is not %d bytes of %s", what, i,
					TLOG_HASH_LEN, hex ? "hex" : "base64");
	/* a proof without a checkpoint parses (old v0.1 bundles have them) but
	 * never verifies: tlog_entry_verify needs the signed tree head */
	cp = json_object_get(ip, "checkpoint");
	if (!hex && cp)
		cp = json_object_get(cp, "envelope");
	if (!cp)
		return 0;
	if (!json_is_string(cp))
		return wb_error(e, WB_EUSAGE, "%s: the checkpoint is not a string", what);
	return set_checkpoint(p, json_string_value(cp), json_string_length(cp), e);
}

static int finish_entry(struct tlog_entry *ent, struct wb_err *e)
{
	if (ent->log_index < 0)
		return wb_error(e, WB_EUSAGE, "transparency log entry: negative log index %" PRId64,
				ent->log_index);
	if (ent->integrated_time < 0)
		return wb_error(e, WB_EUSAGE, "transparency log entry: negative integrated time");
	ent->has_integrated_time = ent->integrated_time != 0;
	if (ent->body_len == 0 || ent->body_len > TLOG_BODY_MAX)
		return wb_error(e, WB_EUSAGE,
				"transparency log entry: the canonicalized body is empty or too large");
	return 0;
}

static int copy_kind(struct tlog_entry *ent, const char *kind, const char *version,
		     struct wb_err *e)
{
	if (!kind || !version || !*kind || !*version || strlen(kind) >= sizeof(ent->kind) ||
	    strlen(version) >= sizeof(ent->version))
		return wb_error(e, WB_EUSAGE, "transparency log entry: kind or version is missing or too long");
	strcpy(ent->kind, kind);
	strcpy(ent->version, version);
	return 0;
}

int tlog_entry_from_bundle(const json_t *obj, struct tlog_entry *ent,
			   struct wb_err *e)
{
	const char *what = "transparency log entry";
	const json_t *kv, *lid, *ip, *prom;
	int r;

	memset(ent, 0, sizeof(*ent));
	if (!json_is_object(obj)) {
		r = wb_error(e, WB_EUSAGE, "%s is not an object", what);
		goto out;
	}
	/* protobuf JSON leaves out zero values: no logIndex is index 0 */
	if ((r = get_int64(obj, "logIndex", what, &ent->log_index, e)) < 0)
		goto out;
	if (ent->log_index < 0) {
		r = wb_error(e, WB_EUSAGE, "%s: negative log index %" PRId64, what, ent->log_index);
		goto out;
	}
	lid = json_object_get(obj, "logId");
	if (!json_is_object(lid)) {
		r = wb_error(e, WB_EUSAGE, "%s: 'logId' is missing", what);
		goto out;
	}
	if ((r = get_fixed(lid, "keyId", 0, "transparency log entry logId", ent->log_id,
			   TLOG_HASH_LEN, e)) < 0)
		goto out;
	kv = json_object_get(obj, "kindVersion");
	if ((r = copy_kind(ent, get_str(kv, "kind"), get_str(kv, "version"), e)) < 0)
		goto out;
	if ((r = get_int64(obj, "integratedTime", what, &ent->integrated_time, e)) < 0)
		goto out;
	prom = json_object_get(obj, "inclusionPromise");
	if (prom) {
		if (!(ent->set = json_get_b64(prom, "signedEntryTimestamp", "inclusion promise",
					 &ent->set_len, e))) {
			r = -1;
			goto out;
		}
		if (ent->set_len == 0) {
			free(ent->set);
			ent->set = NULL;
		}
	}
	ip = json_object_get(obj, "inclusionProof");
	if (ip) {
		ent->has_proof = 1;
		if ((r = parse_proof(ip, 0, &ent->proof, e)) < 0)
			goto out;
	}
	if (!(ent->body = json_get_b64(obj, "canonicalizedBody", what, &ent->body_len, e))) {
		r = -1;
		goto out;
	}
	r = finish_entry(ent, e);
out:
	if (r < 0)
		tlog_entry_release(ent);
	return r < 0 ? -1 : 0;
}

int tlog_entry_from_rekor_api(const char *text, size_t len,
			      struct tlog_entry *ent, struct wb_err *e)
{
	const char *what = "rekor entry";
	json_error_t jerr;
	json_t *root, *obj, *ver, *body = NULL;
	int r = -1;

	memset(ent, 0, sizeof(*ent));
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return wb_error(e, WB_EUSAGE, "%s: %d:%d: %s", what, jerr.line, jerr.column, jerr.text);
	if (!json_is_object(root) || json_object_size(root) != 1) {
		wb_error(e, WB_EUSAGE, "%s: expected one object keyed by the entry uuid", what);
		goto out;
	}
	obj = json_object_iter_value(json_object_iter(root));
	if (!json_is_object(obj)) {
		wb_error(e, WB_EUSAGE, "%s: the entry is not an object", what);
		goto out;
	}
	if ((r = get_int64(obj, "logIndex", what, &ent->log_index, e)) <= 0) {
		if (r == 0)
			wb_error(e, WB_EUSAGE, "%s: 'logIndex' is missing", what);
		r = -1;
		goto out;
	}
	r = -1;
	if (get_fixed(obj, "logID", 1, what, ent->log_id, TLOG_HASH_LEN, e) < 0 ||
	    get_int64(obj, "integratedTime", what, &ent->integrated_time, e) < 0)
		goto out;
	if (!(ent->body = json_get_b64(obj, "body", what, &ent->body_len, e)))
		goto out;
	body = json_loadb((const char *)ent->body, ent->body_len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(body)) {
		wb_error(e, WB_EUSAGE, "%s: the body is not a JSON object", what);
		goto out;
	}
	if (copy_kind(ent, get_str(body, "kind"), get_str(body, "apiVersion"), e) < 0)
		goto out;
	ver = json_object_get(obj, "verification");
	if (ver) {
		const json_t *set = json_object_get(ver, "signedEntryTimestamp");
		const json_t *ip = json_object_get(ver, "inclusionProof");

		if (set && !(ent->set = json_get_b64(ver, "signedEntryTimestamp", "rekor entry verification",
						&ent->set_len, e)))
			goto out;
		if (ip) {
			ent->has_proof = 1;
			if (parse_proof(ip, 1, &ent->proof, e) < 0)
				goto out;
		}
	}
	r = finish_entry(ent, e);
out:
	json_decref(body);
	json_decref(root);
	if (r < 0)
		tlog_entry_release(ent);
	return r;
}

/* ------------------------------------------------------------ whole entry */

static int is_rekor_v2(const struct tlog_entry *ent)
{
	return !strcmp(ent->version, "0.0.2") &&
		(!strcmp(ent->kind, "hashedrekord") || !strcmp(ent->kind, "dsse"));
}

static int verify_proof(const struct tlog_entry *ent, const struct tlog_key *key,
			int v2, struct wb_err *e)
{
	const struct tlog_proof *p = &ent->proof;
	struct tlog_checkpoint cp;
	unsigned char leaf[TLOG_HASH_LEN];
	char origin[256];
	int r;

	if (v2 && p->log_index != ent->log_index)
		return wb_error(e, WB_EVERIFY,
				"inclusion proof: log index %" PRId64 " is not the entry's %" PRId64,
				p->log_index, ent->log_index);
	tlog_merkle_leaf_hash(ent->body, ent->body_len, leaf);
	if (tlog_merkle_verify_inclusion((uint64_t)p->log_index, (uint64_t)p->tree_size, leaf,
					 (const unsigned char (*)[TLOG_HASH_LEN])p->hashes,
					 p->nhashes, p->root_hash, e) < 0)
		return -1;
	if (!p->checkpoint)
		return wb_error(e, WB_EVERIFY, "inclusion proof: no checkpoint (signed tree head)");
	if (tlog_checkpoint_parse(p->checkpoint, p->checkpoint_len, &cp, e) < 0)
		return -1;
	r = 0;
	if (v2 && tlog_key_origin(key, origin, sizeof(origin), e) < 0)
		r = -1;
	else if (tlog_checkpoint_verify(&cp, key, v2 ? origin : NULL, e) < 0)
		r = -1;
	else if (!digest_equal(cp.root_hash, p->root_hash, TLOG_HASH_LEN))
		r = wb_error(e, WB_EVERIFY, "checkpoint: root hash is not the proof's");
	else if (cp.size != (uint64_t)p->tree_size)
		r = wb_error(e, WB_EVERIFY, "checkpoint: tree size %" PRIu64 " is not the proof's %" PRId64,
			     cp.size, p->tree_size);
	tlog_checkpoint_release(&cp);
	return r;
}

/* The checks of tlog_entry_verify; messages without the entry prefix. */
static int entry_check(const struct tlog_entry *ent, const struct tlog_key *keys,
		       size_t nkeys, unsigned flags, int64_t now,
		       struct tlog_result *res, struct wb_err *e)
{
	const struct tlog_key *key;
	struct tlog_body body;
	int v2 = is_rekor_v2(ent);
	char hex[2 * TLOG_HASH_LEN + 1];

	if (ent->log_index < 0)
		return wb_error(e, WB_EVERIFY, "negative log index");
	key = tlog_key_find(keys, nkeys, ent->log_id);
	if (!key) {
		digest_hex(ent->log_id, TLOG_HASH_LEN, hex);
		return wb_error(e, WB_EVERIFY, "unknown log %s (not in the trusted root)", hex);
	}
	/* the body must parse and name the kind and version of the entry */
	if (tlog_body_parse(ent, &body, e) < 0)
		return -1;
	tlog_body_release(&body);

	if (v2 && !ent->has_proof)
		return wb_error(e, WB_EVERIFY, "has no inclusion proof (a Rekor v2 entry needs one)");
	if (!ent->set && !ent->has_proof)
		return wb_error(e, WB_EVERIFY,
				"has neither an inclusion promise nor an inclusion proof");
	if ((flags & TLOG_REQUIRE_SET) && !ent->set)
		return wb_error(e, WB_EVERIFY, "has no inclusion promise (SET)");
	if ((flags & TLOG_REQUIRE_PROOF) && !ent->has_proof)
		return wb_error(e, WB_EVERIFY, "has no inclusion proof");
	if (v2 && ent->set)
		return wb_error(e, WB_EVERIFY, "a Rekor v2 entry carries no inclusion promise");

	if (ent->set) {
		if (!ent->has_integrated_time)
			return wb_error(e, WB_EVERIFY, "inclusion promise without an integrated time");
		if (tlog_set_verify(ent, key, e) < 0)
			return -1;
		if (ent->integrated_time > now)
			return wb_error(e, WB_EVERIFY, "integrated time %" PRId64 " is in the future",
					ent->integrated_time);
		if (!tlog_key_valid_at(key, ent->integrated_time))
			return wb_error(e, WB_EVERIFY,
					"the log key is not valid at integrated time %" PRId64,
					ent->integrated_time);
		res->time_proven = 1;
		res->integrated_time = ent->integrated_time;
	}
	if (ent->has_proof) {
		if (verify_proof(ent, key, v2, e) < 0)
			return -1;
		res->proof_verified = 1;
		res->tree_size = (uint64_t)ent->proof.tree_size;
	}
	res->key = key;
	res->log_index = ent->log_index;
	res->rekor_v2 = v2;
	return 0;
}

/*
 * @where where a Rekor transparency-log entry is checked (SET, RFC 6962
 *   inclusion proof, signed checkpoint, body against the bundle) --
 *   docs/sigstore.md "Transparency log and timestamps"
 */
int tlog_entry_verify(const struct tlog_entry *ent, const struct tlog_key *keys,
		      size_t nkeys, unsigned flags, int64_t now,
		      struct tlog_result *res, struct wb_err *e)
{
	memset(res, 0, sizeof(*res));
	if (entry_check(ent, keys, nkeys, flags, now, res, e) == 0)
		return 0;
	memset(res, 0, sizeof(*res));
	wb_error_prefix(e, "transparency log entry %" PRId64, ent->log_index);
	return -1;
}

/* ---------------------------------------------------------- bodies */

void tlog_body_release(struct tlog_body *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nsigs; i++) {
		free(b->sigs[i].sig);
		X509_free(b->sigs[i].verifier.cert);
		EVP_PKEY_free(b->sigs[i].verifier.pkey);
	}
	free(b->sigs);
	memset(b, 0, sizeof(*b));
}

static struct tlog_body_sig *add_sig(struct tlog_body *b)
{
	b->sigs = xrealloc(b->sigs, (b->nsigs + 1) * sizeof(*b->sigs));
	memset(&b->sigs[b->nsigs], 0, sizeof(b->sigs[0]));
	return &b->sigs[b->nsigs++];
}

/* A verifier from DER: a certificate when CERT, else an SPKI. */
static int verifier_der(const unsigned char *der, size_t len, int cert,
			struct tlog_verifier *v, struct wb_err *e)
{
	const unsigned char *p = der;

	if (cert) {
		v->cert = d2i_X509(NULL, &p, (long)len);
		if (!v->cert || p != der + len)
			return wb_error(e, WB_EUSAGE, "log entry body: the verifier certificate does not parse");
		v->pkey = X509_get_pubkey(v->cert);
	} else {
		v->pkey = d2i_PUBKEY(NULL, &p, (long)len);
		if (v->pkey && p != der + len)
			return wb_error(e, WB_EUSAGE, "log entry body: trailing bytes after the verifier key");
	}
	if (!v->pkey)
		return wb_error(e, WB_EUSAGE, "log entry body: the verifier key does not parse");
	return 0;
}

/* A verifier from one PEM block: CERTIFICATE or PUBLIC KEY. */
static int verifier_pem(const unsigned char *pem, size_t len, struct tlog_verifier *v,
			struct wb_err *e)
{
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	char *name = NULL, *header = NULL;
	unsigned char *der = NULL;
	long dlen = 0;
	int r;

	if (!bio || PEM_read_bio(bio, &name, &header, &der, &dlen) != 1) {
		BIO_free(bio);
		return wb_error(e, WB_EUSAGE, "log entry body: the verifier is not PEM");
	}
	if (!strcmp(name, "CERTIFICATE"))
		r = verifier_der(der, (size_t)dlen, 1, v, e);
	else if (!strcmp(name, "PUBLIC KEY"))
		r = verifier_der(der, (size_t)dlen, 0, v, e);
	else
		r = wb_error(e, WB_EUSAGE, "log entry body: unexpected PEM block '%s'", name);
	OPENSSL_free(name);
	OPENSSL_free(header);
	OPENSSL_free(der);
	BIO_free(bio);
	return r;
}

/* A base64 field holding PEM text. */
static int verifier_b64pem(const json_t *obj, const char *field, struct tlog_verifier *v,
			   struct wb_err *e)
{
	size_t n;
	unsigned char *pem = json_get_b64(obj, field, "log entry body", &n, e);
	int r;

	if (!pem)
		return -1;
	r = verifier_pem(pem, n, v, e);
	free(pem);
	return r;
}

/* The v2 Verifier message: {keyDetails, x509Certificate{rawBytes} |
 * publicKey{rawBytes}}. */
static int verifier_v2(const json_t *ver, struct tlog_verifier *v, struct wb_err *e)
{
	const json_t *c = json_object_get(ver, "x509Certificate");
	const json_t *k = json_object_get(ver, "publicKey");
	unsigned char *der;
	size_t n;
	int r;

	if (!json_is_object(ver) || (!c) == (!k))
		return wb_error(e, WB_EUSAGE, "log entry body: the verifier needs exactly one "
				"of a certificate or a public key");
	der = json_get_b64(c ? c : k, "rawBytes", "log entry body verifier", &n, e);
	if (!der)
		return -1;
	r = verifier_der(der, n, c != NULL, v, e);
	free(der);
	return r;
}

/* {"algorithm": "sha256", "value": hex} (Rekor v1 hashes). */
static int hash_v1(const json_t *h, const char *what, char alg[16], unsigned char *out,
		   size_t *outlen, struct wb_err *e)
{
	const char *a = get_str(h, "algorithm");
	size_t n;

	if (!a)
		return wb_error(e, WB_EUSAGE, "log entry body: %s has no algorithm", what);
	if (!strcmp(a, "sha256"))
		n = 32;
	else if (!strcmp(a, "sha384"))
		n = 48;
	else if (!strcmp(a, "sha512"))
		n = 64;
	else
		return wb_error(e, WB_EUSAGE, "log entry body: %s algorithm '%s' is not supported", what, a);
	if (get_fixed(h, "value", 1, what, out, n, e) < 0)
		return -1;
	if (alg)
		strcpy(alg, a);
	*outlen = n;
	return 0;
}

/* {"algorithm": "SHA2_256", "digest": b64} (Rekor v2 HashOutput). */
static int hash_v2(const json_t *h, const char *what, char alg[16], unsigned char *out,
		   size_t *outlen, struct wb_err *e)
{
	static const struct { const char *pb, *name; size_t len; } algs[] = {
		{ "SHA2_256", "sha256", 32 }, { "SHA2_384", "sha384", 48 },
		{ "SHA2_512", "sha512", 64 },
	};
	const char *a = get_str(h, "algorithm");

	for (size_t i = 0; a && i < ARRAY_SIZE(algs); i++) {
		if (strcmp(a, algs[i].pb))
			continue;
		if (get_fixed(h, "digest", 0, what, out, algs[i].len, e) < 0)
			return -1;
		strcpy(alg, algs[i].name);
		*outlen = algs[i].len;
		return 0;
	}
	return wb_error(e, WB_EUSAGE, "log entry body: %s algorithm '%s' is not supported", what,
			a ? a : "(none)");
}

static int body_hashedrekord_v1(const json_t *spec, struct tlog_body *b, struct wb_err *e)
{
	const json_t *sig = json_object_get(spec, "signature");
	struct tlog_body_sig *s;

	if (hash_v1(json_object_get(json_object_get(spec, "data"), "hash"), "data hash",
		    b->digest_alg, b->digest, &b->digest_len, e) < 0)
		return -1;
	s = add_sig(b);
	if (!(s->sig = json_get_b64(sig, "content", "log entry body signature", &s->sig_len, e)))
		return -1;
	return verifier_b64pem(json_object_get(sig, "publicKey"), "content", &s->verifier, e);
}

static int body_hashedrekord_v2(const json_t *spec, struct tlog_body *b, struct wb_err *e)
{
	const json_t *hr = json_object_get(spec, "hashedRekordV002");
	const json_t *sig = json_object_get(hr, "signature");
	struct tlog_body_sig *s;

	if (!json_is_object(hr))
		return wb_error(e, WB_EUSAGE, "log entry body: no hashedRekordV002 spec");
	if (hash_v2(json_object_get(hr, "data"), "data", b->digest_alg, b->digest,
		    &b->digest_len, e) < 0)
		return -1;
	s = add_sig(b);
	if (!(s->sig = json_get_b64(sig, "content", "log entry body signature", &s->sig_len, e)))
		return -1;
	return verifier_v2(json_object_get(sig, "verifier"), &s->verifier, e);
}

static int body_dsse_v1(const json_t *spec, struct tlog_body *b, struct wb_err *e)
{
	const json_t *sigs = json_object_get(spec, "signatures"), *one;
	char alg[16];
	size_t n, i;

	if (hash_v1(json_object_get(spec, "payloadHash"), "payload hash", alg, b->payload_hash,
		    &n, e) < 0)
		return -1;
	if (n != TLOG_HASH_LEN)
		return wb_error(e, WB_EUSAGE, "log entry body: the payload hash is not SHA-256");
	b->has_payload_hash = 1;
	if (json_object_get(spec, "envelopeHash")) {
		if (hash_v1(json_object_get(spec, "envelopeHash"), "envelope hash", alg,
			    b->envelope_hash, &n, e) < 0)
			return -1;
		if (n != TLOG_HASH_LEN)
			return wb_error(e, WB_EUSAGE, "log entry body: the envelope hash is not SHA-256");
		b->has_envelope_hash = 1;
	}
	if (!json_is_array(sigs) || !json_array_size(sigs))
		return wb_error(e, WB_EUSAGE, "log entry body: no signatures");
	json_array_foreach(sigs, i, one) {
		struct tlog_body_sig *s = add_sig(b);

		if (!(s->sig = json_get_b64(one, "signature", "log entry body signature", &s->sig_len, e)) ||
		    verifier_b64pem(one, "verifier", &s->verifier, e) < 0)
			return -1;
	}
	return 0;
}

static int body_dsse_v2(const json_t *spec, struct tlog_body *b, struct wb_err *e)
{
	const json_t *d = json_object_get(spec, "dsseV002");
	const json_t *sigs = json_object_get(d, "signatures"), *one;
	char alg[16];
	size_t n, i;

	if (!json_is_object(d))
		return wb_error(e, WB_EUSAGE, "log entry body: no dsseV002 spec");
	if (hash_v2(json_object_get(d, "payloadHash"), "payload hash", alg, b->payload_hash,
		    &n, e) < 0)
		return -1;
	if (n != TLOG_HASH_LEN)
		return wb_error(e, WB_EUSAGE, "log entry body: the payload hash is not SHA-256");
	b->has_payload_hash = 1;
	if (!json_is_array(sigs) || !json_array_size(sigs))
		return wb_error(e, WB_EUSAGE, "log entry body: no signatures");
	json_array_foreach(sigs, i, one) {
		struct tlog_body_sig *s = add_sig(b);

		if (!(s->sig = json_get_b64(one, "content", "log entry body signature", &s->sig_len, e)) ||
		    verifier_v2(json_object_get(one, "verifier"), &s->verifier, e) < 0)
			return -1;
	}
	return 0;
}

static int body_intoto_v2(const json_t *spec, struct tlog_body *b, struct wb_err *e)
{
	const json_t *content = json_object_get(spec, "content");
	const json_t *sigs = json_object_get(json_object_get(content, "envelope"), "signatures");
	const json_t *one;
	char alg[16];
	size_t n, i;

	if (hash_v1(json_object_get(content, "payloadHash"), "payload hash", alg,
		    b->payload_hash, &n, e) < 0)
		return -1;
	if (n != TLOG_HASH_LEN)
		return wb_error(e, WB_EUSAGE, "log entry body: the payload hash is not SHA-256");
	b->has_payload_hash = 1;
	if (json_object_get(content, "hash")) {
		if (hash_v1(json_object_get(content, "hash"), "envelope hash", alg,
			    b->envelope_hash, &n, e) < 0)
			return -1;
		b->has_envelope_hash = n == TLOG_HASH_LEN;
	}
	if (!json_is_array(sigs) || !json_array_size(sigs))
		return wb_error(e, WB_EUSAGE, "log entry body: no signatures");
	json_array_foreach(sigs, i, one) {
		struct tlog_body_sig *s = add_sig(b);
		unsigned char *inner;
		size_t ilen;

		/* intoto 0.0.2 stores the envelope's base64 signature text,
		 * itself base64-encoded */
		if (!(inner = json_get_b64(one, "sig", "log entry body signature", &ilen, e)))
			return -1;
		s->sig = b64_decode((const char *)inner, ilen, &s->sig_len);
		free(inner);
		if (!s->sig) {
			/* not the envelope's base64 text: a signature that
			 * matches nothing (as sigstore-go reads it) */
			s->sig = xmalloc(1);
			s->sig_len = 0;
		}
		if (verifier_b64pem(one, "publicKey", &s->verifier, e) < 0)
			return -1;
	}
	return 0;
}

int tlog_body_parse(const struct tlog_entry *ent, struct tlog_body *b,
		    struct wb_err *e)
{
	static const struct {
		const char *kind, *version;
		enum tlog_kind k;
		int (*parse)(const json_t *, struct tlog_body *, struct wb_err *);
	} kinds[] = {
		{ "hashedrekord", "0.0.1", TLOG_KIND_HASHEDREKORD, body_hashedrekord_v1 },
		{ "hashedrekord", "0.0.2", TLOG_KIND_HASHEDREKORD, body_hashedrekord_v2 },
		{ "dsse", "0.0.1", TLOG_KIND_DSSE, body_dsse_v1 },
		{ "dsse", "0.0.2", TLOG_KIND_DSSE, body_dsse_v2 },
		{ "intoto", "0.0.2", TLOG_KIND_INTOTO, body_intoto_v2 },
	};
	json_error_t jerr;
	json_t *root;
	const char *kind, *version;
	int r = -1;

	memset(b, 0, sizeof(*b));
	root = json_loadb((const char *)ent->body, ent->body_len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(root)) {
		json_decref(root);
		return wb_error(e, WB_EUSAGE, "log entry body: not a JSON object");
	}
	kind = get_str(root, "kind");
	version = get_str(root, "apiVersion");
	if (!kind || !version) {
		wb_error(e, WB_EUSAGE, "log entry body: no kind or apiVersion");
		goto out;
	}
	if (strcmp(kind, ent->kind) || strcmp(version, ent->version)) {
		wb_error(e, WB_EVERIFY, "log entry body is %s %s, the entry says %s %s",
			 kind, version, ent->kind, ent->version);
		goto out;
	}
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		if (strcmp(kind, kinds[i].kind) || strcmp(version, kinds[i].version))
			continue;
		b->kind = kinds[i].k;
		strcpy(b->version, version);
		if (!json_is_object(json_object_get(root, "spec")))
			wb_error(e, WB_EUSAGE, "log entry body: no spec");
		else
			r = kinds[i].parse(json_object_get(root, "spec"), b, e);
		goto out;
	}
	wb_error(e, WB_EUSAGE, "log entry body: kind %s %s is not supported", kind, version);
out:
	json_decref(root);
	if (r < 0)
		tlog_body_release(b);
	return r;
}

static int same_verifier(const struct tlog_verifier *v, const struct tlog_expect *x)
{
	if (x->cert) {
		unsigned char *a = NULL, *c = NULL;
		int na, nc, same;

		if (!v->cert)
			return 0;
		na = i2d_X509(x->cert, &a);
		nc = i2d_X509(v->cert, &c);
		same = na > 0 && na == nc && !memcmp(a, c, (size_t)na);
		OPENSSL_free(a);
		OPENSSL_free(c);
		return same;
	}
	return x->pkey && !v->cert && EVP_PKEY_eq(v->pkey, x->pkey) == 1;
}

/* PAE(type, payload) of DSSE v1, digested with MD. */
static void dsse_pae_digest(const struct tlog_expect *x, const EVP_MD *md, unsigned char *out)
{
	struct buf pae = BUF_INIT;

	buf_addf(&pae, "DSSEv1 %zu %s %zu ", strlen(x->payload_type), x->payload_type,
		 x->payload_len);
	buf_add(&pae, x->payload, x->payload_len);
	EVP_Digest(pae.ptr, pae.len, out, NULL, md, NULL);
	buf_release(&pae);
}

/* What the entry logs (digest or payload hash) against the bundle. */
static int match_content(const struct tlog_body *b, const struct tlog_expect *x,
			 struct wb_err *e)
{
	unsigned char d[EVP_MAX_MD_SIZE];

	if (b->kind == TLOG_KIND_HASHEDREKORD && x->payload_type) {
		const EVP_MD *md = EVP_get_digestbyname(b->digest_alg);

		/* Rekor v2 logs a DSSE envelope as a hashedrekord over its
		 * PAE; Rekor v1 has the dsse and intoto kinds for that */
		if (strcmp(b->version, "0.0.2") || !md)
			return wb_error(e, WB_EVERIFY, "a hashedrekord %s entry does not log a DSSE envelope",
					b->version);
		dsse_pae_digest(x, md, d);
		if ((size_t)EVP_MD_get_size(md) != b->digest_len || memcmp(d, b->digest, b->digest_len))
			return wb_error(e, WB_EVERIFY,
					"the transparency log entry's digest is not that of the DSSE envelope");
		return 0;
	}
	if (b->kind == TLOG_KIND_HASHEDREKORD) {
		char got[129], want[129];

		if (!x->digest_alg || strcmp(x->digest_alg, b->digest_alg))
			return wb_error(e, WB_EVERIFY,
					"the transparency log entry's digest algorithm %s is not the bundle's %s",
					b->digest_alg, x->digest_alg ? x->digest_alg : "(none)");
		if (x->digest_len == b->digest_len && !memcmp(x->digest, b->digest, b->digest_len))
			return 0;
		digest_hex(b->digest, b->digest_len, got);
		digest_hex(x->digest, x->digest_len < 64 ? x->digest_len : 64, want);
		return wb_error(e, WB_EVERIFY, "the transparency log entry's digest %s is not the artifact's %s",
				got, want);
	}
	/* dsse, intoto */
	if (!x->payload_type)
		return wb_error(e, WB_EVERIFY, "a %s entry does not log a message signature",
				b->kind == TLOG_KIND_DSSE ? "dsse" : "intoto");
	sha256(x->payload, x->payload_len, d);
	if (!b->has_payload_hash || memcmp(d, b->payload_hash, TLOG_HASH_LEN))
		return wb_error(e, WB_EVERIFY, "the transparency log entry's payload hash "
				"is not that of the envelope's payload");
	return 0;
}

/*
 * @where where a Rekor transparency-log entry is checked (SET, RFC 6962
 *   inclusion proof, signed checkpoint, body against the bundle) -- the
 *   canonicalized body against the bundle
 */
int tlog_body_match(const struct tlog_body *b, const struct tlog_expect *x,
		    struct wb_err *e)
{
	const struct tlog_body_sig *hit = NULL;

	if (match_content(b, x, e) < 0)
		return -1;
	for (size_t i = 0; i < b->nsigs && !hit; i++)
		if (b->sigs[i].sig_len && b->sigs[i].sig_len == x->signature_len &&
		    !memcmp(b->sigs[i].sig, x->signature, x->signature_len))
			hit = &b->sigs[i];
	if (!hit)
		return wb_error(e, WB_EVERIFY, "the transparency log entry does not hold the bundle's signature");
	if (!same_verifier(&hit->verifier, x))
		return wb_error(e, WB_EVERIFY, "the transparency log entry's %s is not the bundle's %s",
				hit->verifier.cert ? "certificate" : "public key",
				x->cert ? "certificate" : "public key");
	return 0;
}
