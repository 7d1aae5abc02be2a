/*
 * A container image reference, HOST[:PORT]/REPO[:TAG][@sha256:HEX], parsed
 * strictly: the one parser for the recipe's images: (recipe/images.c) and
 * the registry client (fetch/registry.c).
 */
#ifndef WB_IMAGEREF_H
#define WB_IMAGEREF_H

#include "lib/err.h"

#define IMAGEREF_DIGEST_LEN 71   /* "sha256:" + 64 hex digits */

struct image_ref {
	char *host;                  /* "registry.k8s.io", "localhost:5000" */
	char *repo;                  /* "pause", "windows/nanoserver" */
	char *tag;                   /* or NULL */
	char digest[IMAGEREF_DIGEST_LEN + 1];  /* or "" */
};

/* Parse S into R (image_ref_release frees it): 0, or -1 with WB_EUSAGE
 * naming what is wrong. A reference without a host part (no '.' or ':' in
 * its first component, nor "localhost") is refused: winbuild does not guess
 * Docker Hub. A digest must be sha256 with 64 lowercase hex digits. */
int image_ref_parse(const char *s, struct image_ref *r, struct wb_err *e);
void image_ref_release(struct image_ref *r);

/* 1 when D is "sha256:" and 64 lowercase hex digits. */
int imageref_digest_ok(const char *d);

#endif
