/*
 * Where a container image comes from (issue 44): the one seam through
 * which the fetch step (cmd/pipeimages.c), `winbuild image pull`
 * (cmd/image.c) and the stage (stage/oci.c) get an image. Each source kind
 * fills the same struct registry_image, with every manifest and blob put
 * in the cache only after the whole image (and its cosign signature, when
 * one is required) verified, and the same evidence (registry_image.sig).
 *
 * Kinds:
 *   IMGSOURCE_REGISTRY  an OCI distribution registry or its mirror
 *                       (fetch/registry.h: registry_pull)
 *   IMGSOURCE_LAYOUT    an OCI image layout on disk (images.<key>.layout:
 *                       a directory with oci-layout, index.json and
 *                       blobs/sha256/<hex>, or a .tar of one, as
 *                       `skopeo copy --all ... oci:DIR:TAG` writes it):
 *                       the same pull, every request answered from the
 *                       layout (registry_opts.reader); its cosign
 *                       signature is the manifest index.json names
 *                       sha256-<hex>.sig (org.opencontainers.image.ref.name).
 *                       No symlink in a layout directory is followed.
 *
 * A new kind is one more case here and in imgsource.c; nothing above this
 * module changes (the stage reads every kind back from the cache the same
 * way: imgsource_load).
 */
#ifndef WB_FETCH_IMGSOURCE_H
#define WB_FETCH_IMGSOURCE_H

#include "fetch/cache.h"
#include "fetch/registry.h"
#include "lib/err.h"
#include "lib/imageref.h"
#include "recipe/plan.h"

enum imgsource_kind {
	IMGSOURCE_REGISTRY = 0,
	IMGSOURCE_LAYOUT,
};

struct imgsource {
	enum imgsource_kind kind;
	/* the pull's options (fetch/registry.h): os_version, allow_foreign,
	 * cosign, offline and resolve_tag are every kind's; t, base,
	 * mirror_only and creds are how a registry is reached */
	struct registry_opts o;
	char *base;                  /* owned: o.base, a mirror's URL; for a
				      * layout "oci-layout:PATH", what its
				      * requests are named in messages */
	const char *layout;          /* IMGSOURCE_LAYOUT: the directory or
				      * .tar (plan_image.layout) */
};

/* SRC (imgsource_release) for IM, an image of PLAN: its kind, COMMON's
 * options (the run's: transport, os_version, offline, creds, resolve_tag)
 * with IM's own (allow_foreign), and, for a registry, where it is pulled
 * from: PLAN's first mirror rule for https://HOST/ (an https mirror, or
 * http where policy.allow_http), or its registry; under mirror_only an
 * image no rule covers is an error unless COMMON is offline. 0, or -1
 * (WB_EUSAGE at the rule or the mirror_only) with SRC released. The
 * caller sets SRC->o.cosign. */
int imgsource_for(struct imgsource *src, const struct plan *plan, const struct plan_image *im,
		  const struct registry_opts *common, struct wb_err *e);
void imgsource_release(struct imgsource *src);

/* IM's reference "NAME[:TAG][@DIGEST]" parsed into REF (image_ref_release):
 * what the image is pulled as and named by in the cache's refs. */
int imgsource_ref(const struct plan_image *im, struct image_ref *ref, struct wb_err *e);

/* Pull REF from SRC into the open cache C: IMG filled
 * (registry_image_release). Errors as registry_pull's. */
int imgsource_pull(struct cache *c, const struct imgsource *src, const struct image_ref *ref,
		   struct registry_image *img, struct wb_err *e);

/* The stage's read of IM (pinned; fetched earlier, whatever its source)
 * from the cache C alone, every manifest and blob re-hashed and the
 * image checked again for the Windows build OS_VERSION ("10.0.20348");
 * no request is made, and the signature is not asked again (the fetch
 * verified it). Errors: WB_ENET something not in the cache, WB_EVERIFY,
 * WB_EUSAGE IM not pinned, WB_EIO. */
int imgsource_load(struct cache *c, const struct plan_image *im, const char *os_version,
		   struct registry_image *img, struct wb_err *e);

#endif
