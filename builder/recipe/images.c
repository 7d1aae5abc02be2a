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
 *       layout: DIR-OR-TAR            # or from an OCI image layout on disk
 *       cosign:                       # the pin's cosign signature (trust/ocisig.h)
 *         identity: SIGNER            # default: its registry's signer
 *         issuer: OIDC-ISSUER         # (recipes/trust/image-signers.yaml)
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
 *
 * @where the registry client (OCI distribution pull by digest, the token
 *   flow, credentials, every manifest and blob verified) -- a recipe's and a
 *   component's `images:`, plan-time checks (`struct plan_image`)
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
		free(p->images[i].cosign.default_registry);
		free(p->images[i].layout);
	}
	free(p->images);
	p->images = NULL;
	p->nimages = 0;
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct plan_image *)a)->key, ((const struct plan_image *)b)->key);
}

/* The default signer of IMG's registry: the first entry of the shipped
 * recipes/trust/image-signers.yaml (plan_inputs.data_dir) whose
 * `registry` is a prefix of its name, into C (identity, issuer and where
 * the entry is). 1 found, 0 none (or no data dir), -1 an error. The
 * promoter's identity is data there, not a string here (issue 44).
 * @where where a container image's cosign signature is checked -- a
 *   registry's default signer is data, `recipes/trust/image-signers.yaml`
 *   (`tests/cli/images_signers.bats`)
 */
static int default_signer(struct resolver *r, const struct plan_image *img,
			  struct plan_image_cosign *c)
{
	struct rnode *doc = NULL;
	const struct rnode *list, *kind;
	char *path;
	int ret = 0;

	if (!r->in->data_dir)
		return 0;
	path = xasprintf("%s/recipes/trust/image-signers.yaml", r->in->data_dir);
	if (rnode_load_file(path, &r->plan->interned, &doc, r->e) < 0) {
		wb_error_prefix(r->e, "the default image signers");
		free(path);
		return -1;
	}
	free(path);
	kind = rnode_get(doc, "kind");
	list = rnode_get(doc, "signers");
	if (!kind || !kind->scalar || strcmp(kind->scalar, "image-signers") ||
	    !list || list->type != RNODE_LIST) {
		ret = err_at(r, &doc->origin, "expected 'kind: image-signers' and a "
			     "'signers' list");
		goto out;
	}
	for (size_t i = 0; i < list->nr; i++) {
		const struct rnode *reg = rnode_get(list->items[i], "registry");
		const struct rnode *id = rnode_get(list->items[i], "identity");
		const struct rnode *iss = rnode_get(list->items[i], "issuer");

		if (!reg || !reg->scalar || !id || !id->scalar || !iss || !iss->scalar) {
			ret = err_at(r, &list->items[i]->origin, "a signer needs 'registry', "
				     "'identity' and 'issuer'");
			goto out;
		}
		if (strncmp(img->name, reg->scalar, strlen(reg->scalar)))
			continue;
		c->identity = c->identity ? c->identity : xstrdup(id->scalar);
		c->issuer = c->issuer ? c->issuer : xstrdup(iss->scalar);
		c->default_origin = list->items[i]->origin;
		c->default_registry = xstrndup(reg->scalar, strcspn(reg->scalar, "/"));
		ret = 1;
		break;
	}
out:
	rnode_free(doc);
	return ret;
}

/* A string of images.<key>.cosign, the image's vars expanded (an override
 * names the demo's or a site's signer and root through them). */
static char *cosign_str(struct resolver *r, const char *key, const struct rnode *n,
			const char *what)
{
	char *w = xasprintf("images.%s.cosign.%s", key, what);
	char *v = vars_expand(r, &r->image_vars, n, w);

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
	*out = rs_relative_to(n->origin.file, v);
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
	int found;

	c->origin = n ? n->origin : in->key_origin;
	if (key && (id || iss))
		return err_at(r, &n->origin, "images.%s.cosign: a 'key', or an 'identity' and "
			      "an 'issuer' (keyless), not both", in->key);
	if (key)
		return cosign_path(r, in->key, key, "key", &c->key) ||
		       (root && cosign_path(r, in->key, root, "trusted_root", &c->trusted_root));
	if ((id && !(c->identity = cosign_str(r, in->key, id, "identity"))) ||
	    (iss && !(c->issuer = cosign_str(r, in->key, iss, "issuer"))))
		return -1;
	/* what the image leaves out, its registry's signer gives */
	found = (!id || !iss) ? default_signer(r, img, c) : 0;
	if (found < 0)
		return -1;
	if (!n && !found)
		return 0;
	if (!c->identity || !c->issuer)
		return err_at(r, &n->origin, "images.%s.cosign: needs 'identity' and 'issuer' "
			      "(the signer and its OIDC issuer), or 'key'", in->key);
	c->defaulted = found;
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

/* images.<key>.layout: an OCI image layout on disk as the image's source
 * (fetch/imgsource.h), relative to the file that names it, pinned as any
 * image (the digest the pull checks: a layout is bytes someone copied,
 * never a trust anchor), without a '..' segment. */
static int convert_layout(struct resolver *r, const struct rnode *in, struct plan_image *img)
{
	const struct rnode *n = rnode_get(in, "layout");
	const char *v = n ? n->scalar : NULL;
	size_t len;

	if (!n)
		return 0;
	len = v ? strlen(v) : 0;
	if (!len || !strcmp(v, "..") || !strncmp(v, "../", 3) || strstr(v, "/../") ||
	    (len >= 3 && !strcmp(v + len - 3, "/..")))
		return err_at(r, &n->origin, "images.%s.layout: '%s' is not a path without "
			      "'..' segments", in->key, v ? v : "");
	if (!img->digest)
		return err_at(r, &n->origin, "images.%s.layout: an image from a layout needs "
			      "its digest (the pin the layout is checked against)", in->key);
	img->layout = rs_relative_to(n->origin.file, v);
	if (!fs_exists(img->layout))
		return err_at(r, &n->origin, "images.%s.layout: '%s' does not exist", in->key,
			      img->layout);
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
	if (urls_name_check(r, &in->key_origin, "image key", in->key))
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
	return convert_layout(r, in, img) || convert_cosign(r, in, img);
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

int images_convert(struct resolver *r, const struct rnode *n, const struct rnode *node)
{
	(void)node;
	return images_add(r, n, "");
}

int images_convert_component(struct resolver *r, const struct rnode *n, const char *comp)
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
