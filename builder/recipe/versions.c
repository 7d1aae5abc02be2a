/*
 * Versions: one source per version (vars.<component>_version against
 * components.<component>.version), the leading 'v', the warnings for
 * versions that look inconsistent, and each requirement's `since`.
 *
 * @where containerd 1.x, which publishes no build provenance: a plan-time
 *   error (a requirement's `since`) -- whether a version meets `since`
 *
 * @where one source per version, and the plan's warnings for values that look
 *   inconsistent -- `vars.<component>_version` against
 *   `components.<component>.version`
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "recipe/resolve_int.h"

/*
 * A version written "v1.35.2" (image-builder's kubernetes_semver habit)
 * would give ".../vv1.35.2/..." in every URL that adds the 'v' itself, so
 * it is refused where the 'v' was written: the version node N, or the
 * variable its ${...} names (component vars, then image vars).
 */
int versions_leading_v(struct resolver *r, const struct rnode *cn, const struct rnode *n,
	      const char *ctx, const char *value)
{
	const struct rnode *at = n;
	char what[256], giving[512] = "";

	snprintf(what, sizeof(what), "%s", ctx);
	for (const char *p = strstr(n->scalar, "${"); p && at == n; p = strstr(p + 2, "${")) {
		char *name = xstrndup(p + 2, strcspn(p + 2, ":}"));
		const struct rnode *vn = rnode_get(rnode_get(cn, "vars"), name);

		if (!vn)
			vn = rnode_get(rnode_get(r->top, "vars"), name);
		if (vn && vn->type == RNODE_SCALAR && vn->scalar[0] == 'v') {
			at = vn;
			snprintf(what, sizeof(what), "vars.%s", name);
		}
		free(name);
	}
	if (at != n)
		snprintf(giving, sizeof(giving), " (giving %s '%s')", ctx, value);
	return err_at(r, &at->origin, "%s is '%s'%s: write versions without a leading 'v' "
		      "('%s'), the recipes add it where upstream's URLs have one "
		      "(.../v${version}/...)", what, at->scalar, giving, at->scalar + 1);
}

/*
 * An image variable named after a component (`<name>_version`, a '-' as
 * '_': vars.kubernetes_version) is that component's version: other values
 * derive from it (crictl's `${kubernetes_version:minor}.0`), so the two
 * must not disagree. The shipped recipes derive the component's version
 * from the variable (components.kubernetes.version: "${kubernetes_version}");
 * a layer that sets only one of them to another value is an error naming
 * both places.
 */
int versions_agree(struct resolver *r, const struct vars *image_vars)
{
	const struct rnode *vars = rnode_get(r->top, "vars");

	for (size_t i = 0; vars && i < r->plan->ncomponents; i++) {
		const struct plan_component *c = &r->plan->components[i];
		char *name = xasprintf("%s_version", c->name), *val, what[256], where[512];
		const struct rnode *vn;
		int ret = 0;

		for (char *q = name; *q; q++)
			if (*q == '-')
				*q = '_';
		vn = rnode_get(vars, name);
		snprintf(what, sizeof(what), "vars.%s", name);
		val = vn && vn->type == RNODE_SCALAR ? vars_expand(r, image_vars, vn, what) : NULL;
		if (vn && vn->type == RNODE_SCALAR && !val)
			ret = -1;
		else if (val && strcmp(val, c->version)) {
			wb_origin_format(&vn->origin, where, sizeof(where));
			ret = err_at(r, &c->version_origin, "components.%s.version is '%s', but "
				     "%s is '%s' (%s): both name the version of '%s'; set %s "
				     "(components.%s.version follows it as \"${%s}\")",
				     c->name, c->version, what, val, where, c->name, what,
				     c->name, name);
		}
		free(val);
		free(name);
		if (ret)
			return -1;
	}
	return 0;
}

/* MAJOR.MINOR of a version (an optional leading v); -1 when it has none. */
int versions_major_minor(const char *v, long *maj, long *min)
{
	char *end;

	if (*v == 'v')
		v++;
	*maj = strtol(v, &end, 10);
	if (end == v || *end != '.')
		return -1;
	v = end + 1;
	*min = strtol(v, &end, 10);
	return end == v ? -1 : 0;
}

/*
 * Values that cannot be derived and look inconsistent: warnings, not
 * errors (the user may know better). crictl on another minor than
 * Kubernetes (cri-tools vX.Y is released for Kubernetes X.Y; the shipped
 * recipes derive it unless it is set); a containerd major the node config
 * has no template for (stage/generate.c: 1.x config version 2, 2.x
 * version 3); containerd 1.x under Kubernetes 1.36 or later (1.35 was the
 * last release to support containerd 1.x, SIG Node in the 1.35 release
 * notes).
 */
void versions_warnings(struct resolver *r)
{
	struct plan *p = r->plan;
	const struct plan_component *k8s = plan_find_component(p, "kubernetes");
	const struct plan_component *cri = plan_find_component(p, "crictl");
	const struct plan_component *ctd = plan_find_component(p, "containerd");
	long kmaj = 0, kmin = 0, maj, min;
	int have_k8s = k8s && !versions_major_minor(k8s->version, &kmaj, &kmin);
	char where[512] = "";

	if (have_k8s)
		wb_origin_format(&k8s->version_origin, where, sizeof(where));
	if (have_k8s && cri && !versions_major_minor(cri->version, &maj, &min) &&
	    (maj != kmaj || min != kmin))
		rs_warn_at(p, &cri->version_origin, "crictl %s is not on Kubernetes' minor "
			"%ld.%ld (components.kubernetes.version %s, %s): cri-tools "
			"v%ld.%ld.x is the release for Kubernetes %ld.%ld; without "
			"components.crictl.version set, crictl follows Kubernetes",
			cri->version, kmaj, kmin, k8s->version, where, kmaj, kmin, kmaj, kmin);
	if (!ctd || versions_major_minor(ctd->version, &maj, &min))
		return;
	if (maj != 1 && maj != 2)
		rs_warn_at(p, &ctd->version_origin, "containerd %s: the node config winbuild "
			"writes knows containerd 1.x (config version 2) and 2.x (version 3) "
			"only; the stage will refuse this version", ctd->version);
	else if (maj == 1 && have_k8s && (kmaj > 1 || (kmaj == 1 && kmin >= 36)))
		rs_warn_at(p, &ctd->version_origin, "containerd %s with Kubernetes %s (%s): "
			"Kubernetes 1.35 was the last release to support containerd 1.x; "
			"use containerd 2.0 or later", ctd->version, k8s->version, where);
}

/*
 * Every `verify.<method>.since` against its component's final version (the
 * recipe's, an override's, --set's): an older version cannot meet that
 * requirement (containerd publishes build provenance from 2.0 on), so the
 * plan stops here, at the version, naming the requirement and the way out,
 * instead of a 404 at fetch time. Replacing the artifact's verify (an
 * override) drops the requirement with its `since`.
 */
int versions_since_met(struct resolver *r)
{
	for (size_t i = 0; i < r->plan->nartifacts; i++) {
		const struct plan_artifact *a = &r->plan->artifacts[i];
		const struct plan_component *c = plan_find_component(r->plan, a->component);
		long maj, min, smaj, smin;
		char where[512];

		for (size_t k = 0; c && k < a->nsince; k++) {
			const struct plan_since *ps = &a->since[k];

			if (versions_major_minor(c->version, &maj, &min) ||
			    versions_major_minor(ps->version, &smaj, &smin) ||
			    maj > smaj || (maj == smaj && min >= smin))
				continue;
			wb_origin_format(&ps->req_origin, where, sizeof(where));
			return err_at(r, &c->version_origin, "%s %s publishes no %s, but "
				      "artifact '%s' requires it (verify.%s, %s): use %s %s "
				      "or later%s%s", c->name, c->version, ps->missing, a->name,
				      ps->method, where, c->name, ps->version,
				      ps->instead ? ", or " : "", ps->instead ? ps->instead : "");
		}
	}
	return 0;
}
