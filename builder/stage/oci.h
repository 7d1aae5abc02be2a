/*
 * One pulled container image as an OCI image-layout tar (issue 33), the
 * file `ctr -n k8s.io images import` takes: deterministic bytes (entries
 * sorted, directories first; uid/gid 0, no user names; every mtime
 * MTIME; pax restricted, so plain names carry no extended header),
 *
 *   blobs/sha256/<hex>   the pinned list or index (when there is one), the
 *                        image manifest, its config and layers, read from
 *                        the cache and hashed as they are read
 *   index.json           one descriptor: the image manifest of the
 *                        recipe's Windows build (not the pinned list: only
 *                        this build's blobs are in the tar, and containerd's
 *                        import would walk every windows/amd64 entry of a
 *                        list: oci.c index_json()), annotated
 *                        io.containerd.image.name (NAME, what containerd's
 *                        importer names the image) and
 *                        org.opencontainers.image.ref.name (the tag)
 *   oci-layout           {"imageLayoutVersion":"1.0.0"}
 *
 * So containerd names the image at the manifest's digest (`ctr images ls`
 * DIGEST, what step 06-images checks: the manifest's images[].
 * manifest_digest); the pinned list is in the tar as a blob only.
 */
#ifndef WB_STAGE_OCI_H
#define WB_STAGE_OCI_H

#include <time.h>

#include "fetch/cache.h"
#include "fetch/imgsource.h"
#include "lib/err.h"
#include "recipe/plan.h"

/* What oci_archive_write wrote: its SHA-256 (64 hex) and size. */
struct oci_written {
	char sha256[65];
	unsigned long long size;
};

/* Write IMG (pulled into C: imgsource_pull) to FD as above, *RES (when not
 * NULL) set from the bytes as they were written. NAME is the
 * image's name:tag, TAG its tag (NULL: no ref.name annotation). A blob
 * whose bytes no longer hash to its name is quarantined: WB_EVERIFY (the
 * caller removes the half-written file). Other errors WB_EIO. */
int oci_archive_write(struct cache *c, const struct registry_image *img, const char *name,
		      const char *tag, int fd, time_t mtime, struct oci_written *res,
		      struct wb_err *e);

/* Where the stage places each image's tar: C:\ProgramData\winbuild\images\<key>.tar */
#define STAGE_IMAGES_DIR "ProgramData/winbuild/images"

struct tree;
struct plan;
/* Every image of PLAN (images:) as STAGE_IMAGES_DIR/<key>.tar in T: read
 * from the cache at CACHE_DIR and verified again (imgsource_load, offline:
 * fetch pulled them), written as above, claimed for component "images"
 * with the image's key as its artifact; one manifest.json "images" entry
 * each appended to IMAGES (key, name, tag, digest, manifest_digest,
 * os_version, tree_path: docs/manifest.md). Errors: WB_EVERIFY, WB_ENET (not
 * in the cache), WB_EIO. */
int stage_images(struct tree *t, const struct plan *plan, const char *cache_dir,
		 struct json_t *images, struct wb_err *e);

#endif
