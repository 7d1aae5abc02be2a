/*
 * Reading the staged manifest (OUT/<recipe>/manifest.json, docs/manifest.md):
 * the one reader of the format stage/manifest.c writes (stage_write_manifest),
 * for the stage's own reuse, emit, `verify` and the SBOM. Every string is
 * owned by the struct; staged_manifest_release frees them.
 */
#ifndef WB_STAGE_MANIFEST_H
#define WB_STAGE_MANIFEST_H

#include <stddef.h>

#include "lib/buf.h"
#include "lib/err.h"

struct staged_artifact {
	char *name, *component, *version, *url, *action, *destination;
	char sha256[65];
	unsigned long long size;
};

struct staged_file {
	char *path;        /* Windows path */
	char *tree_path;   /* relative, '/' separated */
	char *artifact;    /* NULL for generated files */
	char *component;   /* may be NULL */
	char sha256[65];
	unsigned long long size;
	int generated;
	/* "lifetime": "build": only the build uses it; the step that used it
	 * removes it from the image ("node": the node keeps it) */
	int build_only;
	/* "authenticode" of a checked file (docs/manifest.md) */
	int has_authenticode, auth_signed;
	char *auth_signer, *auth_issuer, *auth_thumbprint, *auth_digest,
		*auth_timestamp;
	/* a file the site signed (stage/sitesign.h): the upstream digest,
	 * and the site signature's signer and certificate thumbprint */
	int site_signed;
	char upstream_sha256[65];
	char *site_signer, *site_thumbprint;
};

/* "images": a container image staged as an OCI layout tar (issue 33) */
struct staged_image {
	char *key, *digest;
	char *manifest_digest;   /* the manifest for the image's Windows build */
	char *os_version;        /* its config's os.version */
};

struct staged_manifest {
	char *image, *windows_version;
	long long source_date_epoch;
	struct staged_artifact *artifacts;
	size_t nartifacts;
	struct staged_file *files;
	size_t nfiles;
	char **directories;
	size_t ndirectories;
	struct staged_image *images;
	size_t nimages;
	struct buf raw;    /* the file's bytes, copied into the payload as is */
};

/*
 * Read and check PATH: schema 1, every file with a relative tree_path
 * without "..", a 64-hex sha256, sorted by tree_path. Errors: WB_EIO when
 * unreadable, WB_ESTAGE when malformed (names the field).
 */
int staged_manifest_read(const char *path, struct staged_manifest *m,
			 struct wb_err *e);
void staged_manifest_release(struct staged_manifest *m);

#endif
