/*
 * Method "cosign": a detached cosign signature in the Kubernetes layout
 * (dl.k8s.io): the artifact's `.sig` (base64 of a DER ECDSA signature over
 * its SHA-256) and `.cert` (a Fulcio certificate, base64 of PEM or PEM),
 * keyless under a pinned trusted root, identity and OIDC issuer, with the
 * Rekor v1 entry that proves when it was signed (a Fulcio certificate is
 * valid for ten minutes). Three auxiliary files: the signature, the
 * certificate and the entry; the entry is fetched from `tlog_entry` (a
 * static copy, as `winbuild mirror` exports it) or, by default, looked up
 * after the download in the Rekor at `rekor` by the artifact's SHA-256
 * (trust/rekor.h, through fetch's transport). `tlog: none` opts out of the
 * transparency log: the chain is checked at the certificate's notBefore
 * and plan and fetch warn. The checks are sigstore_verify()'s
 * (trust/sigstore.h): chain to the pinned Fulcio root at the entry's
 * integrated time, identity and issuer, SCT, the signature over the digest
 * of the one pass, and the entry (SET with the pinned Rekor key,
 * inclusion proof and checkpoint when present, body against the
 * signature, certificate and digest, integratedTime inside the
 * certificate's validity).
 * Evidence: identity, issuer, log_index, integrated_time (or tlog "none"),
 * and the three files (the entry that verified, alone).
 *
 * A fourth file, `bundle` (no default URL), is what cosign v3 writes:
 * `cosign sign-blob` defaults to the protobuf bundle
 * (application/vnd.dev.sigstore.bundle.v0.3+json; options/signblob.go,
 * --new-bundle-format defaults to true), requires --bundle FILE for it
 * (signblob.go: "must specify --bundle with --new-bundle-format"), and
 * returns after writing it, before the --output-signature and
 * --output-certificate writes (sign/sign_blob.go), which are deprecated;
 * "<file>.sigstore.json" is the name its README and its flag completion
 * (options/options.go bundleExts) use — all in sigstore/cosign
 * cmd/cosign/cli/, tag v3.0.1 (18f981e0, 2025-10-07) and HEAD d6d86c22
 * (2026-07-24). So the recipe names the bundle's URL; winbuild does not
 * probe for one (a probe would cost every cosign v2 project a request,
 * and which form was checked would depend on a 404). When the recipe
 * names it, it is the requirement's only file (TRUST_AUX_PREFERRED):
 * .sig, .cert and tlog_entry are not fetched and Rekor is not searched
 * — the bundle carries its own entry, and sigstore_verify() checks it as
 * method "sigstore" checks a bundle (chain, SCT, identity, issuer,
 * signature, entry, timestamps). cosign verify-blob, given a new-format
 * bundle, likewise verifies from it alone (verify/verify_blob.go).
 * `tlog: none` beside it is a contradiction.
 * Evidence then: identity, issuer, log_index, integrated_time (none for
 * a Rekor v2 entry), signed_time, bundle_version and the bundle.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "trust/method.h"
#include "trust/rekor.h"
#include "trust/sigstore.h"

/* The bundle's index among the files (aux[] below). */
#define BUNDLE 3

static int has_bundle(const struct trust_req *r)
{
	return trust_req_urls(r, BUNDLE)->nr != 0;
}

static int no_tlog(const struct trust_req *r)
{
	const char *t = trust_req_param(r, "tlog", NULL);

	return t && !strcmp(t, "none");
}

static int validate(const struct trust_req *r, struct wb_err *e)
{
	const char *t = trust_req_param(r, "tlog", NULL);

	if (!trust_req_param(r, "trusted_root", NULL))
		return wb_error(e, WB_EUSAGE, "'trusted_root' is required");
	if (!trust_req_param(r, "identity", NULL) || !trust_req_param(r, "issuer", NULL))
		return wb_error(e, WB_EUSAGE, "needs 'identity' and 'issuer' (the signer and "
				"its OIDC issuer)");
	if (t && strcmp(t, "none"))
		return wb_error(e, WB_EUSAGE, "'tlog' takes only 'none' (no transparency-log "
				"proof), not '%s'", t);
	if (t && trust_req_urls(r, 2)->nr)
		return wb_error(e, WB_EUSAGE, "'tlog: none' and 'tlog_entry' contradict "
				"each other");
	if (t && has_bundle(r))
		return wb_error(e, WB_EUSAGE, "'tlog: none' and 'bundle' contradict each "
				"other (a bundle carries its transparency-log entry)");
	return 0;
}

static const char *warning(const struct trust_req *r)
{
	return no_tlog(r) ? "tlog: none: NO transparency-log proof of when this artifact was "
		"signed (the certificate is checked at its notBefore; a stolen key of an "
		"expired certificate would pass)" : NULL;
}

static int lookup_wanted(const struct trust_req *r)
{
	return !no_tlog(r) && !has_bundle(r);
}

/* The entry's own URL when it came from a lookup in BASE. */
static char *entry_url(const struct trust_req *r, const char *url, const char *chosen)
{
	json_t *o = json_loads(chosen, 0, NULL);
	const char *uuid = NULL;
	json_t *v;
	char *ret = NULL;
	size_t n;

	for (size_t i = 0; url && i < r->lookup.nr; i++)
		if (!strcmp(r->lookup.v[i], url)) {
			json_object_foreach(o, uuid, v)
				break;
			break;
		}
	if (uuid) {
		n = strlen(url);
		while (n && url[n - 1] == '/')
			n--;
		ret = xasprintf("%.*s/api/v1/log/entries/%s", (int)n, url, uuid);
	} else if (url) {
		ret = xstrdup(url);
	}
	json_decref(o);
	return ret;
}

/* The evidence both forms record. */
static void set_evidence(struct trust_ev *ev, const struct sigstore_evidence *sev)
{
	char num[32];

	trust_ev_set(ev, "identity", sev->identity);
	trust_ev_set(ev, "issuer", sev->issuer);
	if (sev->has_tlog) {
		snprintf(num, sizeof(num), "%lld", sev->log_index);
		trust_ev_set(ev, "log_index", num);
	} else {
		trust_ev_set(ev, "tlog", "none");
	}
	/* a Rekor v2 entry (only in a bundle) has no integrated time: the
	 * bundle's RFC 3161 timestamp is the signed time then */
	if (sev->has_tlog && sev->integrated_time) {
		snprintf(num, sizeof(num), "%lld", sev->integrated_time);
		trust_ev_set(ev, "integrated_time", num);
	}
	if (sev->bundle_minor) {
		snprintf(num, sizeof(num), "0.%d", sev->bundle_minor);
		trust_ev_set(ev, "bundle_version", num);
		snprintf(num, sizeof(num), "%lld", sev->signed_time);
		trust_ev_set(ev, "signed_time", num);
	}
}

/* The bundle form: sigstore_verify() on it, as method "sigstore" does. */
static int check_bundle(const struct trust_req *r, const struct trust_subject *s,
			const struct trust_aux *aux, const char *which,
			struct trust_ev *ev, struct wb_err *e)
{
	const struct trust_aux *b = &aux[BUNDLE];
	struct sigstore_root root;
	struct sigstore_input in;
	struct sigstore_evidence sev;
	int ret;

	if (!b->text)
		return wb_error(e, WB_EUSAGE, "artifact '%s': %scosign bundle was not fetched",
				s->name, which);
	memset(&sev, 0, sizeof(sev));
	if (trust_sigstore_prepare(r, s, &root, &in, e) < 0)
		return -1;
	in.bundle = b->text;
	in.bundle_len = b->len;
	ret = sigstore_verify(&in, &sev, e);
	if (ret < 0)
		wb_error_prefix(e, "artifact '%s' from '%s': %scosign bundle '%s'", s->name,
				s->url, which, b->url ? b->url : "?");
	else
		set_evidence(ev, &sev);
	sigstore_evidence_release(&sev);
	sigstore_root_release(&root);
	return ret;
}

/*
 * @where where a Kubernetes cosign signature is checked (`.sig` + `.cert` +
 *   Rekor entry, `tlog: none`; a cosign v3 bundle, `verify.cosign.bundle`,
 *   preferred when named: `check_bundle()`) -- method `cosign`
 */
static int check(const struct trust_req *r, const struct trust_subject *s,
		 const struct trust_aux *aux, const char *which, struct trust_ev *ev,
		 struct wb_err *e)
{
	struct sigstore_root root;
	struct sigstore_input in;
	struct sigstore_evidence sev;
	char hex[65], *chosen = NULL;
	size_t n = 0;
	int ret;

	if (has_bundle(r))
		return check_bundle(r, s, aux, which, ev, e);
	if (!aux[0].text || !aux[1].text)
		return wb_error(e, WB_EUSAGE, "artifact '%s': %scosign %s was not fetched",
				s->name, which, aux[0].text ? "certificate" : "signature");
	memset(&sev, 0, sizeof(sev));
	if (trust_sigstore_prepare(r, s, &root, &in, e) < 0)
		return -1;
	in.signature = aux[0].text;
	in.signature_len = aux[0].len;
	in.certificate = aux[1].text;
	in.certificate_len = aux[1].len;
	digest_hex(s->dr->sha256, 32, hex);
	if (no_tlog(r)) {
		in.no_tlog = 1;
		ret = sigstore_verify(&in, &sev, e);
	} else if (!aux[2].text) {
		ret = wb_error(e, WB_EVERIFY, "no transparency-log entry for sha256:%s%s%s%s",
			       hex, r->lookup.nr ? " in rekor '" : "",
			       r->lookup.nr ? r->lookup.v[0] : "", r->lookup.nr ? "'" : "");
	} else {
		ret = sigstore_verify_entries(&in, aux[2].text, aux[2].len, &sev, &chosen, &n, e);
		if (ret < 0 && n > 1)
			wb_error_prefix(e, "none of the %zu entries verifies; the first", n);
		else if (ret < 0 && n == 1)
			wb_error_prefix(e, "tlog entry '%s'", aux[2].url ? aux[2].url : "?");
	}
	if (ret < 0) {
		wb_error_prefix(e, "artifact '%s' from '%s': %scosign signature '%s'", s->name,
				s->url, which, aux[0].url ? aux[0].url : "?");
	} else {
		set_evidence(ev, &sev);
		if (chosen) {
			/* the entry that verified, of those looked up */
			ev->more[1].url = entry_url(r, aux[2].url, chosen);
			ev->more[1].text = chosen;
			ev->more[1].len = strlen(chosen);
			chosen = NULL;
		}
	}
	free(chosen);
	sigstore_evidence_release(&sev);
	sigstore_root_release(&root);
	return ret;
}

static void signer(const struct trust_ev *ev, struct buf *out)
{
	const char *id = trust_ev_get(ev, "identity"), *iss = trust_ev_get(ev, "issuer");

	buf_addf(out, "%s (%s)", id ? id : "", iss ? iss : "");
}

static void describe_ev(const struct trust_ev *ev, struct buf *out)
{
	const char *li = trust_ev_get(ev, "log_index"), *t = trust_ev_get(ev, "integrated_time");

	const char *bv = trust_ev_get(ev, "bundle_version");

	buf_adds(out, "cosign ");
	signer(ev, out);
	if (li)
		buf_addf(out, ", log index %s", li);
	else
		buf_adds(out, ", NO transparency-log proof (tlog: none)");
	if (t)
		buf_addf(out, ", integrated time %s", t);
	else if (li && bv)
		buf_addf(out, ", signed time %s (timestamp)", trust_ev_get(ev, "signed_time"));
	if (bv)
		buf_addf(out, ", from its bundle v%s", bv);
}

/* plan and --explain: the settings, then where the entry comes from */
static void describe_req(const struct trust_req *r,
			 void (*line)(void *ctx, const char *text, const struct wb_origin *o),
			 void *ctx)
{
	trust_params_describe(r, line, ctx);
	if (has_bundle(r))
		line(ctx, "the bundle is preferred: it carries its own transparency-log "
		     "entry; no .sig, .cert or tlog_entry is fetched, Rekor is not searched",
		     &r->origin);
	for (size_t i = 0; i < r->lookup.nr; i++) {
		char *t = xasprintf("rekor %s%s", r->lookup.v[i],
				    i ? "" : " (searched by the artifact's sha256 at fetch time)");
		line(ctx, t, &r->origin);
		free(t);
	}
	if (no_tlog(r))
		line(ctx, "WARNING: tlog: none -- NO transparency-log proof of when it was "
		     "signed; the certificate is checked at its notBefore", &r->origin);
}

static void req_json(const struct trust_req *r, json_t *obj)
{
	json_t *rk = json_array();

	trust_params_json(r, obj);
	for (size_t i = 0; i < r->lookup.nr; i++)
		json_array_append_new(rk, json_string(r->lookup.v[i]));
	json_object_set_new(obj, "rekor", rk);
	json_object_set_new(obj, "tlog_warning", warning(r) ? json_string(warning(r)) :
			    json_null());
}

static const struct trust_param_def params[] = {
	{ "trusted_root", 1 },
	{ "identity", 0 },
	{ "issuer", 0 },
	{ "tlog", 0 },
	{ NULL, 0 },
};

static const struct trust_aux_def aux[] = {
	{ "signature", "${url}.sig", "cosign signature", SIGSTORE_INPUT_MAX, ".sig",
	  "signature_url", 0 },
	{ "certificate", "${url}.cert", "cosign certificate", SIGSTORE_INPUT_MAX, ".cert",
	  "certificate_url", 0 },
	{ "tlog_entry", NULL, "rekor entry", REKOR_ANSWER_MAX, ".rekor.json",
	  "tlog_entry_url", TRUST_AUX_OPTIONAL | TRUST_AUX_LOCK_JSON },
	[BUNDLE] = { "bundle", NULL, "cosign bundle", SIGSTORE_INPUT_MAX, ".sigstore.json",
	  "bundle_url", TRUST_AUX_OPTIONAL | TRUST_AUX_PREFERRED },
};

static const char *const sbom_fields[] = {
	"identity", "cosign_identity",
	"issuer", "cosign_issuer",
	"log_index", "cosign_log_index",
	"integrated_time", "cosign_integrated_time",
	"tlog", "cosign_tlog",
	"bundle_version", "cosign_bundle_version",
	"signed_time", "cosign_signed_time",
	NULL,
};

const struct trust_method trust_m_cosign = {
	.name = "cosign",
	.what = "cosign signature",
	.shown = "cosign",
	.flags = TRUST_SIGNATURE | TRUST_ABSENT_FAILS,
	.aux_max = SIGSTORE_INPUT_MAX,
	.digest_algs = DIGEST_SHA256,
	.default_url = "${url}.sig",
	.url_param = "signature",
	.params = params,
	.validate = validate,
	.warning = warning,
	.url_key = "signature_url",
	.sbom_fields = sbom_fields,
	.aux = aux,
	.naux = sizeof(aux) / sizeof(aux[0]),
	.lookup_param = "rekor",
	.lookup_default = "https://rekor.sigstore.dev",
	.lookup_aux = 2,
	.lookup_wanted = lookup_wanted,
	.lookup_step = rekor_lookup_step,
	.label = "cosign signature",
	.check = check,
	.describe_req = describe_req,
	.req_json = req_json,
	.describe_ev = describe_ev,
	.signer = signer,
};
