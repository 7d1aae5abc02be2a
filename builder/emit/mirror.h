/*
 * `winbuild mirror`: write verified artifacts into a directory laid out as
 * DIR/<upstream host>/<upstream path> (the layout the image-builder var
 * file's --mirror-url assumes, emit/imagebuilder.h), each with
 * <file>.sha256 and <file>.sha512 (sha256sum format), its signature
 * (<file>.minisig: the upstream one that verified, or a new one made with
 * an enterprise key), the further requirements' signatures (a site's
 * `signatures:`) at their own URLs' mirror paths, copies at the
 * checksum/signature URLs the recipe uses (e.g. .sha256sum), and
 * DIR/index.json. Nothing here prints.
 */
#ifndef WB_EMIT_MIRROR_H
#define WB_EMIT_MIRROR_H

#include <stddef.h>
#include <time.h>

#include "lib/err.h"
#include "recipe/plan.h"
#include "trust/minisign.h"
#include "trust/verify.h"

struct mirror_artifact {
	const struct plan_artifact *art;
	const char *path;          /* the verified cache entry (messages) */
	int fd;                    /* open on the verified file (read from
				    * here, never reopened by name), or -1:
				    * PATH, opened without following a link */
	const char *sha256;        /* its verified digest */
	const struct verify_evidence *ev;  /* how it verified: each signature
					      (TRUST_SIGNATURE evidence) is
					      exported as it verified */
};

struct mirror_opts {
	const char *dir;
	const struct minisign_seckey *sign;  /* re-sign with this key, or NULL */
	time_t epoch;              /* timestamp: in new trusted comments */
};

struct mirror_stats {
	size_t artifacts, signatures, resigned, unsigned_;
};

/* "host/path" of URL for the mirror layout: no query or fragment, no empty,
 * "." or ".." segment. New string, or NULL with WB_EUSAGE. */
char *mirror_rel_path(const char *url, struct wb_err *e);

int mirror_write(const struct plan *plan, const struct mirror_artifact *arts,
		 size_t n, const struct mirror_opts *o, struct mirror_stats *st,
		 struct wb_err *e);

/*
 * The container images PULLED (plan->nimages, as pipe_fetch_images left
 * them; NULL: none) from the cache C into DIR/registry/<registry host>/, a
 * static tree of the OCI distribution API's read side that any web server
 * serves as the root of a registry mirror (mirror_images.c):
 *
 *   v2/<repo>/manifests/<pin digest>, .../<tag>    the pinned list (or manifest)
 *   v2/<repo>/manifests/<manifest digest>          the build's manifest
 *   v2/<repo>/blobs/<digest>                       its config and layers
 *   v2/<repo>/manifests/sha256-<hex>.sig, <digest> the cosign signature
 *   v2/<repo>/blobs/<payload digest>               its payloads
 *   nginx-locations.conf                           /v2/ and each manifest's
 *                                                  media type, for nginx
 *
 * A recipe's mirror rule from https://<host>/ to where it is served makes
 * the next winbuild pull (and verify) from it. And each image as an OCI
 * image layout, DIR/images/<key>/ (oci-layout, index.json: the pin by its
 * tag, the signature as sha256-<hex>.sig; blobs/sha256/), the source
 * `images.<key>.layout` the export's override names (issue 42). Every file
 * is hashed again as it is copied. *N: the images written.
 */
struct cache;
struct registry_image;
int mirror_write_images(struct cache *c, const struct plan *plan,
			const struct registry_image *pulled, const char *dir, size_t *n,
			struct wb_err *e);

#endif
