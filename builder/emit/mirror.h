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

#endif
