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
 *       cosign:                       # the pin's cosign signature (trust/ocisig.h)
 *         identity: krel-trust@k8s-releng-prod.iam.gserviceaccount.com
 *         issuer: https://accounts.google.com
 *         trusted_root: trust/sigstore/trusted_root.json   # default: the shipped one
 *       # or cosign: {key: cosign.pub} (its Rekor entry under the trusted root)
 *       enabled: true                 # false: left out (an override drops it)
 *
 * The entry keyed `pause` is the node's pause image: node.pause_image
 * defaults to its name:tag, and an explicit node.pause_image must agree.
 * An entry with `enabled: false` is left out of the plan (neither listed,
 * pulled, staged nor locked), like a disabled component: an override
 * drops a shipped image that way, and a dropped pause leaves
 * node.pause_image to the recipe or the platform's default.
 *
 * A component file may declare images: of the same shape (pulled only
 * while the component is enabled); they join the recipe's, and one key
 * declared by two sources is an error naming both.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/fs.h"
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
		free(p->images[i].cosign.identity);
		free(p->images[i].cosign.issuer);
		free(p->images[i].cosign.key);
		free(p->images[i].cosign.trusted_root);
	}
	free(p->images);
	p->images = NULL;
	p->nimages = 0;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct plan_image *)a)->key, ((const struct plan_image *)b)->key);
}

/* The Kubernetes image promoter signs every image it promotes to
 * registry.k8s.io keyless as this identity, from this issuer (kubernetes.io,
 * "Verify Signed Kubernetes Artifacts": cosign verify --certificate-identity
 * krel-trust@k8s-releng-prod.iam.gserviceaccount.com
 * --certificate-oidc-issuer https://accounts.google.com): the default for
 * an image named there. */
#define K8S_REGISTRY "registry.k8s.io/"
#define K8S_SIGNER "krel-trust@k8s-releng-prod.iam.gserviceaccount.com"
#define K8S_ISSUER "https://accounts.google.com"

/* A string of images.<key>.cosign, the image's vars expanded (an override
 * names the demo's or a site's signer and root through them). */
static char *cosign_str(struct resolver *r, const char *key, const struct rnode *n,
			const char *what)
{
	char *w = xasprintf("images.%s.cosign.%s", key, what);
	char *v = expand(r, &r->image_vars, n, w);

	free(w);
	return v;
}

/* A path of images.<key>.cosign, relative to its file, that must exist. */
static int cosign_path(struct resolver *r, const char *key, const struct rnode *n,
		       const char *what, char **out)
{
	char *v = cosign_str(r, key, n, what);

	if (!v)
		return -1;
	*out = relative_to(n->origin.file, v);
	free(v);
	if (!fs_exists(*out))
		return err_at(r, &n->origin, "images.%s.cosign.%s: file '%s' does not exist",
			      key, what, *out);
	return 0;
}

static int convert_cosign(struct resolver *r, const struct rnode *in, struct plan_image *img)
{
	const struct rnode *n = rnode_get(in, "cosign");
	const struct rnode *id = rnode_get(n, "identity"), *iss = rnode_get(n, "issuer");
	const struct rnode *key = rnode_get(n, "key"), *root = rnode_get(n, "trusted_root");
	struct plan_image_cosign *c = &img->cosign;
	int k8s = !strncmp(img->name, K8S_REGISTRY, strlen(K8S_REGISTRY));

	c->origin = n ? n->origin : in->key_origin;
	if (!n && !k8s)
		return 0;
	if (key && (id || iss))
		return err_at(r, &n->origin, "images.%s.cosign: a 'key', or an 'identity' and "
			      "an 'issuer' (keyless), not both", in->key);
	if (key)
		return cosign_path(r, in->key, key, "key", &c->key) ||
		       (root && cosign_path(r, in->key, root, "trusted_root", &c->trusted_root));
	if (!k8s && (!id || !iss))
		return err_at(r, &n->origin, "images.%s.cosign: needs 'identity' and 'issuer' "
			      "(the signer and its OIDC issuer), or 'key'", in->key);
	c->defaulted = !id || !iss;
	c->identity = id ? cosign_str(r, in->key, id, "identity") : xstrdup(K8S_SIGNER);
	c->issuer = iss ? cosign_str(r, in->key, iss, "issuer") : xstrdup(K8S_ISSUER);
	if (!c->identity || !c->issuer)
		return -1;
	return root ? cosign_path(r, in->key, root, "trusted_root", &c->trusted_root) : 0;
}

/* policy.require: signature counts an image's cosign signature: an image
 * without one is refused, as an artifact without a signature is
 * (policy_check_artifact). Called once the policy is resolved. */
int images_check_policy(struct resolver *r)
{
	const struct trust_policy *pol = &r->plan->policy;

	for (size_t i = 0; pol->require_signature && i < r->plan->nimages; i++) {
		const struct plan_image *im = &r->plan->images[i];
		char where[256];

		if (im->cosign.identity || im->cosign.key)
			continue;
		wb_origin_format(&pol->require_origin, where, sizeof(where));
		return err_at(r, &im->origin, "images.%s: '%s' has no signature requirement, "
			      "but policy.require is 'signature' (%s): add images.%s.cosign "
			      "(identity and issuer, or key)", im->key, im->name, where, im->key);
	}
	return 0;
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
	if (!name)
		return err_at(r, &in->key_origin, "missing required key 'name' in 'images.%s'",
			      in->key);
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
	return convert_cosign(r, in, img);
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

		if (schema_bool(rnode_get(n->items[i], "enabled")) == 0)
			continue;
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
