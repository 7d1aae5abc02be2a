/*
 * trusted_root.json -> struct sigstore_root (sigstore_root.h).
 *
 * Every key and certificate is decoded here, once: a root that names a key
 * OpenSSL cannot read, a window with no start, or a log id that is not 32
 * bytes is refused as a whole rather than half-used.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "lib/base64.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/json.h"
#include "trust/sigstore_root.h"

#define ROOT_MEDIA_TYPE "application/vnd.dev.sigstore.trustedroot+json;version=0.1"

static int two(const char *s, int *v)
{
	if (!isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]))
		return -1;
	*v = (s[0] - '0') * 10 + (s[1] - '0');
	return 0;
}

int sigstore_time_parse(const char *s, int round_up, int64_t *out)
{
	struct tm tm;
	int y1, y2, mo, d, h, mi, sec, frac = 0, off = 0, oh, om;
	size_t n;
	time_t t;

	if (!s || strlen(s) < 20 || two(s, &y1) || two(s + 2, &y2) ||
	    s[4] != '-' || two(s + 5, &mo) || s[7] != '-' || two(s + 8, &d) ||
	    (s[10] != 'T' && s[10] != 't') || two(s + 11, &h) || s[13] != ':' ||
	    two(s + 14, &mi) || s[16] != ':' || two(s + 17, &sec))
		return -1;
	s += 19;
	if (*s == '.') {
		s++;
		for (n = 0; isdigit((unsigned char)s[n]); n++)
			if (s[n] != '0')
				frac = 1;
		if (!n)
			return -1;
		s += n;
	}
	if (*s == 'Z' || *s == 'z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		if (two(s + 1, &oh) || s[3] != ':' || two(s + 4, &om) ||
		    oh > 23 || om > 59)
			return -1;
		off = (oh * 60 + om) * 60 * (*s == '+' ? 1 : -1);
		s += 6;
	} else {
		return -1;
	}
	if (*s || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
	    sec > 60)
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y1 * 100 + y2 - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	t = timegm(&tm);
	*out = (int64_t)t - off + (frac && round_up ? 1 : 0);
	return 0;
}

/* validFor {start, end}: start required, end optional (absent or null). */
static int root_window(const json_t *vf, const char *where, int64_t *from,
		       int64_t *to, struct wb_err *e)
{
	const json_t *start, *end;

	if (!json_is_object(vf))
		return wb_error(e, WB_EUSAGE, "%s: missing validFor", where);
	start = json_object_get(vf, "start");
	end = json_object_get(vf, "end");
	if (!start || json_is_null(start))
		return wb_error(e, WB_EUSAGE, "%s: validFor: missing start", where);
	if (!json_is_string(start) ||
	    sigstore_time_parse(json_string_value(start), 1, from) < 0)
		return wb_error(e, WB_EUSAGE, "%s: validFor: bad start", where);
	*to = INT64_MAX;
	if (end && !json_is_null(end) &&
	    (!json_is_string(end) ||
	     sigstore_time_parse(json_string_value(end), 0, to) < 0))
		return wb_error(e, WB_EUSAGE, "%s: validFor: bad end", where);
	if (*to < *from)
		return wb_error(e, WB_EUSAGE, "%s: validFor: end before start", where);
	return 0;
}

static STACK_OF(X509) *root_chain(const json_t *obj, const char *where,
				  struct wb_err *e)
{
	const json_t *certs = json_object_get(json_object_get(obj, "certChain"),
					      "certificates");
	STACK_OF(X509) *sk;
	size_t i;

	if (!json_is_array(certs) || !json_array_size(certs)) {
		wb_error(e, WB_EUSAGE, "%s: certChain.certificates is empty", where);
		return NULL;
	}
	sk = sk_X509_new_null();
	for (i = 0; i < json_array_size(certs); i++) {
		size_t len;
		unsigned char *der = json_get_b64(json_array_get(certs, i), "rawBytes",
						where, &len, e);
		const unsigned char *p = der;
		X509 *x = der ? d2i_X509(NULL, &p, (long)len) : NULL;

		if (der && (!x || p != der + len)) {
			X509_free(x);
			x = NULL;
			wb_error(e, WB_EUSAGE, "%s: certificate %zu: not a DER certificate",
				 where, i);
		}
		free(der);
		if (!x) {
			sk_X509_pop_free(sk, X509_free);
			return NULL;
		}
		sk_X509_push(sk, x);
	}
	return sk;
}

static char *root_strdup(const json_t *obj, const char *field)
{
	const json_t *v = json_object_get(obj, field);

	return json_is_string(v) ? xstrdup(json_string_value(v)) : NULL;
}

/* Whether K's log id is the SHA-256 of its key's DER SubjectPublicKeyInfo
 * (RFC 6962's log ID; Rekor v1's too). */
static int log_id_is_key(const struct tlog_key *k)
{
	unsigned char *spki = NULL, md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int len = i2d_PUBKEY(k->pkey, &spki), ok;

	ok = len > 0 && EVP_Digest(spki, (size_t)len, md, &mdlen, EVP_sha256(), NULL) &&
	     mdlen == TLOG_HASH_LEN && !memcmp(md, k->log_id, TLOG_HASH_LEN);
	OPENSSL_free(spki);
	return ok;
}

/* tlogs[] and ctlogs[]: {baseUrl, hashAlgorithm, publicKey{rawBytes,
 * keyDetails, validFor}, logId{keyId}} */
static int root_log(const json_t *obj, const char *where, struct tlog_key *k,
		    struct wb_err *e)
{
	const json_t *pk = json_object_get(obj, "publicKey");
	const json_t *details = json_object_get(pk, "keyDetails");
	unsigned char *der, *id;
	const unsigned char *p;
	size_t len, idlen;

	if (!json_is_object(obj) || !json_is_object(pk))
		return wb_error(e, WB_EUSAGE, "%s: missing publicKey", where);
	if (root_window(json_object_get(pk, "validFor"), where, &k->valid_from,
			&k->valid_to, e) < 0)
		return -1;
	der = json_get_b64(pk, "rawBytes", where, &len, e);
	if (!der)
		return -1;
	p = der;
	k->pkey = d2i_PUBKEY(NULL, &p, (long)len);
	if (!k->pkey && json_is_string(details) &&
	    !strncmp(json_string_value(details), "PKCS1_RSA", 9)) {
		/* PKCS1_RSA_*: a bare RSAPublicKey, not an SPKI */
		p = der;
		k->pkey = d2i_PublicKey(EVP_PKEY_RSA, NULL, &p, (long)len);
	}
	if (!k->pkey || p != der + len) {
		free(der);
		return wb_error(e, WB_EUSAGE, "%s: publicKey: not a DER public key", where);
	}
	free(der);
	id = json_get_b64(json_object_get(obj, "logId"), "keyId", where, &idlen, e);
	if (!id)
		return -1;
	if (idlen != TLOG_HASH_LEN) {
		free(id);
		return wb_error(e, WB_EUSAGE, "%s: logId.keyId: not 32 bytes", where);
	}
	memcpy(k->log_id, id, TLOG_HASH_LEN);
	free(id);
	if (EVP_PKEY_get_id(k->pkey) != EVP_PKEY_ED25519 && !log_id_is_key(k))
		/* a CT log is found by OpenSSL by its key's hash, its window by
		 * this id: the two must name the same log (Rekor v2's Ed25519
		 * logs use another id, matched through the checkpoint instead) */
		return wb_error(e, WB_EUSAGE, "%s: logId.keyId is not the SHA-256 of "
				"its publicKey", where);
	k->base_url = root_strdup(obj, "baseUrl");
	return 0;
}

static int root_logs(const json_t *root, const char *field,
		     struct tlog_key **out, size_t *nout, struct wb_err *e)
{
	const json_t *arr = json_object_get(root, field);
	size_t i;

	if (arr && !json_is_array(arr))
		return wb_error(e, WB_EUSAGE, "%s: not an array", field);
	*nout = json_array_size(arr);
	*out = xcalloc(*nout ? *nout : 1, sizeof(**out));
	for (i = 0; i < *nout; i++) {
		char where[64];

		snprintf(where, sizeof(where), "%s[%zu]", field, i);
		if (root_log(json_array_get(arr, i), where, &(*out)[i], e) < 0)
			return -1;
	}
	return 0;
}

/* certificateAuthorities[] and timestampAuthorities[]: {certChain,
 * validFor, uri} */
static int root_authority(const json_t *arr, const char *field, size_t i,
			  STACK_OF(X509) **chain, int64_t *from, int64_t *to,
			  char **uri, struct wb_err *e)
{
	const json_t *obj = json_array_get(arr, i);
	char where[64];

	snprintf(where, sizeof(where), "%s[%zu]", field, i);
	if (root_window(json_object_get(obj, "validFor"), where, from, to, e) < 0)
		return -1;
	*chain = root_chain(obj, where, e);
	if (!*chain)
		return -1;
	*uri = root_strdup(obj, "uri");
	return 0;
}

int sigstore_root_parse(const char *text, size_t len, struct sigstore_root *r,
			struct wb_err *e)
{
	json_error_t jerr;
	json_t *root;
	const json_t *arr, *mt;
	size_t i;
	int ret = -1;

	memset(r, 0, sizeof(*r));
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return wb_error(e, WB_EUSAGE, "line %d: %s", jerr.line, jerr.text);
	if (!json_is_object(root)) {
		wb_error(e, WB_EUSAGE, "not a JSON object");
		goto out;
	}
	mt = json_object_get(root, "mediaType");
	if (!json_is_string(mt) || strcmp(json_string_value(mt), ROOT_MEDIA_TYPE)) {
		wb_error(e, WB_EUSAGE, "mediaType: expected '%s'", ROOT_MEDIA_TYPE);
		goto out;
	}
	if (root_logs(root, "tlogs", &r->tlogs, &r->ntlogs, e) < 0 ||
	    root_logs(root, "ctlogs", &r->ctlogs, &r->nctlogs, e) < 0)
		goto out;

	arr = json_object_get(root, "certificateAuthorities");
	r->ncas = json_array_size(arr);
	r->cas = xcalloc(r->ncas ? r->ncas : 1, sizeof(*r->cas));
	for (i = 0; i < r->ncas; i++) {
		struct sigstore_ca *ca = &r->cas[i];

		if (root_authority(arr, "certificateAuthorities", i, &ca->chain,
				   &ca->valid_from, &ca->valid_to, &ca->uri, e) < 0)
			goto out;
	}
	arr = json_object_get(root, "timestampAuthorities");
	r->ntsas = json_array_size(arr);
	r->tsas = xcalloc(r->ntsas ? r->ntsas : 1, sizeof(*r->tsas));
	for (i = 0; i < r->ntsas; i++) {
		struct timestamp_authority *ta = &r->tsas[i];

		if (root_authority(arr, "timestampAuthorities", i, &ta->chain,
				   &ta->valid_from, &ta->valid_to, &ta->uri, e) < 0)
			goto out;
	}
	ret = 0;
out:
	json_decref(root);
	if (ret < 0)
		sigstore_root_release(r);
	return ret;
}

/*
 * @where `trusted_root.json` (Fulcio CAs, CT logs, Rekor logs, TSAs, validity
 *   windows)
 */
int sigstore_root_load(const char *path, struct sigstore_root *r,
		       struct wb_err *e)
{
	struct buf text = BUF_INIT;
	int ret;

	memset(r, 0, sizeof(*r));
	ret = fs_read_file(path, SIGSTORE_ROOT_MAX, WB_EUSAGE, &text, e);
	if (!ret) {
		ret = sigstore_root_parse(text.ptr, text.len, r, e);
		if (ret < 0)
			wb_error_prefix(e, "trusted root '%s'", path);
	}
	buf_release(&text);
	return ret;
}

struct sigstore_roots_entry {
	unsigned char sha256[32];
	struct sigstore_root root;
};

/*
 * @where the trusted root parsed once per run (each distinct file by its
 *   SHA-256) -- shared by every check that names it; the count is a debug
 *   line (`-v`)
 */
int sigstore_roots_get(struct sigstore_roots *rs, const char *path,
		       const struct sigstore_root **out, struct wb_err *e)
{
	struct sigstore_roots_entry *x;
	struct buf text = BUF_INIT;
	unsigned char md[32];
	int ret = -1;

	if (fs_read_file(path, SIGSTORE_ROOT_MAX, WB_EUSAGE, &text, e) < 0)
		goto out;
	EVP_Digest(text.ptr ? text.ptr : "", text.len, md, NULL, EVP_sha256(), NULL);
	for (size_t i = 0; i < rs->nr; i++)
		if (!memcmp(rs->v[i]->sha256, md, sizeof(md))) {
			*out = &rs->v[i]->root;
			rs->used++;
			ret = 0;
			goto out;
		}
	x = xcalloc(1, sizeof(*x));
	if (sigstore_root_parse(text.ptr, text.len, &x->root, e) < 0) {
		wb_error_prefix(e, "trusted root '%s'", path);
		sigstore_root_release(&x->root);
		free(x);
		goto out;
	}
	memcpy(x->sha256, md, sizeof(md));
	rs->v = xrealloc(rs->v, (rs->nr + 1) * sizeof(*rs->v));
	rs->v[rs->nr++] = x;
	rs->parsed++;
	rs->used++;
	*out = &x->root;
	ret = 0;
out:
	buf_release(&text);
	return ret;
}

void sigstore_roots_release(struct sigstore_roots *rs)
{
	for (size_t i = 0; i < rs->nr; i++) {
		sigstore_root_release(&rs->v[i]->root);
		free(rs->v[i]);
	}
	free(rs->v);
	rs->v = NULL;
	rs->nr = 0;
}

void sigstore_root_release(struct sigstore_root *r)
{
	size_t i;

	for (i = 0; r->cas && i < r->ncas; i++) {
		sk_X509_pop_free(r->cas[i].chain, X509_free);
		free(r->cas[i].uri);
	}
	for (i = 0; r->ctlogs && i < r->nctlogs; i++)
		tlog_key_release(&r->ctlogs[i]);
	for (i = 0; r->tlogs && i < r->ntlogs; i++)
		tlog_key_release(&r->tlogs[i]);
	for (i = 0; r->tsas && i < r->ntsas; i++)
		timestamp_authority_release(&r->tsas[i]);
	free(r->cas);
	free(r->ctlogs);
	free(r->tlogs);
	free(r->tsas);
	memset(r, 0, sizeof(*r));
}
