/* The image source seam (imgsource.h). */
#include <stdlib.h>
#include <string.h>

#include "fetch/imgsource.h"
#include "lib/buf.h"

/* Where IM is pulled from: NULL (its registry), or *BASE (new string)
 * from the plan's first mirror rule whose `from` is a prefix of
 * https://HOST/ (`winbuild mirror` exports images as a static registry
 * tree, emit/mirror.h). A registry mirror is https, or http where
 * policy.allow_http allows it as it does for downloads: what is pulled is
 * pinned by digest (and its cosign signature checked), so the wire adds
 * nothing to trust, and no token is sent over http (registry_http.c).
 * image-builder and containerd pull over whatever the host's
 * containerd config allows (containerd's hosts.toml `server = "http://..."`);
 * winbuild asks the recipe's policy instead. A rule to file:// is
 * refused, as is an image without a rule under mirror_only (unless
 * OFFLINE: the cache only, nothing is asked of anyone). */
static int registry_base(const struct plan *plan, const struct plan_image *im, int offline,
			 char **base, struct wb_err *e)
{
	char *u = xasprintf("https://%.*s/", (int)strcspn(im->name, "/"), im->name);
	int ret = 0;

	*base = NULL;
	for (size_t i = 0; i < plan->nmirrors; i++) {
		const struct plan_mirror *m = &plan->mirrors[i];
		size_t n = strlen(m->from);

		if (strncmp(u, m->from, n))
			continue;
		if (strncmp(m->to, "https://", 8) &&
		    (strncmp(m->to, "http://", 7) || !plan->policy.allow_http))
			ret = wb_origin_error(e, &m->origin, "images.%s: the mirror rule to '%s' "
					      "is not https%s: a registry mirror is https, or "
					      "http where policy.allow_http is true", im->key, m->to,
					      strncmp(m->to, "http://", 7) ? "" :
					      ", and policy.allow_http is false");
		else
			*base = xasprintf("%s%s", m->to, u + n);
		free(u);
		return ret;
	}
	if (plan->mirror_only && !offline)
		ret = wb_origin_error(e, &plan->mirror_only_origin, "images.%s: mirror_only, "
				      "and no mirror rule for '%s' (the registry of '%s')",
				      im->key, u, im->name);
	free(u);
	return ret;
}

int imgsource_for(struct imgsource *src, const struct plan *plan, const struct plan_image *im,
		  const struct registry_opts *common, struct wb_err *e)
{
	memset(src, 0, sizeof(*src));
	src->kind = IMGSOURCE_REGISTRY;
	src->o = *common;
	src->o.allow_foreign = im->allow_foreign_layers;
	src->o.mirror_only = plan->mirror_only;
	if (registry_base(plan, im, common->offline, &src->base, e) < 0)
		return -1;
	src->o.base = src->base;
	return 0;
}

void imgsource_release(struct imgsource *src)
{
	free(src->base);
	memset(src, 0, sizeof(*src));
}

int imgsource_pull(struct cache *c, const struct imgsource *src, const struct image_ref *ref,
		   struct registry_image *img, struct wb_err *e)
{
	switch (src->kind) {
	case IMGSOURCE_REGISTRY:
		return registry_pull(c, ref, &src->o, img, e);
	}
	return wb_error(e, WB_EUSAGE, "image '%s/%s': unknown source kind %d", ref->host,
			ref->repo, (int)src->kind);
}

int imgsource_load(struct cache *c, const struct plan_image *im, const char *os_version,
		   struct registry_image *img, struct wb_err *e)
{
	struct trust_policy policy;
	struct fetch_transport t;
	struct imgsource src;
	struct image_ref ref;
	int r;

	if (!im->digest)
		return wb_error(e, WB_EUSAGE, "images.%s: not pinned (needs_pin: %s)", im->key,
				im->needs_pin);
	if (imgsource_ref(im, &ref, e) < 0)
		return -1;
	/* every kind's bytes are in the cache under their digests once
	 * fetched: read back as the registry client's offline pull reads
	 * them, which asks nothing of anyone (no transport is used) */
	memset(&policy, 0, sizeof(policy));
	t.policy = &policy;
	t.cacert = NULL;
	memset(&src, 0, sizeof(src));
	src.kind = IMGSOURCE_REGISTRY;
	src.o.t = &t;
	src.o.os_version = os_version;
	src.o.allow_foreign = im->allow_foreign_layers;
	src.o.offline = 1;
	r = registry_pull(c, &ref, &src.o, img, e);
	image_ref_release(&ref);
	if (r < 0)
		wb_error_prefix(e, "images.%s", im->key);
	return r;
}
