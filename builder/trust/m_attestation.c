/*
 * Method "attestation": build provenance published as an in-toto JSON
 * Lines file (containerd's `containerd-<v>-attestation.intoto.jsonl`, as
 * actions/attest-build-provenance writes it). Each line is a Sigstore
 * bundle whose DSSE envelope carries an in-toto statement, usually SLSA
 * provenance. At least one line must verify (trust/sigstore.h) against the
 * pinned trusted root, identity and OIDC issuer, with a subject whose
 * sha256 is the artifact's (sigstore_verify checks the subject). Only DSSE
 * bundles count: a message signature over the tarball is not provenance.
 * Evidence: identity, issuer, log index, integrated time, the line, and
 * from the verified statement the predicate type, builder, source
 * repository and ref (SLSA v1 and v0.2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/base64.h"
#include "trust/method.h"
#include "trust/sigstore.h"

#define ATTESTATION_MAX_LINES 256

static int validate(const struct trust_req *r, struct wb_err *e)
{
	if (!trust_req_param(r, "trusted_root", NULL))
		return wb_error(e, WB_EUSAGE, "'trusted_root' is required");
	if (!trust_req_param(r, "identity", NULL) || !trust_req_param(r, "issuer", NULL))
		return wb_error(e, WB_EUSAGE, "needs 'identity' and 'issuer' (the signing "
				"workflow and its OIDC issuer)");
	return 0;
}

static const char *jstr(const json_t *o, const char *const *path)
{
	for (; *path && o; path++)
		o = json_object_get(o, *path);
	return json_string_value(o);
}

/* From a verified bundle's statement: the SLSA provenance's builder,
 * source repository and ref (v1: runDetails.builder.id and
 * buildDefinition.externalParameters.workflow; v0.2: builder.id and
 * invocation.configSource). Absent fields are left out. */
static void provenance(const char *line, size_t len, struct trust_ev *ev)
{
	static const char *const payload[] = { "dsseEnvelope", "payload", NULL };
	static const char *const b1[] = { "predicate", "runDetails", "builder", "id", NULL };
	static const char *const r1[] = { "predicate", "buildDefinition", "externalParameters",
					  "workflow", "repository", NULL };
	static const char *const f1[] = { "predicate", "buildDefinition", "externalParameters",
					  "workflow", "ref", NULL };
	static const char *const b02[] = { "predicate", "builder", "id", NULL };
	static const char *const r02[] = { "predicate", "invocation", "configSource", "uri",
					   NULL };
	static const char *const pt[] = { "predicateType", NULL };
	json_t *b = json_loadb(line, len, 0, NULL), *st = NULL;
	const char *p = jstr(b, payload);
	unsigned char *raw = NULL;
	size_t n = 0;

	if (p && (raw = b64_decode(p, strlen(p), &n)))
		st = json_loadb((const char *)raw, n, 0, NULL);
	if (st) {
		const char *v;

		if ((v = jstr(st, pt)))
			trust_ev_set(ev, "predicate_type", v);
		if ((v = jstr(st, b1)) || (v = jstr(st, b02)))
			trust_ev_set(ev, "builder", v);
		if ((v = jstr(st, r1)) || (v = jstr(st, r02)))
			trust_ev_set(ev, "source", v);
		if ((v = jstr(st, f1)))
			trust_ev_set(ev, "ref", v);
	}
	json_decref(st);
	json_decref(b);
	free(raw);
}

/*
 * @where where build provenance is checked (containerd's `.intoto.jsonl`) --
 *   one line's bundle must verify and name the artifact; builder, source, ref
 *   into the lock and SBOM
 */
static int check(const struct trust_req *r, const struct trust_subject *s,
		 const struct trust_aux *aux, const char *which, struct trust_ev *ev,
		 struct wb_err *e)
{
	struct sigstore_root root;
	struct sigstore_input base;
	struct wb_err first = WB_ERR_INIT;
	const char *p, *end;
	size_t line = 0, tried = 0;
	int ok = 0;

	if (!aux->text)
		return wb_error(e, WB_EUSAGE, "artifact '%s': %sattestation was not fetched",
				s->name, which);
	if (trust_sigstore_prepare(r, s, &root, &base, e) < 0)
		return -1;
	for (p = aux->text, end = aux->text + aux->len; p < end && !ok; ) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (nl ? (size_t)(nl - p) : (size_t)(end - p));
		struct sigstore_input in;
		struct sigstore_evidence sev;
		struct wb_err le = WB_ERR_INIT;
		char num[32];

		line++;
		while (len && (p[len - 1] == '\r' || p[len - 1] == ' '))
			len--;
		if (len && line <= ATTESTATION_MAX_LINES) {
			tried++;
			in = base;
			memset(&sev, 0, sizeof(sev));
			in.bundle = p;
			in.bundle_len = len;
			if (sigstore_verify(&in, &sev, &le) == 0 &&
			    sev.content != SIGSTORE_CONTENT_DSSE)
				wb_error(&le, WB_EVERIFY, "a message signature, not an in-toto "
					 "statement");
			else if (!le.code) {
				ok = 1;
				trust_ev_set(ev, "identity", sev.identity);
				trust_ev_set(ev, "issuer", sev.issuer);
				snprintf(num, sizeof(num), "%zu", line);
				trust_ev_set(ev, "line", num);
				if (sev.has_tlog) {
					snprintf(num, sizeof(num), "%lld", sev.log_index);
					trust_ev_set(ev, "log_index", num);
					snprintf(num, sizeof(num), "%lld", sev.integrated_time);
					trust_ev_set(ev, "integrated_time", num);
				}
				provenance(p, len, ev);
			}
			if (le.code && !first.code) {
				first = le;
				wb_error_prefix(&first, "line %zu", line);
			}
			sigstore_evidence_release(&sev);
		}
		p = nl ? nl + 1 : end;
	}
	sigstore_root_release(&root);
	if (ok)
		return 0;
	if (!tried)
		wb_error(&first, WB_EVERIFY, "no bundle in it");
	*e = first;
	wb_error_prefix(e, "artifact '%s' from '%s': %sno line of the attestation '%s' "
			"verifies; the first", s->name, s->url, which, aux->url);
	return -1;
}

static void signer(const struct trust_ev *ev, struct buf *out)
{
	const char *id = trust_ev_get(ev, "identity"), *iss = trust_ev_get(ev, "issuer");

	buf_addf(out, "%s (%s)", id ? id : "", iss ? iss : "");
}

static void describe_ev(const struct trust_ev *ev, struct buf *out)
{
	const char *b = trust_ev_get(ev, "builder"), *src = trust_ev_get(ev, "source"),
		   *ref = trust_ev_get(ev, "ref"), *li = trust_ev_get(ev, "log_index");

	buf_adds(out, "attestation by ");
	signer(ev, out);
	if (b)
		buf_addf(out, ", builder %s", b);
	if (src)
		buf_addf(out, ", source %s%s%s", src, ref ? "@" : "", ref ? ref : "");
	if (li)
		buf_addf(out, ", log index %s", li);
}

static const struct trust_param_def params[] = {
	{ "trusted_root", 1 },
	{ "identity", 0 },
	{ "issuer", 0 },
	{ NULL, 0 },
};

static const char *const sbom_fields[] = {
	"identity", "attestation_identity",
	"issuer", "attestation_issuer",
	"predicate_type", "attestation_predicate_type",
	"builder", "attestation_builder",
	"source", "attestation_source",
	"ref", "attestation_ref",
	"log_index", "attestation_log_index",
	NULL,
};

const struct trust_method trust_m_attestation = {
	.name = "attestation",
	.what = "attestation",
	.shown = "attestation",
	.flags = TRUST_SIGNATURE | TRUST_ABSENT_FAILS,
	.aux_max = SIGSTORE_INPUT_MAX,
	.digest_algs = DIGEST_SHA256,
	.default_url = NULL,
	.url_param = "url",
	.params = params,
	.validate = validate,
	.url_key = "attestation_url",
	.sbom_fields = sbom_fields,
	.label = "build provenance attestation",
	.check = check,
	.describe_req = trust_params_describe,
	.req_json = trust_params_json,
	.describe_ev = describe_ev,
	.signer = signer,
};
