/*
 * images: the container images a recipe pre-pulls (issue 33), checked at
 * plan time: each entry names its registry and repository in full, a tag
 * for people and a digest for the build. A tag alone is refused at its
 * file:line:col unless the entry says why it is not pinned yet
 * (needs_pin), like an artifact's verify.needs_pin.
 *
 *   images:
 *     pause:
 *       name: registry.k8s.io/pause
 *       tag: "3.10"
 *       digest: sha256:...
 *       allow_foreign_layers: false   # default: refuse non-distributable layers
 *
 * The entry keyed `pause` is the node's pause image: node.pause_image
 * defaults to its name:tag, and an explicit node.pause_image must agree.
 *
 * A component file may declare images: of the same shape (pulled only
 * while the component is enabled); they join the recipe's, and one key
 * declared by two sources is an error naming both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/imageref.h"
#include "recipe/resolve_int.h"
#include "recipe/schema.h"

void plan_images_release(struct plan *p)
{
	for (size_t i = 0; i < p->nimages; i++) {
		free(p->images[i].key);
		free(p->images[i].name);
		free(p->images[i].tag);
		free(p->images[i].digest);
		free(p->images[i].needs_pin);
	}
	free(p->images);
	p->images = NULL;
	p->nimages = 0;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct plan_image *)a)->key, ((const struct plan_image *)b)->key);
}

static int convert_image(struct resolver *r, const struct rnode *in, struct plan_image *img)
{
	const struct rnode *name = rnode_get(in, "name"), *tag = rnode_get(in, "tag"),
			   *digest = rnode_get(in, "digest"), *pin = rnode_get(in, "needs_pin");
	struct image_ref ref;
	struct wb_err pe = WB_ERR_INIT;

	img->key = xstrdup(in->key);
	img->origin = in->key_origin;
	if (name_check(r, &in->key_origin, "image key", in->key))
		return -1;
	if (image_ref_parse(name->scalar, &ref, &pe) < 0)
		return err_at(r, &name->origin, "images.%s.name: %s", in->key, pe.msg);
	if (ref.tag || ref.digest[0]) {
		image_ref_release(&ref);
		return err_at(r, &name->origin, "images.%s.name: '%s' holds a tag or digest; "
			      "write them as tag: and digest:", in->key, name->scalar);
	}
	image_ref_release(&ref);
	img->name = xstrdup(name->scalar);
	if (tag) {
		struct buf b = BUF_INIT;
		int bad;

		buf_addf(&b, "%s:%s", name->scalar, tag->scalar);
		bad = image_ref_parse(b.ptr, &ref, &pe) < 0 || !ref.tag ||
		      strcmp(ref.tag, tag->scalar);
		if (!bad)
			image_ref_release(&ref);
		buf_release(&b);
		if (bad)
			return err_at(r, &tag->origin, "images.%s.tag: '%s' is not a valid tag "
				      "([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})", in->key, tag->scalar);
		img->tag = xstrdup(tag->scalar);
	}
	if (digest) {
		if (!imageref_digest_ok(digest->scalar))
			return err_at(r, &digest->origin, "images.%s.digest: '%s' is not sha256: "
				      "and 64 lowercase hex digits", in->key, digest->scalar);
		img->digest = xstrdup(digest->scalar);
	}
	if (pin)
		img->needs_pin = xstrdup(pin->scalar);
	if (!img->digest && !img->needs_pin)
		return err_at(r, &in->key_origin, "images.%s: '%s%s%s' has no digest: pin it "
			      "(digest: sha256:...), or say why it is not pinned yet "
			      "(needs_pin: REASON) and let 'winbuild lock' settle it", in->key,
			      img->name, img->tag ? ":" : "", img->tag ? img->tag : "");
	img->allow_foreign_layers = schema_bool(rnode_get(in, "allow_foreign_layers")) == 1;
	return 0;
}

/*
 * The entries of N (an images: map; NULL: none) added to the plan; WHERE
 * names their source in a clash ("" for the image recipe and its layers,
 * "components.NAME" for a component file). A key two sources declare is
 * an error at the later one, naming both.
 */
static int images_add(struct resolver *r, const struct rnode *n, const char *where)
{
	struct plan *p = r->plan;

	for (size_t i = 0; n && i < n->nr; i++) {
		struct plan_image *img;

		for (size_t k = 0; k < p->nimages; k++) {
			char at[512];

			if (strcmp(p->images[k].key, n->items[i]->key))
				continue;
			wb_origin_format(&p->images[k].origin, at, sizeof(at));
			return err_at(r, &n->items[i]->key_origin, "images.%s%s%s: image key '%s' "
				      "is also declared at %s; give one of them another key",
				      n->items[i]->key, *where ? " of " : "", where,
				      n->items[i]->key, at);
		}
		p->images = xrealloc(p->images, (p->nimages + 1) * sizeof(*p->images));
		img = &p->images[p->nimages++];
		memset(img, 0, sizeof(*img));
		if (convert_image(r, n->items[i], img))
			return -1;
	}
	return 0;
}

int convert_images(struct resolver *r, const struct rnode *n, const struct rnode *node)
{
	(void)node;
	return images_add(r, n, "");
}

int convert_component_images(struct resolver *r, const struct rnode *n, const char *comp)
{
	char *where = xasprintf("components.%s", comp);
	int ret = images_add(r, n, where);

	free(where);
	return ret;
}

int images_finish(struct resolver *r, const struct rnode *node)
{
	struct plan *p = r->plan;
	const struct rnode *explicit_pause = rnode_get(node, "pause_image");

	if (!p->nimages)
		return 0;
	qsort(p->images, p->nimages, sizeof(*p->images), by_key);
	/* containerd keeps one image per name: a second entry of the same
	 * name:tag would replace the first in the VM (06-images.ps1) */
	for (size_t i = 0; i < p->nimages; i++)
		for (size_t k = 0; k < i; k++) {
			const struct plan_image *a = &p->images[k], *b = &p->images[i];
			char at[512];

			if (strcmp(a->name, b->name) || (a->tag == NULL) != (b->tag == NULL) ||
			    (a->tag && strcmp(a->tag, b->tag)))
				continue;
			wb_origin_format(&a->origin, at, sizeof(at));
			return err_at(r, &b->origin, "images.%s: '%s%s%s' is also images.%s (%s): "
				      "containerd keeps one image per name, the second import "
				      "would replace the first; give each its own name or tag",
				      b->key, b->name, b->tag ? ":" : "", b->tag ? b->tag : "",
				      a->key, at);
		}
	for (size_t i = 0; i < p->nimages; i++) {
		struct plan_image *img = &p->images[i];
		char *ref;

		if (strcmp(img->key, "pause"))
			continue;
		ref = xasprintf("%s%s%s", img->name, img->tag ? ":" : "", img->tag ? img->tag : "");
		if (explicit_pause && strcmp(explicit_pause->scalar, ref)) {
			int ret = err_at(r, &explicit_pause->origin, "node.pause_image '%s' is not "
					 "the image images.pause pre-pulls ('%s'): the node would "
					 "pull its sandbox image over the network; make them agree",
					 explicit_pause->scalar, ref);

			free(ref);
			return ret;
		}
		/* containerd's sandbox image is the pre-pulled one */
		free(p->pause_image);
		p->pause_image = ref;
	}
	return 0;
}
