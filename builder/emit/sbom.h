/*
 * OUT/<recipe>/sbom.cdx.json: a CycloneDX 1.5 JSON SBOM of a staged output
 * (docs/provenance.md). Built from the staged manifest (files, digests,
 * Authenticode results), the plan (purl, licence, homepage) and what fetch
 * verified (signer key id, trusted comment, and the SHA-512 or BLAKE2b-512
 * a pin or method computed; nothing is read again). Deterministic: the timestamp is the manifest's
 * source_date_epoch and the serial number a UUID made from the SHA-256 of
 * the document without it.
 */
#ifndef WB_EMIT_SBOM_H
#define WB_EMIT_SBOM_H

#include <stddef.h>

#include "lib/err.h"
#include "recipe/plan.h"
#include "trust/verify.h"

/* What fetch knows about one artifact, in plan order. */
struct sbom_artifact {
	const char *name;
	const char *path;             /* the verified cache entry */
	const char *sha512;           /* from fetch when a pin or method
					 checked it, else NULL/"": not listed */
	const char *blake2b512;       /* the same (minisign) */
	const struct verify_evidence *ev;  /* how it verified, or NULL: the
					      methods (without the lock pin,
					      so a --locked build gives the
					      same SBOM), each method's
					      sbom_fields, the further signers */
};

/*
 * Write PATH (atomically) for PLAN from the manifest at MANIFEST_PATH and
 * ARTS (N, one per plan artifact), and PULLED (PLAN's images as the fetch
 * verified them, or NULL): an image's cosign evidence in its container
 * component. A cache entry whose SHA-256 is not the manifest's is
 * WB_EVERIFY; unreadable files WB_EIO; a malformed manifest WB_ESTAGE.
 */
struct registry_image;
int sbom_write(const char *path, const struct plan *plan,
	       const char *manifest_path, const struct sbom_artifact *arts,
	       size_t n, const struct registry_image *pulled, struct wb_err *e);

#endif
