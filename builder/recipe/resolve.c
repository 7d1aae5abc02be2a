/*
 * Resolve a recipe: load the image recipe and its includes, merge override
 * files, $WINBUILD_SET and --set over it (in that order), load every
 * component file beneath its image settings, check the schema, expand
 * variables, rewrite URLs through mirrors (urls_apply_mirrors), apply
 * replacements and policy, and convert the result into a struct plan.
 *
 * This file is the driver alone: plan_resolve() and the order of the
 * passes. Each pass is a section of the recipe, converted by the file of
 * recipe/ that owns it (recipe/resolve_int.h lists them, with their
 * prefixes); the order matters where a pass reads what an earlier one set
 * (the image's vars before images: and mirrors:, the policy before
 * packer.payload_url and the artifacts, every artifact before replace:).
 */
#include <string.h>

#include "lib/buf.h"
#include "recipe/resolve_int.h"

/* windows:, node:, images:, builders, policy, the ISO, packer:, the
 * image's authenticode: and mirrors:, before any component */
static int convert_image(struct resolver *r)
{
	const struct rnode *top = r->top;

	if (top_convert_image(r) || top_convert_windows(r) || top_convert_node(r))
		return -1;
	top_convert_vars(r);
	if (images_convert(r, rnode_get(top, "images"), rnode_get(top, "node")) ||
	    builders_convert(r, top) || policy_resolve(r) ||
	    images_check_policy(r) ||  /* the recipe's own; again after the components */
	    builders_iso(r, rnode_get(top, "windows")) ||
	    builders_convert_packer(r, rnode_get(top, "packer")) ||
	    authpol_convert(r, rnode_get(top, "authenticode"), NULL,
			    &r->plan->authenticode, "") ||
	    authpol_layers(r))
		return -1;
	authpol_tighten(r);
	return urls_convert_mirrors(r, top);
}

/* the components and windows.updates, then what needs all of them */
static int convert_components(struct resolver *r)
{
	const struct rnode *top = r->top;

	if (components_convert_all(r, rnode_get(top, "components")) ||
	    updates_convert(r, rnode_get(rnode_get(top, "windows"), "updates"),
			    &r->image_vars))
		return -1;
	/* the components' images too: images_check_policy() again */
	if (images_finish(r, rnode_get(top, "node")) || images_check_policy(r) ||
	    components_dest_clashes(r) || components_dirs_clash(r) ||
	    services_order(r) || versions_agree(r, &r->image_vars))
		return -1;
	versions_warnings(r);
	return versions_since_met(r) ||
	       authpol_site_signing(r, rnode_get(top, "site_signing")) ||
	       top_check_replace(r) ? -1 : 0;
}

int plan_resolve(const struct plan_inputs *in, struct plan *plan,
		 struct wb_err *e)
{
	struct resolver r;
	int ret;

	memset(plan, 0, sizeof(*plan));
	memset(&r, 0, sizeof(r));
	r.plan = plan;
	r.in = in;
	r.e = e;
	plan->recipe_path = xstrdup(in->recipe);
	ret = layers_load(&r, in);
	if (!ret)
		ret = convert_image(&r);
	if (!ret)
		ret = convert_components(&r);
	if (!ret)
		top_finish(&r);
	rs_release(&r);
	if (ret)
		plan_release(plan);
	return ret;
}
