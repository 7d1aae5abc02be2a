#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/buf.h"
#include "trust/checksum.h"
#include "trust/minisign.h"
#include "trust/verify.h"

int verify_url_allowed(const struct plan_policy *policy, const char *url)
{
	if (policy && !policy->allow_http && !strncasecmp(url, "http://", 7))
		return 0;
	return 1;
}

int verify_plan(const struct plan_artifact *art, const struct plan_policy *policy,
		const char *lock_sha256, int accept_new, struct verify_needs *needs,
		struct wb_err *e)
{
	const struct plan_verify *v = &art->verify;
	int forbid = policy && policy->forbid_checksum_urls;
	unsigned m = 0;

	memset(needs, 0, sizeof(*needs));
	if (lock_sha256 && v->sha256 && strcasecmp(lock_sha256, v->sha256))
		return wb_error(e, WB_EVERIFY,
				"artifact '%s': the lock file pins sha256 %s, but the recipe "
				"pins sha256 %s; a recipe pin always holds (run 'winbuild lock' "
				"to pin what the recipe says)", art->name, lock_sha256, v->sha256);
	if (v->needs_pin) {
		/* Only a lock pin verifies it; other methods still apply. */
		if (lock_sha256)
			m |= VERIFY_LOCK_PIN;
		else if (accept_new)
			m |= VERIFY_ACCEPTED_NEW;
		else
			return wb_error(e, WB_EUSAGE,
					"artifact '%s' cannot be verified: %s; pin it with "
					"'winbuild lock --accept-new' and review the lock",
					art->name, v->needs_pin);
	} else if (lock_sha256) {
		m |= VERIFY_LOCK_PIN;
	}
	if (v->sha256)
		m |= VERIFY_PINNED_SHA256;
	if (v->sha512)
		m |= VERIFY_PINNED_SHA512;
	if (!forbid && v->sha256_urls.nr)
		m |= VERIFY_CHECKSUM_SHA256;
	if (!forbid && v->sha512_urls.nr)
		m |= VERIFY_CHECKSUM_SHA512;
	if (v->nkeys)
		m |= VERIFY_MINISIGN;

	if (policy && policy->require_signature && !(m & VERIFY_MINISIGN))
		return wb_error(e, WB_EVERIFY,
				"artifact '%s' has no minisign signature from a pinned key, "
				"and policy requires one (policy.require: signature)",
				art->name);
	if (!m) {
		if (forbid && (v->sha256_urls.nr || v->sha512_urls.nr))
			return wb_error(e, WB_EVERIFY,
					"artifact '%s' is verified only by a checksum file, "
					"and policy forbids checksum files (policy.checksum_urls: forbid)",
					art->name);
		return wb_error(e, WB_EUSAGE, "artifact '%s' has no verification method",
				art->name);
	}
	needs->methods = m;
	/* SHA-512 always: the SBOM records it, and the download's one pass is
	 * the only read of the bytes that need not be repeated for it */
	needs->digest_algs = DIGEST_SHA256 | DIGEST_SHA512;
	if (m & VERIFY_MINISIGN)
		needs->digest_algs |= DIGEST_BLAKE2B512;
	return 0;
}

static int compare(const struct verify_input *in, const char *what,
		   const unsigned char *expect, const unsigned char *actual,
		   size_t len, struct wb_err *e)
{
	char eh[129], ah[129];

	if (digest_equal(expect, actual, len))
		return 0;
	digest_hex(expect, len, eh);
	digest_hex(actual, len, ah);
	return wb_error(e, WB_EVERIFY,
			"artifact '%s' from '%s' did not verify: %s mismatch\n"
			"  expected %s\n  actual   %s",
			in->art->name, in->url, what, eh, ah);
}

static int check_checksum_file(const struct verify_input *in, enum digest_alg alg,
			       const char *text, size_t len, const char *url,
			       struct wb_err *e)
{
	unsigned char want[64];
	size_t n = alg == DIGEST_SHA512 ? 64 : 32;
	const unsigned char *actual = alg == DIGEST_SHA512 ? in->dr->sha512 : in->dr->sha256;
	char *what;
	int ret;

	if (!text)
		return wb_error(e, WB_EUSAGE, "artifact '%s': checksum file was not fetched",
				in->art->name);
	if (checksum_parse(text, len, in->art->filename, alg, want, e) < 0) {
		wb_error_prefix(e, "artifact '%s': checksum file '%s'", in->art->name, url);
		return -1;
	}
	what = xasprintf("%s (from checksum file '%s')",
			 alg == DIGEST_SHA512 ? "sha512" : "sha256", url);
	ret = compare(in, what, want, actual, n, e);
	free(what);
	return ret;
}

/* One signature requirement: the signature TEXT (fetched from URL) must
 * verify under one of KEYS (and only those). WHICH names it in messages. */
static int check_signature(const struct verify_input *in, const struct plan_key *pkeys,
			   size_t nkeys, const char *text, size_t len, const char *url,
			   const char *which, struct verify_sig *out, struct wb_err *e)
{
	struct minisign_pubkey *keys;
	struct minisign_sig sig;
	struct minisign_result res;
	int ret;

	if (!text)
		return wb_error(e, WB_EUSAGE, "artifact '%s': %ssignature was not fetched",
				in->art->name, which);
	memset(&sig, 0, sizeof(sig));
	memset(&res, 0, sizeof(res));
	if (minisign_sig_parse(text, len, &sig, e) < 0) {
		wb_error_prefix(e, "artifact '%s': %ssignature '%s'", in->art->name,
				which, url);
		return -1;
	}
	keys = xcalloc(nkeys ? nkeys : 1, sizeof(*keys));
	for (size_t i = 0; i < nkeys; i++)
		keys[i] = pkeys[i].pk;
	ret = minisign_verify(&sig, keys, nkeys, in->dr->blake2b512, in->data_path,
			      in->art->filename, &res, e);
	if (ret < 0) {
		wb_error_prefix(e, "artifact '%s' from '%s': %ssignature '%s'",
				in->art->name, in->url, which, url);
	} else {
		memcpy(out->keyid_hex, res.keyid_hex, sizeof(out->keyid_hex));
		out->trusted_comment = xstrdup(res.trusted_comment ? res.trusted_comment : "");
		out->sig_url = xstrdup(url);
		out->sig_text = xstrndup(text, len);
	}
	minisign_result_release(&res);
	minisign_sig_release(&sig);
	free(keys);
	return ret;
}

const char *verify_pinned_sha256(const struct plan_artifact *art, const char *lock_sha256)
{
	return art->verify.sha256 ? art->verify.sha256 : lock_sha256;
}

static int pin_holds(const struct plan_artifact *art, const char *where, const char *what,
		     const char *hex, const unsigned char *actual, size_t len,
		     struct wb_err *e)
{
	unsigned char want[64];
	char ah[129];

	if (digest_unhex(hex, want, len) < 0)
		return wb_error(e, WB_EUSAGE, "artifact '%s': %s '%s' is not a valid digest",
				art->name, what, hex);
	if (!actual)
		return wb_error(e, WB_EIO, "artifact '%s': %s was not computed", art->name,
				len == 64 ? "sha512" : "sha256");
	if (digest_equal(want, actual, len))
		return 0;
	digest_hex(actual, len, ah);
	return wb_error(e, WB_EVERIFY,
			"artifact '%s' from '%s' did not verify: %s mismatch\n"
			"  expected %s\n  actual   %s", art->name, where, what, hex, ah);
}

int verify_pins(const struct plan_artifact *art, const char *lock_sha256,
		const char *where, const unsigned char sha256[32],
		const unsigned char *sha512, struct wb_err *e)
{
	const struct plan_verify *v = &art->verify;

	if (lock_sha256 && pin_holds(art, where, "sha256 (pinned in the lock file)",
				     lock_sha256, sha256, 32, e) < 0)
		return -1;
	if (v->sha256 && pin_holds(art, where, "sha256 (pinned in the recipe)", v->sha256,
				   sha256, 32, e) < 0)
		return -1;
	if (v->sha512 && pin_holds(art, where, "sha512 (pinned in the recipe)", v->sha512,
				   sha512, 64, e) < 0)
		return -1;
	return 0;
}

/* The artifact's own signature requirement, then each further one
 * (art->verify.sigreqs): ANDed, each by its own signature and keys. */
static int check_signatures(const struct verify_input *in, struct verify_evidence *ev,
			    struct wb_err *e)
{
	const struct plan_verify *v = &in->art->verify;
	struct verify_sig own;

	memset(&own, 0, sizeof(own));
	if (check_signature(in, v->keys, v->nkeys, in->sig_file, in->sig_file_len,
			    in->sig_file_url, "", &own, e) < 0)
		return -1;
	memcpy(ev->keyid_hex, own.keyid_hex, sizeof(ev->keyid_hex));
	ev->trusted_comment = own.trusted_comment;
	ev->sig_url = own.sig_url;
	ev->sig_text = own.sig_text;
	if (!v->nsigreqs)
		return 0;
	ev->sigreqs = xcalloc(v->nsigreqs, sizeof(*ev->sigreqs));
	for (size_t i = 0; i < v->nsigreqs; i++) {
		const struct plan_sigreq *q = &v->sigreqs[i];
		char which[512], where[400];

		wb_origin_format(&q->origin, where, sizeof(where));
		snprintf(which, sizeof(which), "signature required by %s: ", where);
		if (!in->sigreq_files || !in->sigreq_file_urls || !in->sigreq_file_lens)
			return wb_error(e, WB_EUSAGE, "artifact '%s': %ssignature was not fetched",
					in->art->name, which);
		if (check_signature(in, q->keys, q->nkeys, in->sigreq_files[i],
				    in->sigreq_file_lens[i], in->sigreq_file_urls[i],
				    which, &ev->sigreqs[i], e) < 0)
			return -1;
		ev->nsigreqs = i + 1;
	}
	return 0;
}

int verify_artifact(const struct verify_input *in, struct verify_evidence *ev,
		    struct wb_err *e)
{
	unsigned m = in->needs->methods;
	int ret = 0;

	memset(ev, 0, sizeof(*ev));
	if (!verify_url_allowed(in->policy, in->url))
		return wb_error(e, WB_EVERIFY,
				"artifact '%s': '%s' is plain http, and policy forbids it "
				"(policy.allow_http: false)", in->art->name, in->url);
	if ((m & (VERIFY_PINNED_SHA512 | VERIFY_CHECKSUM_SHA512)) &&
	    !(in->dr->algs & DIGEST_SHA512))
		return wb_error(e, WB_EIO, "artifact '%s': sha512 was not computed",
				in->art->name);
	if ((m & VERIFY_MINISIGN) && !(in->dr->algs & DIGEST_BLAKE2B512))
		return wb_error(e, WB_EIO, "artifact '%s': blake2b was not computed",
				in->art->name);

	/* the pins, every one of them, whatever else verifies the bytes */
	ret = verify_pins(in->art, (m & VERIFY_LOCK_PIN) ? in->lock_sha256 : NULL, in->url,
			  in->dr->sha256,
			  (in->dr->algs & DIGEST_SHA512) ? in->dr->sha512 : NULL, e);
	if (!ret && (m & VERIFY_CHECKSUM_SHA256))
		ret = check_checksum_file(in, DIGEST_SHA256, in->sha256_file,
					  in->sha256_file_len, in->sha256_file_url, e);
	if (!ret && (m & VERIFY_CHECKSUM_SHA512))
		ret = check_checksum_file(in, DIGEST_SHA512, in->sha512_file,
					  in->sha512_file_len, in->sha512_file_url, e);
	if (!ret && (m & VERIFY_MINISIGN))
		ret = check_signatures(in, ev, e);
	if (ret) {
		verify_evidence_release(ev);
		return -1;
	}
	ev->methods = m;
	if (m & VERIFY_CHECKSUM_SHA256)
		ev->checksum_url = xstrdup(in->sha256_file_url);
	else if (m & VERIFY_CHECKSUM_SHA512)
		ev->checksum_url = xstrdup(in->sha512_file_url);
	return 0;
}

void verify_sigreqs_release(struct verify_evidence *ev)
{
	for (size_t i = 0; i < ev->nsigreqs; i++) {
		free(ev->sigreqs[i].trusted_comment);
		free(ev->sigreqs[i].sig_url);
		free(ev->sigreqs[i].sig_text);
	}
	free(ev->sigreqs);
	ev->sigreqs = NULL;
	ev->nsigreqs = 0;
}

void verify_evidence_release(struct verify_evidence *ev)
{
	verify_sigreqs_release(ev);
	free(ev->trusted_comment);
	free(ev->sig_url);
	free(ev->sig_text);
	free(ev->checksum_url);
	memset(ev, 0, sizeof(*ev));
}

char *verify_evidence_describe(const struct verify_evidence *ev)
{
	struct buf b = BUF_INIT;
	const char *sep = "";

	if (ev->methods & VERIFY_MINISIGN) {
		buf_addf(&b, "minisign key %s, trusted comment '%s'", ev->keyid_hex,
			 ev->trusted_comment ? ev->trusted_comment : "");
		sep = "; ";
		for (size_t i = 0; i < ev->nsigreqs; i++)
			buf_addf(&b, "; and minisign key %s, trusted comment '%s'",
				 ev->sigreqs[i].keyid_hex,
				 ev->sigreqs[i].trusted_comment ? ev->sigreqs[i].trusted_comment : "");
	}
	if (ev->checksum_url) {
		buf_addf(&b, "%schecksum file %s", sep, ev->checksum_url);
		sep = "; ";
	}
	if (ev->methods & (VERIFY_PINNED_SHA256 | VERIFY_PINNED_SHA512)) {
		buf_addf(&b, "%spinned %s", sep,
			 ev->methods & VERIFY_PINNED_SHA256 ? "sha256" : "sha512");
		sep = "; ";
	}
	if (ev->methods & VERIFY_LOCK_PIN) {
		buf_addf(&b, "%slock pin", sep);
		sep = "; ";
	}
	if (ev->methods & VERIFY_ACCEPTED_NEW)
		buf_addf(&b, "%saccepted as new (trust on first use)", sep);
	return buf_detach(&b, NULL);
}
