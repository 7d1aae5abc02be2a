/*
 * Method "sigstore": a Sigstore bundle (trust/sigstore.h), fetched from
 * the requirement's URL (`bundle`, default "${url}.sigstore.json"), must
 * verify the artifact offline against the pinned trusted root, either
 * keyless (the certificate's identity and OIDC issuer must equal the
 * pinned ones) or under a pinned PEM public key (cosign sign-blob --key).
 * Evidence: identity, issuer (or key_sha256), log_index, integrated_time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/fs.h"
#include "trust/method.h"
#include "trust/sigstore.h"

static int validate(const struct trust_req *r, struct wb_err *e)
{
	int id = trust_req_param(r, "identity", NULL) != NULL;
	int iss = trust_req_param(r, "issuer", NULL) != NULL;
	int key = trust_req_param(r, "key", NULL) != NULL;

	if (!trust_req_param(r, "trusted_root", NULL))
		return wb_error(e, WB_EUSAGE, "'trusted_root' is required");
	if (key && (id || iss))
		return wb_error(e, WB_EUSAGE, "give either 'key' or 'identity' and "
				"'issuer', not both");
	if (!key && !(id && iss))
		return wb_error(e, WB_EUSAGE, "needs 'identity' and 'issuer' (keyless), "
				"or 'key' (a PEM public key)");
	return 0;
}

int trust_sigstore_prepare(const struct trust_req *r, const struct trust_subject *s,
			   struct sigstore_root *root, struct sigstore_input *in,
			   struct wb_err *e)
{
	const char *path = trust_req_param(r, "trusted_root", NULL);
	const struct sigstore_root *shared = root;

	memset(root, 0, sizeof(*root));
	memset(in, 0, sizeof(*in));
	if (s->roots ? sigstore_roots_get(s->roots, path, &shared, e) < 0 :
	    sigstore_root_load(path, root, e) < 0) {
		wb_error_prefix(e, "artifact '%s': trusted root", s->name);
		return -1;
	}
	in->artifact_sha256 = s->dr->sha256;
	in->artifact_path = s->data_path;
	in->root = shared;
	in->identity = trust_req_param(r, "identity", NULL);
	in->issuer = trust_req_param(r, "issuer", NULL);
	in->tlog_threshold = s->tlog_threshold;
	return 0;
}

static int check(const struct trust_req *r, const struct trust_subject *s,
		 const struct trust_aux *aux, const char *which, struct trust_ev *ev,
		 struct wb_err *e)
{
	const char *key_path = trust_req_param(r, "key", NULL);
	struct sigstore_root root;
	struct sigstore_input in;
	struct sigstore_evidence sev;
	struct buf key = BUF_INIT;
	char num[32];
	int ret;

	if (!aux->text)
		return wb_error(e, WB_EUSAGE, "artifact '%s': %ssigstore bundle was not fetched",
				s->name, which);
	memset(&sev, 0, sizeof(sev));
	if (trust_sigstore_prepare(r, s, &root, &in, e) < 0)
		return -1;
	if (key_path && fs_read_file(key_path, SIGSTORE_INPUT_MAX, WB_EUSAGE, &key, e) < 0) {
		sigstore_root_release(&root);
		wb_error_prefix(e, "artifact '%s': sigstore key", s->name);
		return -1;
	}
	in.bundle = aux->text;
	in.bundle_len = aux->len;
	if (key_path) {
		in.key_pem = key.ptr;
		in.key_pem_len = key.len;
	}
	ret = sigstore_verify(&in, &sev, e);
	if (ret < 0) {
		wb_error_prefix(e, "artifact '%s' from '%s': %ssigstore bundle '%s'", s->name,
				s->url, which, aux->url);
	} else {
		if (sev.identity)
			trust_ev_set(ev, "identity", sev.identity);
		if (sev.issuer)
			trust_ev_set(ev, "issuer", sev.issuer);
		if (sev.material == SIGSTORE_MATERIAL_KEY)
			trust_ev_set(ev, "key_sha256", sev.key_sha256);
		if (sev.has_tlog) {
			snprintf(num, sizeof(num), "%lld", sev.log_index);
			trust_ev_set(ev, "log_index", num);
			snprintf(num, sizeof(num), "%lld", sev.integrated_time);
			trust_ev_set(ev, "integrated_time", num);
		}
		if (sev.signed_time) {
			snprintf(num, sizeof(num), "%lld", sev.signed_time);
			trust_ev_set(ev, "signed_time", num);
		}
	}
	sigstore_evidence_release(&sev);
	sigstore_root_release(&root);
	buf_release(&key);
	return ret;
}

static void signer(const struct trust_ev *ev, struct buf *out)
{
	const char *id = trust_ev_get(ev, "identity"), *iss = trust_ev_get(ev, "issuer");

	if (id)
		buf_addf(out, "%s (%s)", id, iss ? iss : "");
	else
		buf_addf(out, "key sha256:%s", trust_ev_get(ev, "key_sha256") ?
			 trust_ev_get(ev, "key_sha256") : "");
}

static void describe_ev(const struct trust_ev *ev, struct buf *out)
{
	const char *li = trust_ev_get(ev, "log_index"), *t = trust_ev_get(ev, "integrated_time");

	buf_adds(out, "sigstore ");
	signer(ev, out);
	if (li)
		buf_addf(out, ", log index %s, integrated time %s", li, t ? t : "");
}

static const struct trust_param_def params[] = {
	{ "trusted_root", 1 },
	{ "identity", 0 },
	{ "issuer", 0 },
	{ "key", 1 },
	{ NULL, 0 },
};

static const char *const sbom_fields[] = {
	"identity", "sigstore_identity",
	"issuer", "sigstore_issuer",
	"key_sha256", "sigstore_key_sha256",
	"log_index", "sigstore_log_index",
	"integrated_time", "sigstore_integrated_time",
	NULL,
};

const struct trust_method trust_m_sigstore = {
	.name = "sigstore",
	.what = "sigstore bundle",
	.shown = "sigstore",
	.flags = TRUST_SIGNATURE | TRUST_ABSENT_FAILS,
	.aux_max = SIGSTORE_INPUT_MAX,
	.digest_algs = DIGEST_SHA256,
	.default_url = "${url}.sigstore.json",
	.url_param = "bundle",
	.params = params,
	.validate = validate,
	.url_key = "bundle_url",
	.sbom_fields = sbom_fields,
	.label = "sigstore bundle",
	.check = check,
	.describe_req = trust_params_describe,
	.req_json = trust_params_json,
	.describe_ev = describe_ev,
	.signer = signer,
};
