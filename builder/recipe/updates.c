/*
 * windows.updates: the Windows updates (.msu, .cab) an image installs with
 * DISM in the build VM (docs/updates.md), in install order.
 *
 *   windows:
 *     updates:
 *       - kb: KB5043080
 *         checkpoint: true
 *         url: https://catalog.s.download.windowsupdate.com/.../windows11.0-kb5043080-x64_<sha1>.msu
 *         sha1: <the 40 hex digits of the Catalog file name>
 *         needs_pin: the Catalog publishes no SHA-256   # or sha256: ...
 *         authenticode: { roots: ms-roots.pem, publishers: [...] }
 *       - kb: KB5050009
 *         ...
 *         expect_build: "26100.2894"
 *
 * Each entry becomes an ordinary artifact of the synthetic component
 * "windows-updates" (PLAN_UPDATES_COMPONENT), converted by the same code as
 * a component's (recipe/artifacts.c): mirrors, mirror_only, replace.url,
 * the top-level signatures:, needs_pin, the lock, the SBOM, `winbuild
 * mirror`, --offline --locked and the cache come with it. What an update
 * adds to its verify spec: the Catalog's SHA-1 as a pin (trust/verify.c
 * verify_pins, on every path to bytes) and an `authenticode` requirement
 * (trust/m_authenticode.c) that the fetch checks before the bytes are
 * cached. image-builder instead installs updates online through Windows
 * Update inside the VM (ansible/windows/roles/updates, windows_updates_kbs)
 * with nothing checked on the host; here every byte is verified before the
 * VM exists.
 *
 * @where Windows updates (`windows.updates`; docs/updates.md) -- each update
 *   an artifact of the synthetic component `windows-updates`, install order
 *   checkpoints first (`struct plan_update`)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/buf.h"
#include "lib/hex.h"
#include "recipe/resolve_int.h"
#include "recipe/schema.h"
#include "trust/method.h"

#define UPDATES_DIR "C:\\ProgramData\\winbuild\\updates\\"
#define UPDATES_MAX 99

extern const struct trust_method trust_m_authenticode;

void plan_updates_release(struct plan *p)
{
	for (size_t i = 0; i < p->nupdates; i++) {
		free(p->updates[i].kb);
		free(p->updates[i].artifact);
		free(p->updates[i].dest_win);
		free(p->updates[i].expect_build);
	}
	free(p->updates);
	p->updates = NULL;
	p->nupdates = 0;
}

/* "KB" and 6 to 8 digits, either case. */
static int kb_ok(const char *s)
{
	size_t n = strlen(s);

	return n >= 8 && n <= 10 && !strncasecmp(s, "kb", 2) &&
	       strspn(s + 2, "0123456789") == n - 2;
}

/* "26100.2894": the build and the UBR, digits each. */
static int build_ok(const char *s)
{
	size_t a = strspn(s, "0123456789");

	return a >= 4 && a <= 6 && s[a] == '.' && strspn(s + a + 1, "0123456789") >= 1 &&
	       strspn(s + a + 1, "0123456789") <= 6 && !s[a + 1 + strspn(s + a + 1, "0123456789")];
}

/* The 40 hex digits after the last '_' of a Catalog file name
 * ("..._<sha1>.msu"), or NULL. */
static const char *name_sha1(const char *filename)
{
	const char *u = strrchr(filename, '_');

	if (!u || strlen(u + 1) < 41 || u[41] != '.' || hex_span(u + 1, 40, HEX_ANY_CASE) != 40)
		return NULL;
	return u + 1;
}

static struct rnode *scalar_node(const char *key, const char *value,
				 const struct wb_origin *o)
{
	struct rnode *n = rnode_new_scalar(value, o);

	n->key = xstrdup(key);
	return n;
}

static struct rnode *cloned(const struct rnode *from, const char *key)
{
	struct rnode *n = rnode_clone(from);

	free(n->key);
	n->key = xstrdup(key);
	return n;
}

/*
 * The artifact map of entry EN, as a component file would spell it: its
 * first URL, verify {sha256 | needs_pin, authenticode {roots, signatures}},
 * install.to DEST. New tree.
 */
static struct rnode *artifact_node(const struct rnode *en, const char *name,
				   const struct rnode *url, const char *dest)
{
	struct rnode *an = rnode_new(RNODE_MAP, &en->origin), *vn, *in, *au;
	const struct rnode *auth = rnode_get(en, "authenticode"), *x;

	an->key = xstrdup(name);
	an->key_origin = en->origin;
	rnode_append(an, cloned(url, "url"));
	vn = rnode_new(RNODE_MAP, &en->origin);
	vn->key = xstrdup("verify");
	if ((x = rnode_get(en, "sha256")))
		rnode_append(vn, cloned(x, "sha256"));
	if ((x = rnode_get(en, "needs_pin")))
		rnode_append(vn, cloned(x, "needs_pin"));
	au = rnode_new(RNODE_MAP, &auth->origin);
	au->key = xstrdup("authenticode");
	if ((x = rnode_get(auth, "roots")))
		rnode_append(au, cloned(x, "roots"));
	if ((x = rnode_get(auth, "signatures")))
		rnode_append(au, cloned(x, "signatures"));
	rnode_append(vn, au);
	rnode_append(an, vn);
	in = rnode_new(RNODE_MAP, &en->origin);
	in->key = xstrdup("install");
	rnode_append(in, scalar_node("to", dest, &en->origin));
	rnode_append(an, in);
	return an;
}

static int convert_update(struct resolver *r, const struct rnode *en, size_t pos,
			  const struct plan_component *c, const struct vars *vs,
			  struct plan_update *u)
{
	struct plan *p = r->plan;
	const struct rnode *kb = rnode_get(en, "kb"), *sha1 = rnode_get(en, "sha1");
	const struct rnode *url = rnode_get(en, "url"), *urls = rnode_get(en, "urls");
	const struct rnode *auth = rnode_get(en, "authenticode"), *x;
	struct plan_artifact *a;
	struct rnode *an;
	const char *ext, *named;
	char *dest;
	int ret;

	if (!kb_ok(kb->scalar))
		return rs_bad_grammar(r, &kb->origin, "windows.updates[].kb", kb->scalar,
				   "KB and 6 to 8 digits (KB5034439)");
	u->kb = xstrdup(kb->scalar);
	u->kb[0] = 'K';
	u->kb[1] = 'B';
	u->artifact = rs_lower(xstrdup(kb->scalar));
	u->origin = en->origin;
	for (size_t i = 0; i < p->nupdates; i++)
		if (&p->updates[i] != u && p->updates[i].kb && !strcmp(p->updates[i].kb, u->kb))
			return err_at(r, &kb->origin, "windows.updates: %s is listed twice",
				      u->kb);
	if (!!url + !!urls != 1 || (urls && !urls->nr))
		return err_at(r, &en->origin, "windows.updates %s needs 'url' or a non-empty "
			      "'urls' list (the Update Catalog's download URL, or your "
			      "mirror's)", u->kb);
	if (!hex_is(sha1->scalar, 40, HEX_ANY_CASE))
		return err_at(r, &sha1->origin, "windows.updates %s: 'sha1' must be 40 hex "
			      "digits (the one in the Update Catalog's file name)", u->kb);
	if (!!rnode_get(en, "sha256") + !!rnode_get(en, "needs_pin") != 1)
		return err_at(r, &en->origin, "windows.updates %s needs 'sha256' (a pin) or "
			      "'needs_pin' (why it is not pinned yet; 'winbuild lock "
			      "--accept-new' pins it once its Authenticode signature verifies)",
			      u->kb);
	if (!rnode_get(auth, "roots"))
		return err_at(r, &auth->origin, "windows.updates %s: 'authenticode.roots' is "
			      "required (the PEM file of the roots Microsoft's update signer "
			      "chains to)", u->kb);
	if ((x = rnode_get(auth, "require")) && schema_bool(x) == 0)
		return err_at(r, &x->origin, "windows.updates %s: an update's Authenticode "
			      "signature is always required", u->kb);
	u->checkpoint = schema_bool(rnode_get(en, "checkpoint")) == 1;
	u->must_apply = schema_bool(rnode_get(en, "must_apply")) == 1;
	if ((x = rnode_get(en, "expect_build"))) {
		if (!build_ok(x->scalar))
			return rs_bad_grammar(r, &x->origin, "windows.updates[].expect_build",
					   x->scalar, "the OS build and UBR (26100.2894)");
		u->expect_build = xstrdup(x->scalar);
	}
	if (!url)
		url = urls->items[0];
	ext = strrchr(url->scalar, '.');
	if (!ext || (strcasecmp(ext, ".msu") && strcasecmp(ext, ".cab")))
		return err_at(r, &url->origin, "windows.updates %s: '%s' is not an .msu or "
			      ".cab file (what DISM /Add-Package installs)", u->kb, url->scalar);
	/* the install order in the name: 05-kb5043080.msu */
	dest = xasprintf(UPDATES_DIR "%02zu-%s.%s", pos + 1, u->artifact,
			 strcasecmp(ext, ".cab") ? "msu" : "cab");
	u->dest_win = xstrdup(dest);
	an = artifact_node(en, u->artifact, url, dest);
	free(dest);
	if (plan_find_artifact(p, u->artifact)) {
		rnode_free(an);
		return err_at(r, &kb->origin, "windows.updates %s: an artifact named '%s' "
			      "already exists", u->kb, u->artifact);
	}
	x = rnode_get(rnode_get(r->top, "replace"), u->artifact);
	if (x && rnode_get(x, "verify")) {
		rnode_free(an);
		return err_at(r, &rnode_get(x, "verify")->origin, "'replace.%s.verify': an "
			      "update is verified by its windows.updates entry (sha1, sha256, "
			      "authenticode); a replace may give only 'url'", u->artifact);
	}
	ALLOC_GROW(p->artifacts, p->nartifacts + 1, p->alloc_artifacts);
	a = &p->artifacts[p->nartifacts++];
	memset(a, 0, sizeof(*a));
	/* before the conversion: the policy check keeps needs_pin for it */
	a->verify.sha1 = rs_lower(xstrdup(sha1->scalar));
	a->verify.sha1_origin = sha1->origin;
	ret = artifacts_convert(r, an, c, vs, a);
	rnode_free(an);
	if (ret)
		return -1;
	/* the further URLs of `urls`, in order, mirrored like the first (a
	 * replace.url replaces them all) */
	for (size_t i = 1; urls && !a->replaced && i < urls->nr; i++) {
		const struct rnode *un = urls->items[i];
		char what[64];

		snprintf(what, sizeof(what), "windows.updates %s urls", u->kb);
		if (urls_check(r, un->scalar, &un->origin, what) ||
		    urls_layout_check(r, un->scalar, &un->origin, what) ||
		    urls_apply_mirrors(r, un->scalar, &un->origin, "URL", !a->replaced, &a->urls))
			return -1;
	}
	named = name_sha1(a->filename);
	if (named && strncasecmp(named, a->verify.sha1, 40))
		return err_at(r, &sha1->origin, "windows.updates %s: 'sha1' is %s, but the "
			      "file name '%s' names %.40s: copy the SHA-1 from the Update "
			      "Catalog's file name", u->kb, a->verify.sha1, a->filename, named);
	/* publishers: one param each (subjects hold commas) */
	for (size_t i = 0; i < a->verify.nreqs; i++) {
		struct trust_req *q = &a->verify.reqs[i];

		if (q->method != &trust_m_authenticode)
			continue;
		x = rnode_get(auth, "publishers");
		for (size_t k = 0; x && k < x->nr; k++) {
			const char *pub = x->items[k]->scalar;

			if (!*pub)
				return err_at(r, &x->items[k]->origin, "windows.updates %s: an "
					      "empty publisher", u->kb);
			trust_req_set_param(q, "publisher", pub, 0, &x->items[k]->origin);
		}
	}
	return 0;
}

int updates_convert(struct resolver *r, const struct rnode *n, const struct vars *image_vars)
{
	struct plan *p = r->plan;
	struct plan_component *c;
	size_t pos = 0, last;
	char ctx[64];

	if (!n || !n->nr)
		return 0;
	/* two digits of install order in the staged names (01-kb....msu) */
	if (n->nr > UPDATES_MAX)
		return err_at(r, &n->origin, "windows.updates lists %zu updates, more than %d",
			      n->nr, UPDATES_MAX);
	snprintf(ctx, sizeof(ctx), "windows.updates");
	if (plan_find_component(p, PLAN_UPDATES_COMPONENT))
		return err_at(r, &n->origin, "windows.updates: a component named '%s' already "
			      "exists", PLAN_UPDATES_COMPONENT);
	ALLOC_GROW(p->components, p->ncomponents + 1, p->alloc_components);
	c = &p->components[p->ncomponents++];
	memset(c, 0, sizeof(*c));
	c->name = xstrdup(PLAN_UPDATES_COMPONENT);
	c->file = xstrdup(n->origin.file);
	c->version = xstrdup(p->windows_version);
	c->version_origin = n->origin;
	c->description = xstrdup("Windows updates installed with DISM in the build VM");
	/* the site's authenticode: policy holds at stage too (policy only
	 * tightens); the update's own roots are checked at fetch */
	if (authpol_convert(r, NULL, &p->authenticode, &c->authenticode, ctx) ||
	    authpol_layer_component(r, c->name, &c->authenticode, ctx))
		return -1;
	p->updates = xcalloc(n->nr, sizeof(*p->updates));
	/* checkpoints first, then the rest, each in the recipe's order */
	for (int pass = 1; pass >= 0; pass--)
		for (size_t i = 0; i < n->nr; i++) {
			const struct rnode *en = n->items[i];

			if ((schema_bool(rnode_get(en, "checkpoint")) == 1) != pass)
				continue;
			p->nupdates++;
			if (convert_update(r, en, pos, c, image_vars, &p->updates[pos]))
				return -1;
			pos++;
		}
	last = p->nupdates - 1;
	for (size_t i = 0; i < last; i++)
		if (p->updates[i].expect_build)
			return err_at(r, &p->updates[i].origin,
				      "windows.updates %s: only the last update installed (%s) "
				      "may say expect_build: the build is checked once, after the "
				      "last restart", p->updates[i].kb, p->updates[last].kb);
	return 0;
}
