/*
 * image-builder interop: a JSON var file for kubernetes-sigs/image-builder's
 * Windows Packer templates (images/capi/packer/config/windows/ JSON names:
 * containerd_url, containerd_sha256_windows, kubernetes_base_url,
 * cloudbase_init_url, nssm_url, ...), pointing at a mirror of the verified
 * artifacts laid out as MIRROR/<upstream host>/<upstream path> (the layout
 * `winbuild mirror` keeps), with digests from the lock.
 */
#ifndef WB_EMIT_IMAGEBUILDER_H
#define WB_EMIT_IMAGEBUILDER_H

#include "fetch/lockfile.h"
#include "lib/err.h"
#include "lib/strlist.h"
#include "recipe/plan.h"

/* The mirror URL of upstream URL UP: MIRROR/ + names_url_path(UP), the
 * layout `winbuild mirror` writes. New string, or NULL when UP does not map. */
char *imagebuilder_mirror_url(const char *mirror, const char *up);

/*
 * Write the var file to PATH (directories created). Every artifact used
 * must be in the lock (WB_EUSAGE otherwise: "run winbuild lock"). Notes
 * about variables left out go to WARNINGS.
 */
int imagebuilder_write(const char *path, const struct plan *p,
		       const struct lockfile *lf, const char *mirror,
		       struct wb_strlist *warnings, struct wb_err *e);

#endif
