/*
 * @where the payload zip for builders without a CD (re-hashed against the
 *   manifest)
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit/payload.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "trust/digest.h"

#define CHUNK (1u << 20)

static struct archive_entry *new_entry(const char *name, unsigned long long size,
				       long long mtime)
{
	struct archive_entry *ent = archive_entry_new();

	archive_entry_set_pathname(ent, name);
	archive_entry_set_filetype(ent, AE_IFREG);
	archive_entry_set_perm(ent, 0644);
	archive_entry_set_size(ent, (la_int64_t)size);
	archive_entry_set_mtime(ent, (time_t)mtime, 0);
	archive_entry_set_uid(ent, 0);
	archive_entry_set_gid(ent, 0);
	return ent;
}

/* Copy one tree file into the archive, hashing it; compare with F. */
static int add_file(struct archive *a, const char *tree_dir,
		    const struct staged_file *f, long long mtime,
		    unsigned char *chunk, const volatile sig_atomic_t *stop,
		    struct wb_err *e)
{
	char *src = fs_join(tree_dir, f->tree_path), *name;
	struct archive_entry *ent;
	struct digest_ctx dc;
	struct digest_result dr;
	char hex[65];
	int fd, ret = -1;
	ssize_t n = 0;

	memset(&dc, 0, sizeof(dc));
	fd = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && stop && *stop) {
		wb_error(e, WB_EINTR, "interrupted while archiving '%s'", f->tree_path);
		free(src);
		return -1;
	}
	if (fd < 0) {
		wb_error(e, WB_ESTAGE, "cannot open staged file '%s': %s", src, strerror(errno));
		free(src);
		return -1;
	}
	name = xasprintf("tree/%s", f->tree_path);
	ent = new_entry(name, f->size, mtime);
	if (archive_write_header(a, ent) != ARCHIVE_OK) {
		wb_error(e, WB_EIO, "payload archive: '%s': %s", name, archive_error_string(a));
		goto out;
	}
	if (digest_init(&dc, DIGEST_SHA256, e))
		goto out;
	while (!(stop && *stop) && (n = read(fd, chunk, CHUNK)) > 0) {
		if (dc.size + (unsigned long long)n > f->size) {
			wb_error(e, WB_EVERIFY, "staged file '%s' does not match the manifest "
				 "(larger than its size): stage again",
				 f->tree_path);
			goto out;
		}
		digest_update(&dc, chunk, (size_t)n);
		if (archive_write_data(a, chunk, (size_t)n) != n) {
			wb_error(e, WB_EIO, "payload archive: '%s': %s", name,
				 archive_error_string(a));
			goto out;
		}
	}
	if (stop && *stop) {
		wb_error(e, WB_EINTR, "interrupted while archiving '%s'", f->tree_path);
		goto out;
	}
	if (n < 0) {
		wb_error(e, WB_EIO, "cannot read '%s': %s", src, strerror(errno));
		goto out;
	}
	digest_final(&dc, &dr);
	digest_hex(dr.sha256, 32, hex);
	if (dr.size != f->size || strcmp(hex, f->sha256)) {
		wb_error(e, WB_EVERIFY, "staged file '%s' does not match the manifest "
			 "(sha256 %s, manifest %s): stage again", f->tree_path, hex, f->sha256);
		goto out;
	}
	ret = 0;
out:
	digest_release(&dc);
	archive_entry_free(ent);
	free(name);
	free(src);
	close(fd);
	return ret;
}

int payload_write_zip(const char *zip_path, const char *tree_dir,
		      const struct staged_manifest *m,
		      const volatile sig_atomic_t *stop, struct wb_err *e)
{
	struct archive *a = archive_write_new();
	struct archive_entry *ent = NULL;
	unsigned char *chunk = xmalloc(CHUNK);
	int ret = -1;

	if (archive_write_set_format_zip(a) != ARCHIVE_OK ||
	    archive_write_set_options(a, "zip:compression=deflate") != ARCHIVE_OK ||
	    archive_write_open_filename(a, zip_path) != ARCHIVE_OK) {
		wb_error(e, WB_EIO, "cannot create '%s': %s", zip_path, archive_error_string(a));
		goto out;
	}
	ent = new_entry("manifest.json", m->raw.len, m->source_date_epoch);
	if (archive_write_header(a, ent) != ARCHIVE_OK ||
	    archive_write_data(a, m->raw.ptr, m->raw.len) != (la_ssize_t)m->raw.len) {
		wb_error(e, WB_EIO, "payload archive: manifest.json: %s", archive_error_string(a));
		goto out;
	}
	for (size_t i = 0; i < m->nfiles; i++)
		if (add_file(a, tree_dir, &m->files[i], m->source_date_epoch, chunk, stop, e))
			goto out;
	if (archive_write_close(a) != ARCHIVE_OK) {
		wb_error(e, WB_EIO, "cannot finish '%s': %s", zip_path, archive_error_string(a));
		goto out;
	}
	ret = 0;
out:
	archive_entry_free(ent);
	archive_write_free(a);
	free(chunk);
	if (ret)
		unlink(zip_path);
	return ret;
}
