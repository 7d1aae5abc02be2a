/*
 * The payload archive for the builders whose transfer is PLATFORM_ARCHIVE
 * (lib/platform.c): one zip holding manifest.json and tree/<tree_path> for every
 * file of the manifest, uploaded by Packer's `file` provisioner and
 * expanded in the VM by scripts/02-payload.ps1.
 *
 * Deterministic: entries in manifest order (sorted by tree_path), mtime
 * SOURCE_DATE_EPOCH from the manifest, uid/gid 0, no user names, mode 0644.
 * Every file is re-hashed while it is archived: a file that no longer
 * matches the manifest is WB_EVERIFY and no archive is left behind.
 */
#ifndef WB_EMIT_PAYLOAD_H
#define WB_EMIT_PAYLOAD_H

#include <signal.h>

#include "stage/manifest.h"
#include "lib/err.h"

/* STOP (may be NULL): set by a signal handler; checked before every chunk,
 * the archive is then removed and the error is WB_EINTR. */
int payload_write_zip(const char *zip_path, const char *tree_dir,
		      const struct staged_manifest *m,
		      const volatile sig_atomic_t *stop, struct wb_err *e);

#endif
