/* The image source seam (imgsource.h). */
#include <stdlib.h>
#include <string.h>

#include "fetch/imgsource.h"
#include "lib/buf.h"

int imgsource_ref(const struct plan_image *im, struct image_ref *ref, struct wb_err *e)
{
	char *s = xasprintf("%s%s%s%s%s", im->name, im->tag ? ":" : "", im->tag ? im->tag : "",
			    im->digest ? "@" : "", im->digest ? im->digest : "");
	int r = image_ref_parse(s, ref, e);

	free(s);
	return r;
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
