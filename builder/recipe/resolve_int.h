/*
 * The resolver's private parts, shared by the files of recipe/ that
 * resolve a recipe into a plan (plan_resolve() in recipe/plan.h is the
 * only public entry point). Nothing outside recipe/ includes this header
 * (the unit tests in tests/unit/test_resolve.c do, to test the pieces).
 *
 * Which file does what:
 *   resolve.c              plan_resolve(), convert_top(), shared helpers
 *   layers.c               includes, override files, WINBUILD_SET, --set
 *                          merged in order with origins; nulls; each
 *                          layer's policy maps kept apart
 *   setpair.c              one --set / WINBUILD_SET pair into a tree
 *   policy.c               policy only tightens; what a null may not
 *                          unset; an artifact against the policy
 *   vars.c                 ${var} expansion
 *   urls.c                 URL and name checks, the mirror rewrite
 *   verify_spec.c          verify: and signatures: into the trust spec
 *   artifacts.c            one artifact: URL, replace, action, destination
 *   authenticode_policy.c  authenticode: and site_signing:
 *   components.c           loading and converting a component; PATH and
 *                          Defender entries; destination clashes
 *   services.c             services: and generate:
 *   versions.c             one source per version, warnings, since
 *   builders.c             packer.builders, --builder, the ISO pin
 *   updates.c              windows.updates as artifacts of a component
 *
 * Errors: every function that returns int returns 0 or -1 with r->e
 * filled (err_at: the message with the node's file:line:col).
 */
#ifndef WB_RECIPE_RESOLVE_INT_H
#define WB_RECIPE_RESOLVE_INT_H

#include <stddef.h>

#include "lib/err.h"
#include "lib/origin.h"
#include "lib/strlist.h"
#include "recipe/node.h"
#include "recipe/plan.h"


#define MAX_INCLUDE_DEPTH 16
#define MAX_VAR_DEPTH 16

struct resolver {
	struct plan *plan;
	const struct plan_inputs *in;
	struct wb_err *e;
	struct rnode *top;             /* image + overrides + env + --set */
	/* Each layer's own policy, authenticode, signatures and keys maps
	 * (cloned; NULL where the layer has none), in layer order: policy
	 * only tightens, so every layer's word is kept, never merged away.
	 * As many as there are layers: no cap. */
	struct layer {
		struct rnode *policy, *auth, *sigs, *keys;
		struct rnode *comps;   /* the layer's `components` map */
	} *layers;
	size_t nlayers, alloc_layers;
	const char *include_stack[MAX_INCLUDE_DEPTH + 1];
	size_t ninclude;
	struct vars {                  /* looked up first match first; grows */
		struct var {
			const char *name;
			const char *value;
			int raw;       /* value may hold ${...} itself */
		} *v;
		size_t nr, alloc;
	} image_vars;                  /* the image's vars (borrowed strings) */
	struct rnode *comp_auth;       /* the last component file's own
					  authenticode map (load_component) */
	const struct rnode *tlog_exported; /* the component being converted
					  says `tlog_source: exported` (its
					  node), else NULL */
};

#define err_at(r, o, ...) wb_origin_error((r)->e, (o), __VA_ARGS__)

/* resolve.c. Strings returned as char * are new (the caller frees them);
 * scalar() borrows from N; lower() lowers S in place and returns it. */
int bad_grammar(struct resolver *r, const struct wb_origin *o, const char *key,
		const char *value, const char *what);
const char *scalar(const struct rnode *n, const char *key);
char *relative_to(const char *from, const char *rel);
char *lower(char *s);
void warn_at(struct plan *p, const struct wb_origin *o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void flatten(struct plan *p, const struct rnode *n, const char *prefix);
/* packer.version N (NULL: the default) into the plan's packer_version
 * and packer_plugins; -1 with R's error at N for anything but
 * MAJOR.MINOR.PATCH. */
int resolve_packer_version(struct resolver *r, const struct rnode *n);
/* Free what R holds (its merged tree, layers, variables), not its plan. */
void resolver_release(struct resolver *r);

/* layers.c. *OUT is a new tree the caller frees (rnode_free). */
int load_kind(struct resolver *r, const char *path, const char *kind,
	      const struct wb_origin *from, struct rnode **out);
struct rnode *clone_or_null(const struct rnode *n);
void strip_nulls(struct rnode *n);
int load_layers(struct resolver *r, const struct plan_inputs *in);

/* setpair.c. parse_set(): *OUT a new tree {a: {b: VALUE}}, or NULL. */
int key_segment_ok(const char *s, size_t n);
int parse_set(struct resolver *r, const char *pair,
	      const struct wb_origin *o, struct rnode **out);

/* policy.c */
int unset_loosens(const char *path);
int policy_check_artifact(struct resolver *r, struct plan_artifact *a,
			  const struct rnode *vn);
int resolve_policy(struct resolver *r);

/* vars.c. A set borrows its names and values; expand() returns a new
 * string, or NULL with r->e filled. */
void vars_add(struct vars *vs, const char *name, const char *value, int raw);
void vars_prepend(struct vars *vs, const char *name, const char *value, int raw);
void vars_add_all(struct vars *vs, const struct vars *from);
void vars_release(struct vars *vs);
void vars_add_map(struct vars *vs, const struct rnode *map);
char *expand(struct resolver *r, const struct vars *vs,
	     const struct rnode *n, const char *what);

/* urls.c. apply_mirrors() appends to OUT; url_filename() and
 * override_dir_url() return new strings (the latter NULL for a URL that
 * is not "file://${override_dir}/..."). */
int url_check(struct resolver *r, const char *url, const struct wb_origin *o,
	      const char *what);
int name_check(struct resolver *r, const struct wb_origin *o,
	       const char *what, const char *name);
int url_layout_check(struct resolver *r, const char *url,
		     const struct wb_origin *o, const char *what);
char *url_filename(const char *url);
int apply_mirrors(struct resolver *r, const char *url,
		  const struct wb_origin *o, const char *what,
		  int upstream, struct wb_strlist *out);
char *override_dir_url(const char *to, const struct wb_origin *o);

/* verify_spec.c */
int convert_verify(struct resolver *r, const struct rnode *vn,
		   const struct vars *vs, struct plan_artifact *a,
		   const char *ctx);
int convert_signatures(struct resolver *r, const struct vars *vs,
		       struct plan_artifact *a, const char *ctx);

/* artifacts.c */
unsigned long long to_ull(const struct rnode *n);
int convert_artifact(struct resolver *r, const struct rnode *an,
		     const struct plan_component *c, const struct vars *base,
		     struct plan_artifact *a);

/* authenticode_policy.c */
int convert_site_signing(struct resolver *r, const struct rnode *n);
int convert_authenticode(struct resolver *r, const struct rnode *n,
			 const struct plan_authenticode *global,
			 struct plan_authenticode *out, const char *ctx);
int layer_authenticode(struct resolver *r);
int layer_component_authenticode(struct resolver *r, const char *name,
				 struct plan_authenticode *a, const char *ctx);
void tighten_authenticode(struct resolver *r);

/* components.c. load_component(): *OUT a new tree the caller frees. */
int load_component(struct resolver *r, struct rnode *entry, struct rnode **out);
void copy_strlist(const struct rnode *n, struct wb_strlist *out);
int dest_clashes(struct resolver *r);
int dirs_clash(struct resolver *r);
int convert_component(struct resolver *r, struct rnode *cn,
		      const struct vars *image_vars);

/* images.c: images: (N, NULL when absent) into the plan: the recipe's
 * (convert_images; NODE unused) and an enabled component's
 * (convert_component_images, COMP its name); a key declared twice is an
 * error naming both places. images_finish() after the components sorts
 * them and applies images.pause to node.pause_image (the node map NODE),
 * which it sets or must agree with. */
int convert_images(struct resolver *r, const struct rnode *n, const struct rnode *node);
int convert_component_images(struct resolver *r, const struct rnode *n, const char *comp);
int images_finish(struct resolver *r, const struct rnode *node);
int images_check_policy(struct resolver *r);

/* updates.c: windows.updates (N, NULL when absent) into a component of
 * its own and its artifacts (IMAGE_VARS: the image's variables). */
int convert_updates(struct resolver *r, const struct rnode *n,
		    const struct vars *image_vars);

/* services.c */
int convert_generate(struct resolver *r, const struct rnode *cn,
		     const struct plan_component *c, const struct vars *vs);
int convert_services(struct resolver *r, const struct rnode *cn,
		     const struct plan_component *c, const struct vars *vs);
int order_services(struct resolver *r);

/* versions.c */
int leading_v(struct resolver *r, const struct rnode *cn, const struct rnode *n,
	      const char *ctx, const char *value);
int versions_agree(struct resolver *r, const struct vars *image_vars);
int major_minor(const char *v, long *maj, long *min);
void version_warnings(struct resolver *r);
int since_met(struct resolver *r);

/* builders.c */
int resolve_iso(struct resolver *r, const struct rnode *win);
int convert_builders(struct resolver *r, const struct rnode *top);

#endif
