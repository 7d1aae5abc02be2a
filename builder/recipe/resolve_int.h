/*
 * The resolver's private parts, shared by the files of recipe/ that
 * resolve a recipe into a plan (plan_resolve() in recipe/plan.h is the
 * only public entry point). Nothing outside recipe/ includes this header
 * (the unit tests in tests/unit/test_resolve.c do, to test the pieces).
 *
 * Which file does what, and the prefix of every function it declares
 * here (tests/cli/filesize.bats holds it; static functions keep short
 * names):
 *   resolve.c              -             plan_resolve() alone: the order of
 *                                        the passes, each a section of the
 *                                        recipe
 *   rs_util.c              rs_           helpers every file shares: a map's
 *                                        scalar, relative paths, warnings,
 *                                        --explain's values, rs_release()
 *   top.c                  top_          the image's own sections: name,
 *                                        windows, node, vars, replace; the
 *                                        plan sorted last
 *   layers.c               layers_       includes, override files,
 *                                        WINBUILD_SET, --set merged in
 *                                        order with origins; nulls; each
 *                                        layer's policy maps kept apart
 *   setpair.c              setpair_      one --set / WINBUILD_SET pair into
 *                                        a tree
 *   policy.c               policy_       policy only tightens; what a null
 *                                        may not unset; an artifact against
 *                                        the policy
 *   vars.c                 vars_         ${var} expansion
 *   urls.c                 urls_         URL and name checks, mirrors: and
 *                                        the mirror rewrite
 *   verify_spec.c          verify_spec_  verify: and signatures: into the
 *                                        trust spec
 *   artifacts.c            artifacts_    one artifact: URL, replace,
 *                                        action, destination
 *   authenticode_policy.c  authpol_      authenticode: and site_signing:
 *   components.c           components_   loading and converting a
 *                                        component; PATH and Defender
 *                                        entries; destination clashes
 *   images.c               images_       images: of the recipe and of the
 *                                        components
 *   services.c             services_     services: and generate:
 *   versions.c             versions_     one source per version, warnings,
 *                                        since
 *   builders.c             builders_     packer.builders, --builder, the
 *                                        ISO pin, packer.version and
 *                                        payload
 *   updates.c              updates_      windows.updates as artifacts of a
 *                                        component
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
					  authenticode map (components_load) */
	const struct rnode *tlog_exported; /* the component being converted
					  says `tlog_source: exported` (its
					  node), else NULL */
};

#define err_at(r, o, ...) wb_origin_error((r)->e, (o), __VA_ARGS__)

/* rs_util.c. Strings returned as char * are new (the caller frees them);
 * rs_scalar() borrows from N; rs_lower() lowers S in place and returns it;
 * rs_str_or() is N's scalar KEY, or DEF, copied. rs_add_value() and
 * rs_flatten() add to the values --explain prints. */
int rs_bad_grammar(struct resolver *r, const struct wb_origin *o, const char *key,
		   const char *value, const char *what);
const char *rs_scalar(const struct rnode *n, const char *key);
char *rs_str_or(const struct rnode *n, const char *key, const char *def);
char *rs_relative_to(const char *from, const char *rel);
char *rs_lower(char *s);
void rs_warn_at(struct plan *p, const struct wb_origin *o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void rs_add_value(struct plan *p, const char *key, const char *value,
		  const struct wb_origin *o);
void rs_flatten(struct plan *p, const struct rnode *n, const char *prefix);
/* N's scalar items appended to OUT (N NULL: none) */
void rs_copy_strlist(const struct rnode *n, struct wb_strlist *out);
/* Free what R holds (its merged tree, layers, variables), not its plan. */
void rs_release(struct resolver *r);

/* top.c: the sections of r->top that belong to the image alone, called by
 * resolve.c in this order around the other files' passes; top_finish()
 * last (the values for --explain, the plan sorted). */
int top_convert_image(struct resolver *r);
int top_convert_windows(struct resolver *r);
int top_convert_node(struct resolver *r);
void top_convert_vars(struct resolver *r);
int top_check_replace(struct resolver *r);
void top_finish(struct resolver *r);

/* layers.c. *OUT is a new tree the caller frees (rnode_free). */
int layers_load_kind(struct resolver *r, const char *path, const char *kind,
	      const struct wb_origin *from, struct rnode **out);
struct rnode *layers_clone_or_null(const struct rnode *n);
void layers_strip_nulls(struct rnode *n);
int layers_load(struct resolver *r, const struct plan_inputs *in);

/* setpair.c. setpair_parse(): *OUT a new tree {a: {b: VALUE}}, or NULL. */
int setpair_key_segment_ok(const char *s, size_t n);
int setpair_parse(struct resolver *r, const char *pair,
	      const struct wb_origin *o, struct rnode **out);

/* policy.c */
int policy_unset_loosens(const char *path);
int policy_check_artifact(struct resolver *r, struct plan_artifact *a,
			  const struct rnode *vn);
int policy_resolve(struct resolver *r);

/* vars.c. A set borrows its names and values; vars_expand() returns a new
 * string, or NULL with r->e filled. */
void vars_add(struct vars *vs, const char *name, const char *value, int raw);
void vars_prepend(struct vars *vs, const char *name, const char *value, int raw);
void vars_add_all(struct vars *vs, const struct vars *from);
void vars_release(struct vars *vs);
void vars_add_map(struct vars *vs, const struct rnode *map);
char *vars_expand(struct resolver *r, const struct vars *vs,
	     const struct rnode *n, const char *what);

/* urls.c. urls_apply_mirrors() appends to OUT; urls_filename() and
 * urls_override_dir() return new strings (the latter NULL for a URL that
 * is not "file://${override_dir}/..."). */
int urls_check(struct resolver *r, const char *url, const struct wb_origin *o,
	      const char *what);
int urls_name_check(struct resolver *r, const struct wb_origin *o,
	       const char *what, const char *name);
int urls_layout_check(struct resolver *r, const char *url,
		     const struct wb_origin *o, const char *what);
char *urls_filename(const char *url);
int urls_apply_mirrors(struct resolver *r, const char *url,
		  const struct wb_origin *o, const char *what,
		  int upstream, struct wb_strlist *out);
char *urls_override_dir(const char *to, const struct wb_origin *o);
/* mirror_only and mirrors: of the image TOP into the plan */
int urls_convert_mirrors(struct resolver *r, const struct rnode *top);

/* verify_spec.c */
int verify_spec_convert(struct resolver *r, const struct rnode *vn,
		   const struct vars *vs, struct plan_artifact *a,
		   const char *ctx);
int verify_spec_signatures(struct resolver *r, const struct vars *vs,
		       struct plan_artifact *a, const char *ctx);

/* artifacts.c */
unsigned long long artifacts_to_ull(const struct rnode *n);
int artifacts_convert(struct resolver *r, const struct rnode *an,
		     const struct plan_component *c, const struct vars *base,
		     struct plan_artifact *a);

/* authenticode_policy.c */
int authpol_site_signing(struct resolver *r, const struct rnode *n);
int authpol_convert(struct resolver *r, const struct rnode *n,
			 const struct plan_authenticode *global,
			 struct plan_authenticode *out, const char *ctx);
int authpol_layers(struct resolver *r);
int authpol_layer_component(struct resolver *r, const char *name,
				 struct plan_authenticode *a, const char *ctx);
void authpol_tighten(struct resolver *r);

/* components.c. components_load(): *OUT a new tree the caller frees. */
int components_load(struct resolver *r, struct rnode *entry, struct rnode **out);
int components_dest_clashes(struct resolver *r);
int components_dirs_clash(struct resolver *r);
int components_convert(struct resolver *r, struct rnode *cn,
		       const struct vars *image_vars);
/* the image's components: map, every entry loaded and converted (or,
 * enabled: false, checked and left out) */
int components_convert_all(struct resolver *r, struct rnode *comps);

/* images.c: images: (N, NULL when absent) into the plan: the recipe's
 * (images_convert; NODE unused) and an enabled component's
 * (images_convert_component, COMP its name); a key declared twice is an
 * error naming both places. images_finish() after the components sorts
 * them and applies images.pause to node.pause_image (the node map NODE),
 * which it sets or must agree with. */
int images_convert(struct resolver *r, const struct rnode *n, const struct rnode *node);
int images_convert_component(struct resolver *r, const struct rnode *n, const char *comp);
int images_finish(struct resolver *r, const struct rnode *node);
int images_check_policy(struct resolver *r);

/* updates.c: windows.updates (N, NULL when absent) into a component of
 * its own and its artifacts (IMAGE_VARS: the image's variables). */
int updates_convert(struct resolver *r, const struct rnode *n,
		    const struct vars *image_vars);

/* services.c */
int services_convert_generate(struct resolver *r, const struct rnode *cn,
		     const struct plan_component *c, const struct vars *vs);
int services_convert(struct resolver *r, const struct rnode *cn,
		     const struct plan_component *c, const struct vars *vs);
int services_order(struct resolver *r);

/* versions.c */
int versions_leading_v(struct resolver *r, const struct rnode *cn, const struct rnode *n,
	      const char *ctx, const char *value);
int versions_agree(struct resolver *r, const struct vars *image_vars);
int versions_major_minor(const char *v, long *maj, long *min);
void versions_warnings(struct resolver *r);
int versions_since_met(struct resolver *r);

/* builders.c */
int builders_iso(struct resolver *r, const struct rnode *win);
int builders_convert(struct resolver *r, const struct rnode *top);
/* packer.version N (NULL: the default) into the plan's packer_version
 * and packer_plugins; -1 with R's error at N for anything but
 * MAJOR.MINOR.PATCH. builders_convert_packer(): packer: (N, NULL when
 * absent), its version and payload: pull (after the policy). */
int builders_packer_version(struct resolver *r, const struct rnode *n);
int builders_convert_packer(struct resolver *r, const struct rnode *n);

#endif
