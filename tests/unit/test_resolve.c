/*
 * The resolver's pieces (recipe/resolve_int.h), each through its own
 * function with real inputs: the layers merged with their origins (which
 * layer won, file:line:col), --set pairs and their errors, ${var}
 * expansion and its transforms, versions, and the policy (a later layer
 * only tightens; an artifact against the policy).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "recipe/resolve_int.h"
#include "trust/method.h"

static char *dir;

static int setup(void **state)
{
	(void)state;
	dir = xstrdup("/tmp/wb-test-resolve-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	int ret = fs_remove_tree("/tmp", fs_basename(dir), &e);

	(void)state;
	free(dir);
	return ret;
}

/* DIR/NAME with TEXT; the path, to free. */
static char *write_file(const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* One resolver over its own plan, as plan_resolve() sets it up. */
struct fix {
	struct plan plan;
	struct plan_inputs in;
	const char *override;          /* in.overrides: this one, if any */
	struct wb_err e;
	struct resolver r;
};

static void fix_init(struct fix *f)
{
	memset(f, 0, sizeof(*f));
	f->e = (struct wb_err)WB_ERR_INIT;
	f->r.plan = &f->plan;
	f->r.in = &f->in;
	f->r.e = &f->e;
}

/* F over the image recipe RECIPE, the override OV (or none) and the
 * --set pairs SETS. */
static void fix_inputs(struct fix *f, const char *recipe, const char *ov,
		       const char *const *sets, size_t nsets)
{
	fix_init(f);
	f->in.recipe = recipe;
	f->override = ov;
	f->in.overrides = &f->override;
	f->in.noverrides = ov ? 1 : 0;
	f->in.sets = sets;
	f->in.nsets = nsets;
}

static void fix_release(struct fix *f)
{
	rs_release(&f->r);
	plan_release(&f->plan);
}

static void assert_has(const char *s, const char *want)
{
	if (!s || !strstr(s, want))
		fail_msg("'%s' does not contain '%s'", s ? s : "(null)", want);
}

/* The value at dotted PATH of the merged tree, and where it came from. */
static const struct rnode *at(const struct rnode *top, const char *a, const char *b)
{
	const struct rnode *n = rnode_get(rnode_get(top, a), b);

	if (!n)
		fail_msg("no '%s.%s' in the merged tree", a, b);
	return n;
}

static void assert_origin(const struct wb_origin *o, const char *want)
{
	char where[512];

	wb_origin_format(o, where, sizeof(where));
	/* file names are the paths as given: compare the tail */
	if (strlen(where) < strlen(want) ||
	    strcmp(where + strlen(where) - strlen(want), want))
		fail_msg("origin '%s' is not '...%s'", where, want);
}

/* ---- layers: includes, overrides, WINBUILD_SET, --set (layers.c) ---- */

static void test_layers_winner_and_origin(void **state)
{
	char *base = write_file("base.yaml", "kind: image\nvars:\n  a: base\n  b: base\n");
	char *img = write_file("image.yaml", "kind: image\ninclude: [base.yaml]\n"
			       "vars:\n  b: image\n  c: image\n");
	char *ov = write_file("o1.yaml", "kind: override\nvars:\n  c: o1\n  d: o1\n");
	const char *sets[] = { "vars.x=1", "vars.e=cli" };
	const struct rnode *top;
	struct fix f;

	(void)state;
	fix_inputs(&f, img, ov, sets, 2);
	f.in.env_set = "vars.d=env; vars.e=env";
	if (layers_load(&f.r, &f.in))
		fail_msg("load_layers: %s", f.e.msg);
	top = f.r.top;
	/* each key is the last layer's that set it, with that layer's place */
	assert_string_equal(at(top, "vars", "a")->scalar, "base");
	assert_origin(&at(top, "vars", "a")->origin, "/base.yaml:3:6");
	assert_string_equal(at(top, "vars", "b")->scalar, "image");
	assert_origin(&at(top, "vars", "b")->origin, "/image.yaml:4:6");
	assert_string_equal(at(top, "vars", "c")->scalar, "o1");
	assert_origin(&at(top, "vars", "c")->origin, "/o1.yaml:3:6");
	assert_string_equal(at(top, "vars", "d")->scalar, "env");
	assert_origin(&at(top, "vars", "d")->origin, "env WINBUILD_SET #1");
	assert_string_equal(at(top, "vars", "e")->scalar, "cli");
	assert_origin(&at(top, "vars", "e")->origin, "--set #2");
	/* the image's whole document is the image file's, not its include's */
	assert_origin(&top->origin, "/image.yaml:1:1");
	/* one layer each: image, override, two WINBUILD_SET pairs, two --set */
	assert_int_equal(f.r.nlayers, 6);
	assert_int_equal(f.plan.override_files.nr, 1);
	fix_release(&f);
	free(base);
	free(img);
	free(ov);
}

static void test_layers_null_unsets(void **state)
{
	char *img = write_file("image.yaml", "kind: image\nvars:\n  a: 1\n  b: 2\n"
			       "components:\n  k: {version: '1'}\n");
	char *ov = write_file("o1.yaml", "kind: override\nvars:\n  b: null\n"
			      "components:\n  k:\n    version: ~\n");
	struct fix f;

	(void)state;
	fix_inputs(&f, img, ov, NULL, 0);
	if (layers_load(&f.r, &f.in))
		fail_msg("load_layers: %s", f.e.msg);
	assert_non_null(rnode_get(rnode_get(f.r.top, "vars"), "a"));
	assert_null(rnode_get(rnode_get(f.r.top, "vars"), "b"));
	/* under components. the null stays until the component file is
	 * merged beneath it (layers_strip_nulls) */
	assert_non_null(at(rnode_get(f.r.top, "components"), "k", "version"));
	fix_release(&f);
	free(img);
	free(ov);
}

/* layers_load over IMAGE and one override OV fails with WANT. */
static void layers_fail(const char *image, const char *ov, const char *want)
{
	char *img = write_file("image.yaml", image);
	char *o = ov ? write_file("o1.yaml", ov) : NULL;
	struct fix f;

	fix_inputs(&f, img, o, NULL, 0);
	assert_int_equal(layers_load(&f.r, &f.in), -1);
	assert_int_equal(f.e.code, WB_EUSAGE);
	assert_has(f.e.msg, want);
	fix_release(&f);
	free(img);
	free(o);
}

static void test_layers_refusals(void **state)
{
	static const char image[] = "kind: image\npolicy:\n  require: signature\n";

	(void)state;
	layers_fail(image, "kind: override\npolicy:\n  require: ~\n",
		    "o1.yaml:3:12: 'policy.require' cannot be unset (null)");
	layers_fail(image, "kind: override\ncomponents:\n  k:\n    artifacts:\n"
		    "      a:\n        verify: null\n",
		    "o1.yaml:6:17: 'components.k.artifacts.a.verify' cannot be unset");
	layers_fail(image, "kind: override\nname: x\n",
		    "o1.yaml:2:1: 'name' is not allowed in an override file");
	layers_fail(image, "kind: image\n",
		    "o1.yaml:1:7: 'kind' must be 'override' in an override file");
	layers_fail(image, "vars: {}\n",
		    "o1.yaml:1:1: missing required key 'kind' (expected 'kind: override')");
	layers_fail(image, "kind: override\npolicy:\n  require: everything\n",
		    "o1.yaml:3:12:");
	layers_fail("kind: image\nreplace:\n  a: {url: 'https://x/y'}\n", NULL,
		    "image.yaml:2:1: 'replace' belongs in override files");
	layers_fail("kind: component\n", NULL, "image.yaml:1:7: 'kind' must be 'image' here");
}

static void test_layers_include_cycle(void **state)
{
	char *a = write_file("a.yaml", "kind: image\ninclude: [b.yaml]\n");
	char *b = write_file("b.yaml", "kind: image\ninclude: [a.yaml]\n");
	struct fix f;

	(void)state;
	fix_inputs(&f, a, NULL, NULL, 0);
	assert_int_equal(layers_load(&f.r, &f.in), -1);
	assert_has(f.e.msg, "b.yaml:2:11: include cycle: '");
	assert_has(f.e.msg, "a.yaml' includes itself");
	fix_release(&f);
	free(a);
	free(b);
}

/* ---- --set pairs (setpair.c) ---- */

static void test_set_pairs(void **state)
{
	struct wb_origin o = { "--set", 3, 0 };
	struct rnode *n = NULL;
	const struct rnode *c;
	struct fix f;

	(void)state;
	fix_init(&f);
	assert_int_equal(setpair_parse(&f.r, "a.b-c.d_e=x=y", &o, &n), 0);
	c = rnode_get(rnode_get(rnode_get(n, "a"), "b-c"), "d_e");
	assert_non_null(c);
	assert_int_equal(c->type, RNODE_SCALAR);
	assert_string_equal(c->scalar, "x=y");     /* the first '=' splits */
	assert_int_equal(c->origin.line, 3);
	assert_int_equal(c->key_origin.line, 3);
	rnode_free(n);

	assert_int_equal(setpair_parse(&f.r, "l=[1, {k: v}]", &o, &n), 0);
	c = rnode_get(n, "l");
	assert_int_equal(c->type, RNODE_LIST);
	assert_int_equal(c->nr, 2);
	assert_string_equal(rnode_get(c->items[1], "k")->scalar, "v");
	rnode_free(n);

	assert_int_equal(setpair_parse(&f.r, "e=", &o, &n), 0);
	assert_string_equal(rnode_get(n, "e")->scalar, "");
	rnode_free(n);

	assert_int_equal(setpair_parse(&f.r, "u=caf\xc3\xa9 \xf0\x9f\x90\xb3", &o, &n), 0);
	rnode_free(n);
	fix_release(&f);
}

static void set_fails(const char *pair, const char *want)
{
	struct wb_origin o = { "--set", 2, 0 };
	struct rnode *n = (struct rnode *)1;
	struct fix f;

	fix_init(&f);
	if (setpair_parse(&f.r, pair, &o, &n) != -1)
		fail_msg("'%s' was accepted", pair);
	assert_null(n);
	assert_int_equal(f.e.code, WB_EUSAGE);
	assert_has(f.e.msg, want);
	fix_release(&f);
}

static void test_set_errors(void **state)
{
	(void)state;
	set_fails("novalue", "--set #2: 'novalue' is not KEY=VALUE");
	set_fails("a..b=1", "--set #2: bad key 'a..b': segments are [A-Za-z0-9_-]+");
	set_fails(".a=1", "bad key '.a'");
	set_fails("a.=1", "bad key 'a.'");
	set_fails("=1", "bad key ''");
	set_fails("a b=1", "bad key 'a b'");
	set_fails("a/b=1", "bad key 'a/b'");
	set_fails("k=\xc3\x28", "--set #2: 'k': the value is not valid UTF-8");
	set_fails("k=\xc0\xaf", "not valid UTF-8");             /* overlong '/' */
	set_fails("k=\xed\xa0\x80", "not valid UTF-8");         /* a surrogate */
	set_fails("k=\xf4\x90\x80\x80", "not valid UTF-8");     /* past U+10FFFF */
	set_fails("k=\xe2\x82", "not valid UTF-8");             /* cut short */
	set_fails("k=[1,", "value of 'k'");
}

static void test_key_segments(void **state)
{
	(void)state;
	assert_true(setpair_key_segment_ok("containerd", 10));
	assert_true(setpair_key_segment_ok("cni-plugins_2", 13));
	assert_false(setpair_key_segment_ok("", 0));
	assert_false(setpair_key_segment_ok("a.b", 3));
	assert_false(setpair_key_segment_ok("a b", 3));
	assert_false(setpair_key_segment_ok("caf\xc3\xa9", 5));
}

/* ---- ${var} expansion (vars.c) ---- */

static char *expand_str(struct fix *f, const struct vars *vs, const char *text)
{
	struct wb_origin o = { "r.yaml", 4, 9 };
	struct rnode *n = rnode_new_scalar(text, &o);
	char *s = vars_expand(&f->r, vs, n, "key");

	rnode_free(n);
	return s;
}

static void expands_to(struct fix *f, const struct vars *vs, const char *text,
		       const char *want)
{
	char *s = expand_str(f, vs, text);

	if (!s)
		fail_msg("'%s': %s", text, f->e.msg);
	assert_string_equal(s, want);
	free(s);
}

static void expand_fails(struct fix *f, const struct vars *vs, const char *text,
			 const char *want)
{
	char *s = expand_str(f, vs, text);

	if (s)
		fail_msg("'%s' expanded to '%s'", text, s);
	assert_has(f->e.msg, "r.yaml:4:9: ");
	assert_has(f->e.msg, want);
}

static void test_expand(void **state)
{
	struct vars vs = { 0 };
	char *big = xcalloc(40001, 1);
	struct fix f;

	(void)state;
	fix_init(&f);
	memset(big, 'x', 40000);
	vars_add(&vs, "v", "1.36.4", 0);
	vars_add(&vs, "raw", "${v}-r", 1);
	vars_add(&vs, "lit", "${v}", 0);       /* not raw: taken as written */
	vars_add(&vs, "loop", "${loop}", 1);
	vars_add(&vs, "big", big, 0);
	expands_to(&f, &vs, "a/${v}/b", "a/1.36.4/b");
	expands_to(&f, &vs, "${v:minor}.0", "1.36.0");
	expands_to(&f, &vs, "${v:underscores}", "1_36_4");
	expands_to(&f, &vs, "${raw}", "1.36.4-r");
	expands_to(&f, &vs, "${raw:underscores}", "1_36_4-r");
	expands_to(&f, &vs, "${lit}", "${v}");
	expands_to(&f, &vs, "$${v} $v $", "${v} $v $");
	expand_fails(&f, &vs, "${nope}", "undefined variable '${nope}' in 'key'");
	expand_fails(&f, &vs, "x${v", "unterminated '${' in 'key'");
	expand_fails(&f, &vs, "${v:upper}", "unknown transform ':upper' in 'key'");
	expand_fails(&f, &vs, "${loop}", "nest deeper than 16 levels");
	expand_fails(&f, &vs, "${big}${big}", "expands to more than");
	/* the first match wins: a variable put first hides the others */
	vars_prepend(&vs, "v", "9.9", 0);
	expands_to(&f, &vs, "${v}", "9.9");
	vars_release(&vs);
	free(big);
	fix_release(&f);
}

/* ---- versions (versions.c) ---- */

static void test_major_minor(void **state)
{
	long maj = -7, min = -7;

	(void)state;
	assert_int_equal(versions_major_minor("1.35.2", &maj, &min), 0);
	assert_int_equal(maj, 1);
	assert_int_equal(min, 35);
	assert_int_equal(versions_major_minor("v2.1", &maj, &min), 0);
	assert_int_equal(maj, 2);
	assert_int_equal(min, 1);
	assert_int_equal(versions_major_minor("10.0-rc.1", &maj, &min), 0);
	assert_int_equal(maj, 10);
	assert_int_equal(min, 0);
	assert_int_equal(versions_major_minor("1", &maj, &min), -1);
	assert_int_equal(versions_major_minor("1.", &maj, &min), -1);
	assert_int_equal(versions_major_minor("x.1", &maj, &min), -1);
	assert_int_equal(versions_major_minor("", &maj, &min), -1);
}

/* Components NAME=VERSION ... of F's plan, each version at k.yaml:<i+1>:10. */
static void add_components(struct fix *f, const char *const *nv, size_t n)
{
	static const struct wb_origin none;

	f->plan.components = xcalloc(n, sizeof(*f->plan.components));
	for (size_t i = 0; i < n; i++) {
		struct plan_component *c = &f->plan.components[i];
		const char *eq = strchr(nv[i], '=');

		c->name = xstrndup(nv[i], (size_t)(eq - nv[i]));
		c->version = xstrdup(eq + 1);
		c->version_origin = none;
		c->version_origin.file = "k.yaml";
		c->version_origin.line = (int)i + 1;
		c->version_origin.col = 10;
	}
	f->plan.ncomponents = n;
}

static void test_versions_agree(void **state)
{
	const char *comps[] = { "kubernetes=1.35.0", "cni-plugins=1.9.1" };
	char *img = write_file("image.yaml", "vars:\n  kubernetes_version: '1.35.${p}'\n"
			       "  p: '0'\n  cni_plugins_version: 1.9.1\n");
	struct vars vs = { 0 };
	struct fix f;

	(void)state;
	fix_init(&f);
	add_components(&f, comps, 2);
	if (rnode_load_file(img, &f.plan.interned, &f.r.top, &f.e))
		fail_msg("%s", f.e.msg);
	vars_add_map(&vs, rnode_get(f.r.top, "vars"));
	assert_int_equal(versions_agree(&f.r, &vs), 0);
	/* one of the two set to another value: both places named */
	free(f.plan.components[1].version);
	f.plan.components[1].version = xstrdup("1.9.0");
	assert_int_equal(versions_agree(&f.r, &vs), -1);
	assert_has(f.e.msg, "k.yaml:2:10: components.cni-plugins.version is '1.9.0', but "
		   "vars.cni_plugins_version is '1.9.1' (");
	assert_has(f.e.msg, "/image.yaml:4:24)");
	vars_release(&vs);
	fix_release(&f);
	free(img);
}

static size_t warnings_with(const struct plan *p, const char *want)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nwarnings; i++)
		n += strstr(p->warnings[i].msg, want) != NULL;
	return n;
}

static void test_version_warnings(void **state)
{
	const char *off[] = { "kubernetes=1.36.1", "crictl=1.35.0", "containerd=1.7.29" };
	const char *on[] = { "kubernetes=1.35.1", "crictl=1.35.0", "containerd=2.2.0" };
	const char *ctd3[] = { "containerd=3.0.0" };
	struct fix f;

	(void)state;
	fix_init(&f);
	add_components(&f, off, 3);
	versions_warnings(&f.r);
	assert_int_equal(f.plan.nwarnings, 2);
	assert_int_equal(warnings_with(&f.plan, "crictl 1.35.0 is not on Kubernetes' minor "
				       "1.36 (components.kubernetes.version 1.36.1, k.yaml:1:10)"), 1);
	assert_int_equal(warnings_with(&f.plan, "containerd 1.7.29 with Kubernetes 1.36.1"), 1);
	assert_origin(&f.plan.warnings[0].origin, "k.yaml:2:10");
	fix_release(&f);

	fix_init(&f);
	add_components(&f, on, 3);
	versions_warnings(&f.r);
	assert_int_equal(f.plan.nwarnings, 0);
	fix_release(&f);

	fix_init(&f);
	add_components(&f, ctd3, 1);
	versions_warnings(&f.r);
	assert_int_equal(warnings_with(&f.plan, "containerd 3.0.0: the node config"), 1);
	fix_release(&f);
}

/* An artifact of containerd that requires attestation since 2.0. */
static void since_fixture(struct fix *f, const char *ctd_version)
{
	const char *comps[1];
	char *c = xasprintf("containerd=%s", ctd_version);
	struct plan_artifact *a;

	comps[0] = c;
	fix_init(f);
	add_components(f, comps, 1);
	free(c);
	f->plan.artifacts = xcalloc(1, sizeof(*f->plan.artifacts));
	f->plan.nartifacts = 1;
	a = &f->plan.artifacts[0];
	a->name = xstrdup("containerd");
	a->component = xstrdup("containerd");
	ALLOC_GROW(a->since, a->nsince + 1, a->alloc_since);
	a->since[0] = (struct plan_since){ "attestation", xstrdup("2.0"),
					   xstrdup("build provenance"),
					   xstrdup("-O overrides/containerd-1.7.yaml"),
					   { "containerd.yaml", 30, 7 } };
	a->nsince = 1;
}

static void test_since_met(void **state)
{
	struct fix f;

	(void)state;
	since_fixture(&f, "1.7.29");
	assert_int_equal(versions_since_met(&f.r), -1);
	assert_has(f.e.msg, "k.yaml:1:10: containerd 1.7.29 publishes no build provenance, "
		   "but artifact 'containerd' requires it (verify.attestation, "
		   "containerd.yaml:30:7): use containerd 2.0 or later, or -O "
		   "overrides/containerd-1.7.yaml");
	fix_release(&f);
	since_fixture(&f, "1.99.0");
	assert_int_equal(versions_since_met(&f.r), -1);
	fix_release(&f);
	since_fixture(&f, "2.0.0");
	assert_int_equal(versions_since_met(&f.r), 0);
	fix_release(&f);
	since_fixture(&f, "2.1.3");
	assert_int_equal(versions_since_met(&f.r), 0);
	fix_release(&f);
}

/* ---- policy (policy.c) ---- */

static void test_unset_loosens(void **state)
{
	static const char *const loosens[] = {
		"policy", "policy.require", "signatures.keys", "keys.site",
		"authenticode.roots", "site_signing", "mirror_only", "windows.iso_sha256",
		"verify", "components.k.artifacts.a.verify",
		"components.k.artifacts.a.verify.sha256",
		"components.k.artifacts.a.verify.cosign.identity",
		"replace.a.verify.minisign",
	};
	static const char *const harmless[] = {
		"policyx", "vars.a", "windows.version", "windows.iso_sha256x",
		"components.k.enabled", "components.k.artifacts.a.url",
		"components.k.artifacts.a.verify.cosign.rekor", "verify.cosign.rekor",
		"components.k.artifacts.a.verifyx",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(loosens); i++)
		if (!policy_unset_loosens(loosens[i]))
			fail_msg("unsetting '%s' is let through", loosens[i]);
	for (size_t i = 0; i < ARRAY_SIZE(harmless); i++)
		if (policy_unset_loosens(harmless[i]))
			fail_msg("unsetting '%s' is refused", harmless[i]);
}

/* The policy of IMAGE's policy map under the --set pairs SETS. */
static void policy_of(struct fix *f, const char *image_policy, const char *ov,
		      const char *const *sets, size_t nsets)
{
	char *text = xasprintf("kind: image\npolicy:\n%s", image_policy);
	char *img = write_file("image.yaml", text);
	char *o = ov ? write_file("o1.yaml", ov) : NULL;

	fix_inputs(f, img, o, sets, nsets);
	if (layers_load(&f->r, &f->in))
		fail_msg("load_layers: %s", f->e.msg);
	policy_resolve(&f->r);
	free(text);
	free(img);
	free(o);
}

/* POL requires a signature, forbids http and checksum files, each set at
 * the place given. */
static void assert_tight(const struct trust_policy *pol, const char *require_at,
			 const char *http_at, const char *checksum_at)
{
	assert_true(pol->require_signature);
	assert_origin(&pol->require_origin, require_at);
	assert_false(pol->allow_http);
	assert_origin(&pol->allow_http_origin, http_at);
	assert_true(pol->forbid_checksum_urls);
	assert_origin(&pol->checksum_urls_origin, checksum_at);
}

static void test_policy_only_tightens(void **state)
{
	const char *loosen[] = { "policy.require=digest", "policy.allow_http=true",
				 "policy.checksum_urls=allow" };
	const char *tighten[] = { "policy.allow_http=false" };
	struct fix f;

	(void)state;
	/* the image's words hold under later layers that loosen */
	policy_of(&f, "  require: signature\n  allow_http: false\n  checksum_urls: forbid\n",
		  NULL, loosen, 3);
	assert_tight(&f.plan.policy, "/image.yaml:3:12", "/image.yaml:4:15", "/image.yaml:5:18");
	fix_release(&f);

	/* a later layer tightens, and its place is the one named */
	policy_of(&f, "  require: digest\n  allow_http: true\n",
		  "kind: override\npolicy:\n  checksum_urls: forbid\n  require: signature\n",
		  tighten, 1);
	assert_tight(&f.plan.policy, "/o1.yaml:4:12", "--set #1", "/o1.yaml:3:18");
	fix_release(&f);

	/* nothing said: http allowed, no signature required */
	policy_of(&f, "  unverified_iso: forbid\n", NULL, NULL, 0);
	assert_true(f.plan.policy.allow_http);
	assert_false(f.plan.policy.require_signature);
	assert_false(f.plan.policy.forbid_checksum_urls);
	fix_release(&f);
}

/* policy.unverified_iso of an image policy IMAGE under the --set pair SET
 * (or none): allowed or not, and where that was said (or NULL). */
static void iso_case(const char *image, const char *set, int allow,
		     const char *where)
{
	const char *sets[] = { set };
	struct fix f;

	policy_of(&f, image, NULL, sets, set ? 1 : 0);
	assert_int_equal(f.plan.policy.allow_unverified_iso, allow);
	if (where)
		assert_origin(&f.plan.policy.unverified_iso_origin, where);
	fix_release(&f);
}

static void test_policy_unverified_iso(void **state)
{
	(void)state;
	iso_case("  unverified_iso: allow\n", NULL, 1, "/image.yaml:3:19");
	/* a forbid in any layer holds, earlier or later than an allow */
	iso_case("  unverified_iso: forbid\n", "policy.unverified_iso=allow", 0,
		 "/image.yaml:3:19");
	iso_case("  unverified_iso: allow\n", "policy.unverified_iso=forbid", 0, "--set #1");
	iso_case("  require: digest\n", NULL, 0, NULL);
}

/* packer.version V (NULL: unset): accepted with PLUGINS (the template
 * reads required_plugins), or refused (PLUGINS -1) at its origin. */
static void packer_case(const char *v, int plugins)
{
	static const struct wb_origin o = { "img.yaml", 4, 12 };
	struct rnode *n = v ? rnode_new_scalar(v, &o) : NULL;
	struct fix f;

	fix_init(&f);
	assert_int_equal(builders_packer_version(&f.r, n), plugins < 0 ? -1 : 0);
	if (plugins < 0) {
		assert_null(f.plan.packer_version);
		assert_non_null(strstr(f.e.msg, "img.yaml:4:12: 'packer.version' must be"));
	} else {
		assert_string_equal(f.plan.packer_version, v ? v : PLAN_PACKER_DEFAULT);
		assert_int_equal(f.plan.packer_plugins, plugins);
	}
	free(f.plan.packer_version);
	rnode_free(n);
}

static void test_packer_version(void **state)
{
	(void)state;
	packer_case(NULL, 0);            /* Debian's 1.6.6 */
	packer_case("1.6.6", 0);
	packer_case("1.6.99", 0);
	packer_case("0.12.3", 0);
	packer_case("1.7.0", 1);         /* the first to read required_plugins */
	packer_case("1.9.5", 1);
	packer_case("1.16.0", 1);
	packer_case("2.0.0", 1);
	packer_case("1.16", -1);
	packer_case("1.16.0.1", -1);
	packer_case("v1.16.0", -1);
	packer_case("1.16.0-rc1", -1);
	packer_case(">= 1.7.0", -1);
	packer_case("1..0", -1);
	packer_case("", -1);
}

/* An artifact 'a' whose verify map is at a.yaml:9:7, with the policy
 * set at p.yaml. */
struct art {
	struct fix f;
	struct plan_artifact a;
	struct rnode *vn;
};

static void art_init(struct art *t)
{
	static const struct wb_origin vo = { "a.yaml", 9, 7 };
	static const struct wb_origin po = { "p.yaml", 2, 3 };

	fix_init(&t->f);
	memset(&t->a, 0, sizeof(t->a));
	t->a.name = xstrdup("a");
	t->vn = rnode_new_scalar("", &vo);
	t->f.plan.policy.allow_http = 1;
	t->f.plan.policy.checksum_urls_origin = po;
	t->f.plan.policy.require_origin = po;
}

static void art_add(struct art *t, const char *method)
{
	const struct trust_method *m = trust_method_find(method);
	struct trust_req *q;

	assert_non_null(m);
	q = trust_spec_add(&t->a.verify, m, &t->vn->origin);
	wb_strlist_push(&q->urls, "https://example.org/a.sha256");
}

static void art_release(struct art *t)
{
	free(t->a.name);
	trust_spec_release(&t->a.verify);
	rnode_free(t->vn);
	fix_release(&t->f);
}

static void test_policy_check_artifact(void **state)
{
	struct art t;

	(void)state;
	/* checksum_urls: forbid drops the checksum requirements ... */
	art_init(&t);
	t.f.plan.policy.forbid_checksum_urls = 1;
	t.a.verify.sha256 = xstrdup("ab");
	art_add(&t, "sha256_url");
	art_add(&t, "minisign");
	art_add(&t, "sha512_url");
	assert_int_equal(policy_check_artifact(&t.f.r, &t.a, t.vn), 0);
	assert_int_equal(t.a.verify.nreqs, 1);
	assert_string_equal(t.a.verify.reqs[0].method->name, "minisign");
	art_release(&t);

	/* ... and refuses an artifact left with nothing else */
	art_init(&t);
	t.f.plan.policy.forbid_checksum_urls = 1;
	art_add(&t, "sha256_url");
	assert_int_equal(policy_check_artifact(&t.f.r, &t.a, t.vn), -1);
	assert_has(t.f.e.msg, "a.yaml:9:7: artifact 'a' is verified only by a checksum "
		   "file, which policy.checksum_urls: forbid does not accept (p.yaml:2:3)");
	art_release(&t);

	/* require: signature: a pin and a checksum file are not a signature */
	art_init(&t);
	t.f.plan.policy.require_signature = 1;
	t.a.verify.sha256 = xstrdup("ab");
	art_add(&t, "sha256_url");
	assert_int_equal(policy_check_artifact(&t.f.r, &t.a, t.vn), -1);
	assert_has(t.f.e.msg, "a.yaml:9:7: artifact 'a' has no signature (minisign");
	assert_has(t.f.e.msg, "but policy.require is 'signature' (p.yaml:2:3)");
	art_release(&t);

	art_init(&t);
	t.f.plan.policy.require_signature = 1;
	art_add(&t, "minisign");
	assert_int_equal(policy_check_artifact(&t.f.r, &t.a, t.vn), 0);
	art_release(&t);

	/* needs_pin is dropped once anything else verifies the artifact */
	art_init(&t);
	t.a.verify.needs_pin = xstrdup("the vendor's portal");
	assert_int_equal(policy_check_artifact(&t.f.r, &t.a, t.vn), 0);
	assert_non_null(t.a.verify.needs_pin);
	t.a.verify.sha512 = xstrdup("cd");
	assert_int_equal(policy_check_artifact(&t.f.r, &t.a, t.vn), 0);
	assert_null(t.a.verify.needs_pin);
	art_release(&t);

	/* nothing at all */
	art_init(&t);
	assert_int_equal(policy_check_artifact(&t.f.r, &t.a, t.vn), -1);
	assert_has(t.f.e.msg, "a.yaml:9:7: artifact 'a' has no verification");
	art_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layers_winner_and_origin),
		cmocka_unit_test(test_layers_null_unsets),
		cmocka_unit_test(test_layers_refusals),
		cmocka_unit_test(test_layers_include_cycle),
		cmocka_unit_test(test_set_pairs),
		cmocka_unit_test(test_set_errors),
		cmocka_unit_test(test_key_segments),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_major_minor),
		cmocka_unit_test(test_versions_agree),
		cmocka_unit_test(test_version_warnings),
		cmocka_unit_test(test_since_met),
		cmocka_unit_test(test_unset_loosens),
		cmocka_unit_test(test_policy_only_tightens),
		cmocka_unit_test(test_policy_unverified_iso),
		cmocka_unit_test(test_policy_check_artifact),
		cmocka_unit_test(test_packer_version),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
