/*
 * The policy: the layers' `policy` maps combined so that a later layer
 * only tightens (policy_resolve), what a null may not unset
 * (policy_unset_loosens), and each artifact checked against the result
 * (policy_check_artifact).
 *
 * @where replacements (`replace:`) and policy tightening -- each layer's
 *   policy; a later layer tightens, never loosens
 */
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "recipe/resolve_int.h"
#include "recipe/schema.h"
#include "trust/method.h"

/* Unsetting PATH could loosen trust: policy, keys and signatures, the
 * Authenticode policy, mirror_only, the ISO pin, and any verification
 * (pins, requirements) but a transparency-log lookup's source. */
int policy_unset_loosens(const char *path)
{
	static const char *const roots[] = { "policy", "signatures", "keys", "authenticode",
					      "site_signing", "mirror_only", "windows.iso_sha256" };
	const char *v = strstr(path, ".verify");

	for (size_t i = 0; i < ARRAY_SIZE(roots); i++) {
		size_t n = strlen(roots[i]);

		if (!strncmp(path, roots[i], n) && (!path[n] || path[n] == '.'))
			return 1;
	}
	if (!strncmp(path, "verify", 6) || (v && (!v[7] || v[7] == '.'))) {
		const char *last = strrchr(path, '.');

		/* verify.<method>.rekor: the default log is asked instead,
		 * or the layer's tlog_entry: the entry is still checked */
		return !(last && !strcmp(last, ".rekor"));
	}
	return 0;
}

int policy_check_artifact(struct resolver *r, struct plan_artifact *a,
			  const struct rnode *vn)
{
	const struct trust_policy *pol = &r->plan->policy;
	struct trust_spec *v = &a->verify;
	char where[512];

	size_t nsig = 0, nchecksum = 0;

	for (size_t i = 0; i < v->nreqs; i++) {
		if (v->reqs[i].method->flags & TRUST_SIGNATURE)
			nsig++;
		if (v->reqs[i].method->flags & TRUST_CHECKSUM)
			nchecksum++;
	}
	if (pol->forbid_checksum_urls && nchecksum) {
		size_t k = 0;

		for (size_t i = 0; i < v->nreqs; i++) {
			if (v->reqs[i].method->flags & TRUST_CHECKSUM)
				trust_req_release(&v->reqs[i]);
			else
				v->reqs[k++] = v->reqs[i];
		}
		v->nreqs = k;
		if (!v->sha256 && !v->sha512 && !v->nreqs) {
			wb_origin_format(&pol->checksum_urls_origin, where, sizeof(where));
			return err_at(r, &vn->origin,
				      "artifact '%s' is verified only by a checksum file, which policy.checksum_urls: forbid does not accept (%s)",
				      a->name, where);
		}
	}
	if (pol->require_signature && !nsig) {
		struct buf kinds = BUF_INIT;
		int ret;

		/* the methods that count, from the table: "minisign, sigstore, ..." */
		for (const struct trust_method *const *m = trust_methods; *m; m++)
			if (((*m)->flags & TRUST_SIGNATURE) && !((*m)->flags & TRUST_NOT_IN_VERIFY))
				buf_addf(&kinds, "%s%s", kinds.len ? ", " : "", (*m)->name);
		wb_origin_format(&pol->require_origin, where, sizeof(where));
		ret = err_at(r, &vn->origin,
			     "artifact '%s' has no signature (%s), but policy.require is 'signature' (%s)",
			     a->name, kinds.ptr, where);
		buf_release(&kinds);
		return ret;
	}
	/* A Windows update (it has the Catalog's sha1) keeps its needs_pin:
	 * SHA-1 is too weak to name bytes, and its Authenticode signature
	 * says who signed, not which update it is; only a SHA-256 pin, the
	 * recipe's or one `lock --accept-new` wrote once the signature
	 * verified, does (recipe/updates.c). */
	if (v->needs_pin && !v->sha1 && (v->sha256 || v->sha512 || v->nreqs)) {
		/* another method verifies it: no pin needed after all */
		free(v->needs_pin);
		v->needs_pin = NULL;
	}
	if (!v->sha256 && !v->sha512 && !v->nreqs && !v->needs_pin)
		return err_at(r, &vn->origin,
			      "artifact '%s' has no verification: give sha256, sha512, sha256_url, sha512_url, minisign or needs_pin",
			      a->name);
	return 0;
}

int policy_resolve(struct resolver *r)
{
	struct trust_policy *pol = &r->plan->policy;

	pol->allow_http = 1;
	/* Policy only tightens: a later layer cannot loosen what an earlier
	 * layer required (so no flag undoes an override's require: signature). */
	for (size_t i = 0; i < r->nlayers; i++) {
		const struct rnode *l = r->layers[i].policy, *n;

		if (!l)
			continue;

		if ((n = rnode_get(l, "require")) && !strcmp(n->scalar, "signature") &&
		    !pol->require_signature) {
			pol->require_signature = 1;
			pol->require_origin = n->origin;
		}
		if ((n = rnode_get(l, "allow_http")) && schema_bool(n) == 0 &&
		    pol->allow_http) {
			pol->allow_http = 0;
			pol->allow_http_origin = n->origin;
		}
		if ((n = rnode_get(l, "checksum_urls")) && !strcmp(n->scalar, "forbid") &&
		    !pol->forbid_checksum_urls) {
			pol->forbid_checksum_urls = 1;
			pol->checksum_urls_origin = n->origin;
		}
		if ((n = rnode_get(l, "locked_urls")) && !strcmp(n->scalar, "refuse") &&
		    !pol->refuse_locked_urls) {
			pol->refuse_locked_urls = 1;
			pol->locked_urls_origin = n->origin;
		}
		/* a number of logs: each layer's holds, so the highest does */
		if ((n = rnode_get(l, "tlog_threshold"))) {
			unsigned long long v = artifacts_to_ull(n);

			if (v < 1 || v > 99)
				return err_at(r, &n->origin, "policy.tlog_threshold: a number "
					      "of transparency logs, 1 to 99, not '%s'", n->scalar);
			if (v > pol->tlog_threshold) {
				pol->tlog_threshold = (unsigned)v;
				pol->tlog_threshold_origin = n->origin;
			}
		}
	}
	/* an unverified ISO needs an explicit allow, and a forbid in any layer
	 * (earlier or later) holds */
	for (size_t i = 0; i < r->nlayers; i++) {
		const struct rnode *n = rnode_get(r->layers[i].policy, "unverified_iso");

		if (!n)
			continue;
		if (!strcmp(n->scalar, "forbid")) {
			pol->allow_unverified_iso = 0;
			pol->unverified_iso_origin = n->origin;
			break;
		}
		if (!pol->allow_unverified_iso) {
			pol->allow_unverified_iso = 1;
			pol->unverified_iso_origin = n->origin;
		}
	}
	return 0;
}
