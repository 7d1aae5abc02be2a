/*
 * Fulcio certificates (sigstore_cert.h): chain at a time, EKU, SCTs,
 * identity.
 *
 * @where Fulcio certificates: chain at the signing time, code-signing EKU,
 *   embedded SCTs, SAN and OIDC issuer
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/ct.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "lib/base64.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "trust/digest.h"
#include "trust/sigstore_cert.h"

static void cert_time_str(int64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (gmtime_r(&tt, &tm))
		strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
	else
		snprintf(out, 32, "%lld", (long long)t);
}

/* Try one CA: its last certificate is the anchor, the others untrusted. */
static int cert_chain_one(X509 *leaf, const struct sigstore_ca *ca, int64_t t,
			  X509 **issuer, const char **why)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	STACK_OF(X509) *untrusted = sk_X509_new_null();
	int n = sk_X509_num(ca->chain), i, ok = 0;

	if (!store || !ctx || !untrusted)
		goto out;
	if (!X509_STORE_add_cert(store, sk_X509_value(ca->chain, n - 1)))
		goto out;
	for (i = 0; i < n - 1; i++)
		sk_X509_push(untrusted, sk_X509_value(ca->chain, i));
	if (!X509_STORE_CTX_init(ctx, store, leaf, untrusted))
		goto out;
	/* the root pins its CA: it need not be self-signed */
	X509_STORE_CTX_set_flags(ctx, X509_V_FLAG_PARTIAL_CHAIN |
				 X509_V_FLAG_USE_CHECK_TIME);
	X509_STORE_CTX_set_time(ctx, 0, (time_t)t);
	if (X509_verify_cert(ctx) == 1) {
		STACK_OF(X509) *chain = X509_STORE_CTX_get0_chain(ctx);

		if (sk_X509_num(chain) >= 2) {
			*issuer = sk_X509_value(chain, 1);
			X509_up_ref(*issuer);
			ok = 1;
		} else {
			*why = "the leaf is itself a trust anchor";
		}
	} else {
		*why = X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
	}
out:
	sk_X509_free(untrusted);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return ok;
}

int sigstore_cert_verify_chain(X509 *leaf, const struct sigstore_root *root,
			       int64_t t, X509 **issuer, struct wb_err *e)
{
	const char *why = "no certificate authority of the trusted root is valid then";
	char when[32];
	size_t i;
	uint32_t xku;

	*issuer = NULL;
	cert_time_str(t, when);
	if (X509_check_ca(leaf))
		return wb_error(e, WB_EVERIFY,
				"signing certificate is a CA certificate");
	xku = X509_get_extended_key_usage(leaf);
	if (!(X509_get_extension_flags(leaf) & EXFLAG_XKUSAGE) ||
	    !(xku & XKU_CODE_SIGN))
		return wb_error(e, WB_EVERIFY,
				"signing certificate lacks the code-signing extended key usage");
	for (i = 0; i < root->ncas; i++) {
		const struct sigstore_ca *ca = &root->cas[i];

		if (t < ca->valid_from || t > ca->valid_to)
			continue;
		if (cert_chain_one(leaf, ca, t, issuer, &why))
			return 0;
	}
	return wb_error(e, WB_EVERIFY,
			"signing certificate does not chain to the trusted root at %s: %s",
			when, why);
}

/* OpenSSL keeps its CT log list private; CTLOG_STORE_load_file reads the
 * "enabled_logs = ..." config format, so the root's keys are written to an
 * anonymous memory file and loaded from there. */
static CTLOG_STORE *cert_ctlog_store(const struct sigstore_root *root,
				     struct wb_err *e)
{
	struct buf conf = BUF_INIT;
	CTLOG_STORE *store = NULL;
	char path[64];
	size_t i;
	int fd;

	buf_adds(&conf, "enabled_logs = ");
	for (i = 0; i < root->nctlogs; i++)
		buf_addf(&conf, "%slog%zu", i ? "," : "", i);
	buf_addc(&conf, '\n');
	for (i = 0; i < root->nctlogs; i++) {
		unsigned char *der = NULL;
		int len = i2d_PUBKEY(root->ctlogs[i].pkey, &der);
		unsigned char *b64;

		if (len <= 0) {
			wb_error(e, WB_EIO, "ctlogs[%zu]: cannot encode key", i);
			goto out;
		}
		b64 = xmalloc((size_t)len / 3 * 4 + 8);
		EVP_EncodeBlock(b64, der, len);
		OPENSSL_free(der);
		buf_addf(&conf, "[log%zu]\ndescription = ctlogs[%zu]\nkey = %s\n",
			 i, i, b64);
		free(b64);
	}
	fd = memfd_create("winbuild-ctlogs", MFD_CLOEXEC);
	if (fd < 0 || fs_write_all(fd, conf.ptr, conf.len) < 0) {
		if (fd >= 0)
			close(fd);
		wb_error(e, WB_EIO, "cannot build the CT log list");
		goto out;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	store = CTLOG_STORE_new();
	if (!store || CTLOG_STORE_load_file(store, path) != 1) {
		CTLOG_STORE_free(store);
		store = NULL;
		wb_error(e, WB_EIO, "cannot load the CT log list of the trusted root");
	}
	close(fd);
out:
	buf_release(&conf);
	return store;
}

int sigstore_cert_verify_sct(X509 *leaf, X509 *issuer,
			     const struct sigstore_root *root, int64_t now,
			     struct wb_err *e)
{
	STACK_OF(SCT) *scts;
	CTLOG_STORE *store = NULL;
	CT_POLICY_EVAL_CTX *ctx = NULL;
	int i, nvalid = 0, nunknown = 0, ninvalid = 0, noutside = 0, ret = -1;

	scts = X509_get_ext_d2i(leaf, NID_ct_precert_scts, NULL, NULL);
	if (!scts || !sk_SCT_num(scts)) {
		SCT_LIST_free(scts);
		return wb_error(e, WB_EVERIFY,
				"signing certificate has no embedded SCT");
	}
	if (!root->nctlogs) {
		ret = wb_error(e, WB_EVERIFY, "the trusted root has no CT log");
		goto out;
	}
	store = cert_ctlog_store(root, e);
	if (!store)
		goto out;
	ctx = CT_POLICY_EVAL_CTX_new();
	if (!ctx || !CT_POLICY_EVAL_CTX_set1_cert(ctx, leaf) ||
	    !CT_POLICY_EVAL_CTX_set1_issuer(ctx, issuer)) {
		ret = wb_error(e, WB_EIO, "cannot set up SCT validation");
		goto out;
	}
	CT_POLICY_EVAL_CTX_set_shared_CTLOG_STORE(ctx, store);
	CT_POLICY_EVAL_CTX_set_time(ctx, (uint64_t)now * 1000 + 999);
	/* < 0 is an internal error; 0 means some SCT did not validate, which
	 * is fine as long as one from a known log did */
	if (SCT_LIST_validate(scts, ctx) < 0) {
		ret = wb_error(e, WB_EVERIFY, "SCT validation could not run");
		goto out;
	}
	for (i = 0; i < sk_SCT_num(scts); i++) {
		SCT *sct = sk_SCT_value(scts, i);
		unsigned char *id = NULL;
		size_t idlen = SCT_get0_log_id(sct, &id), k;
		int64_t ts = (int64_t)(SCT_get_timestamp(sct) / 1000);
		int inside = 0;

		switch (SCT_get_validation_status(sct)) {
		case SCT_VALIDATION_STATUS_VALID:
			for (k = 0; k < root->nctlogs; k++)
				if (idlen == TLOG_HASH_LEN &&
				    !memcmp(root->ctlogs[k].log_id, id, idlen) &&
				    tlog_key_valid_at(&root->ctlogs[k], ts))
					inside = 1;
			if (inside)
				nvalid++;
			else
				noutside++;
			break;
		case SCT_VALIDATION_STATUS_UNKNOWN_LOG:
			nunknown++;
			break;
		default:
			ninvalid++;
			break;
		}
	}
	if (nvalid)
		ret = 0;
	else
		ret = wb_error(e, WB_EVERIFY,
			       "no valid SCT from a CT log of the trusted root "
			       "(%d from unknown logs, %d invalid, %d outside the log's validity)",
			       nunknown, ninvalid, noutside);
out:
	CT_POLICY_EVAL_CTX_free(ctx);
	CTLOG_STORE_free(store);
	SCT_LIST_free(scts);
	return ret;
}

static char *cert_ext_string(X509 *leaf, const char *oid, int der_utf8)
{
	ASN1_OBJECT *obj = OBJ_txt2obj(oid, 1);
	int idx = obj ? X509_get_ext_by_OBJ(leaf, obj, -1) : -1;
	ASN1_OCTET_STRING *data;
	char *out = NULL;

	ASN1_OBJECT_free(obj);
	if (idx < 0)
		return NULL;
	data = X509_EXTENSION_get_data(X509_get_ext(leaf, idx));
	if (der_utf8) {
		const unsigned char *p = ASN1_STRING_get0_data(data);
		ASN1_UTF8STRING *s = d2i_ASN1_UTF8STRING(NULL, &p,
							 ASN1_STRING_length(data));

		if (s && p == ASN1_STRING_get0_data(data) + ASN1_STRING_length(data) &&
		    !memchr(ASN1_STRING_get0_data(s), 0, (size_t)ASN1_STRING_length(s)))
			out = xstrndup((const char *)ASN1_STRING_get0_data(s),
				       (size_t)ASN1_STRING_length(s));
		ASN1_UTF8STRING_free(s);
	} else if (!memchr(ASN1_STRING_get0_data(data), 0,
			   (size_t)ASN1_STRING_length(data))) {
		out = xstrndup((const char *)ASN1_STRING_get0_data(data),
			       (size_t)ASN1_STRING_length(data));
	}
	return out;
}

int sigstore_cert_identity(X509 *leaf, char ***sans, char **issuer,
			   struct wb_err *e)
{
	GENERAL_NAMES *gens = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
	int i, n = gens ? sk_GENERAL_NAME_num(gens) : 0;
	size_t nr = 0;

	(void)e;
	*sans = xcalloc((size_t)n + 1, sizeof(**sans));
	for (i = 0; i < n; i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		const ASN1_IA5STRING *s;

		if (g->type == GEN_EMAIL)
			s = g->d.rfc822Name;
		else if (g->type == GEN_URI)
			s = g->d.uniformResourceIdentifier;
		else
			continue;
		if (memchr(ASN1_STRING_get0_data(s), 0, (size_t)ASN1_STRING_length(s)))
			continue;
		(*sans)[nr++] = xstrndup((const char *)ASN1_STRING_get0_data(s),
					 (size_t)ASN1_STRING_length(s));
	}
	GENERAL_NAMES_free(gens);
	*issuer = cert_ext_string(leaf, SIGSTORE_OID_ISSUER_V2, 1);
	if (!*issuer)
		*issuer = cert_ext_string(leaf, SIGSTORE_OID_ISSUER_V1, 0);
	return 0;
}

void sigstore_strv_free(char **v)
{
	size_t i;

	for (i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

X509 *sigstore_cert_read(const char *text, size_t len, struct wb_err *e)
{
	X509 *x = NULL;
	BIO *bio;
	const unsigned char *p;
	unsigned char *dec = NULL;
	size_t declen, start = 0, end = len;

	if (len > 10 && memmem(text, len, "-----BEGIN", 10)) {
		bio = BIO_new_mem_buf(text, (int)len);
		x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
		BIO_free(bio);
		if (!x)
			wb_error(e, WB_EUSAGE, "not a PEM certificate");
		return x;
	}
	/* cosign writes base64 of the PEM; DER is accepted too */
	while (start < end && strchr(" \t\r\n", text[start]))
		start++;
	while (end > start && strchr(" \t\r\n", text[end - 1]))
		end--;
	dec = b64_decode(text + start, end - start, &declen);
	if (dec && declen > 10 && memmem(dec, declen, "-----BEGIN", 10)) {
		x = sigstore_cert_read((const char *)dec, declen, e);
		free(dec);
		return x;
	}
	free(dec);
	p = (const unsigned char *)text;
	x = d2i_X509(NULL, &p, (long)len);
	if (x && p != (const unsigned char *)text + len) {
		X509_free(x);
		x = NULL;
	}
	if (!x)
		wb_error(e, WB_EUSAGE, "not a certificate (PEM, base64 PEM or DER)");
	return x;
}

void sigstore_cert_fingerprint(X509 *x, char out[65])
{
	unsigned char md[32];
	unsigned int n = sizeof(md);

	X509_digest(x, EVP_sha256(), md, &n);
	digest_hex(md, 32, out);
}
