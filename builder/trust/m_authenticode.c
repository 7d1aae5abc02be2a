/*
 * Method "authenticode": the artifact's own embedded Authenticode
 * signature (trust/authenticode.h: PE, MSI or cabinet, so a Windows
 * update's .msu or .cab) must verify at fetch time, before the bytes
 * enter the cache, under the requirement's roots and publishers. No
 * auxiliary file: the signature is inside the bytes, read through the
 * descriptor that was written and hashed (trust_subject.data_path is
 * /proc/self/fd/N), never through the cache entry's name.
 *
 * A recipe does not name it under `verify:`; `windows.updates` entries
 * (recipe/updates.c) carry it, from their `authenticode:` map. The stage's
 * check of staged files (stage/stage.c) stays; this one decides whether
 * the bytes may be cached at all (docs/updates.md).
 *
 * Params: roots (a PEM file), publisher (one entry per allowed publisher:
 * subject or SHA-256 thumbprint), signatures ("all" or "one").
 * Evidence: signer, thumbprint_sha256, digest, timestamp.
 *
 * @where Windows updates (`windows.updates`; docs/updates.md) -- the
 *   fetch-time signature check, method `authenticode`
 */
#include <stdlib.h>
#include <string.h>

#include "trust/authenticode.h"
#include "trust/method.h"

static int check(const struct trust_req *r, const struct trust_subject *s,
		 const struct trust_aux *aux, const char *which, struct trust_ev *ev,
		 struct wb_err *e)
{
	struct authenticode_policy pol;
	struct authenticode_result res;
	const char **pubs = xcalloc(r->nparams + 1, sizeof(*pubs));
	const char *sigs = trust_req_param(r, "signatures", NULL);
	int ret;

	(void)aux;
	memset(&pol, 0, sizeof(pol));
	memset(&res, 0, sizeof(res));
	pol.require = 1;
	pol.roots = trust_req_param(r, "roots", NULL);
	for (size_t i = 0; i < r->nparams; i++)
		if (!strcmp(r->params[i].key, "publisher"))
			pubs[pol.npublishers++] = r->params[i].value;
	pol.publishers = pubs;
	pol.signatures = sigs && !strcmp(sigs, "one") ? AUTHENTICODE_SIGS_ONE
						      : AUTHENTICODE_SIGS_ALL;
	ret = authenticode_verify_path(s->data_path, s->filename, &pol, &res, e);
	if (ret < 0) {
		/* a file that is not the signed container its name says fails
		 * the check, as at stage (docs/authenticode.md): it is never
		 * cached; only an I/O error stays one */
		if (e->code != WB_EIO)
			e->code = WB_EVERIFY;
		wb_error_prefix(e, "artifact '%s' from '%s': %sauthenticode", s->name,
				s->url, which);
	} else {
		trust_ev_set(ev, "signer", res.subject);
		trust_ev_set(ev, "thumbprint_sha256", res.thumbprint);
		trust_ev_set(ev, "digest", res.digest);
		if (res.has_timestamp)
			trust_ev_set(ev, "timestamp", res.timestamp_str);
	}
	authenticode_result_release(&res);
	free(pubs);
	return ret;
}

static void describe_ev(const struct trust_ev *ev, struct buf *out)
{
	const char *sg = trust_ev_get(ev, "signer"), *t = trust_ev_get(ev, "timestamp");

	buf_addf(out, "authenticode signer '%s'%s%s", sg ? sg : "", t ? ", timestamp " : "",
		 t ? t : "");
}

static void signer(const struct trust_ev *ev, struct buf *out)
{
	const char *sg = trust_ev_get(ev, "signer");

	buf_addf(out, "authenticode '%s'", sg ? sg : "");
}

static const struct trust_param_def params[] = {
	{ "roots", 1 },
	{ "publisher", 0 },
	{ "signatures", 0 },
	{ NULL, 0 },
};

/* The signature is embedded: one file slot that is never fetched (no URL,
 * optional), so the engine, the ref and the lock treat it as they treat a
 * method's file that its settings leave out. */
static const struct trust_aux_def aux_none[] = {
	{ NULL, NULL, "embedded signature", 0, NULL, NULL, TRUST_AUX_OPTIONAL },
};

static const char *const sbom_fields[] = {
	"signer", "authenticode_signer",
	"thumbprint_sha256", "authenticode_thumbprint_sha256",
	"timestamp", "authenticode_timestamp",
	NULL,
};

const struct trust_method trust_m_authenticode = {
	.name = "authenticode",
	.what = "authenticode signature",
	.shown = "authenticode",
	.flags = TRUST_SIGNATURE | TRUST_NOT_IN_VERIFY,
	.aux = aux_none,
	.naux = 1,
	/* never written: the evidence has no URL (the lock records its
	 * fields under "authenticode") */
	.url_key = "url",
	.params = params,
	.sbom_fields = sbom_fields,
	.label = "authenticode (embedded)",
	.check = check,
	.describe_req = trust_params_describe,
	.req_json = trust_params_json,
	.describe_ev = describe_ev,
	.signer = signer,
};
