/*
 * Filesystem helpers. Every function that writes a user-visible file does
 * so atomically (temp file in the same directory, fsync, rename), so a
 * crash never leaves a half-written file at the final path.
 */
#ifndef WB_FS_H
#define WB_FS_H

#include <stddef.h>
#include <sys/types.h>

#include "buf.h"
#include "err.h"

/* mkdir -p; existing directories are fine. Errors are WB_EIO. */
int fs_mkdir_p(const char *path, mode_t mode, struct wb_err *e);

/* Read a whole file into OUT (appended). Files larger than MAX bytes are an
 * error of class TOOBIG_CODE (the caller decides whether that is a usage or
 * an I/O problem). */
int fs_read_file(const char *path, size_t max, int toobig_code, struct buf *out,
		 struct wb_err *e);

/* Write all LEN bytes of DATA to FD, retrying short writes and EINTR.
 * Returns 0, or -1 with errno set. */
int fs_write_all(int fd, const void *data, size_t len);

/* Write DATA to PATH atomically with MODE. */
int fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
		    struct wb_err *e);

/* fs_write_atomic without the fsync: for a file that only saves work
 * (the cache refs), whose loss or tearing by a crash is read as "absent".
 * Other processes never see a partial file (the rename); a crash may
 * leave the old one, none, or an empty or torn one. */
int fs_write_hint(const char *path, const void *data, size_t len, mode_t mode,
		  struct wb_err *e);

/*
 * rm -rf ROOT/REL, and nothing that is not strictly beneath the directory
 * ROOT: REL is relative and every component of it passes names_segment_ok
 * (no "", ".", ".." or separator tricks); it is reached from ROOT one
 * openat(O_NOFOLLOW) at a time, so a symlink on the way is never followed;
 * the entry removed must be a directory, and its contents are removed
 * through directory descriptors without following any symlink inside.
 * No error if ROOT/REL does not exist. Errors are WB_EIO.
 */
int fs_remove_tree(const char *root, const char *rel, struct wb_err *e);

/* fs_remove_tree of PATH beneath ROOT, where PATH is ROOT + '/' + REL:
 * refused (WB_EIO) when PATH does not start with ROOT + '/'. */
int fs_remove_below(const char *root, const char *path, struct wb_err *e);

/*
 * A copy of the directory SRC at DST (made, mode 0700): files copied (a
 * reflink where the filesystem has them) with their modes and times,
 * directories made anew with theirs, symlinks copied as links (never
 * followed), other file types refused; SRC's top-level entries whose name
 * starts with '.' left out. SRC's inodes are never touched (no hard link:
 * the stage's tree fingerprint includes each file's ctime). Errors are
 * WB_EIO; DST may then be partial.
 */
int fs_copy_tree(const char *src, const char *dst, struct wb_err *e);

/* Pointer to the last path component of PATH (after the last '/'). */
const char *fs_basename(const char *path);

/* Directory part of PATH, newly allocated ("." when there is none). */
char *fs_dirname(const char *path);

/* Join A and B with one '/', newly allocated. */
char *fs_join(const char *a, const char *b);

/* 1 if PATH exists (lstat), 0 otherwise. */
int fs_exists(const char *path);

/* Whether PATH, every link in it followed, resolves inside directory DIR
 * (also resolved): 1 inside, 0 outside, -1 when either does not resolve
 * (a missing file, a dangling link). */
int fs_within(const char *dir, const char *path);

/* Open for reading the file a caller verified: a new description (its own
 * offset, the same inode) of the open file FD, or, when FD is -1, PATH
 * opened without following a link or blocking on a FIFO. Either way it
 * must be a regular file. The descriptor, or -1 with errno. For files in
 * untrusted storage (the cache): never a second open by name of bytes
 * already checked. */
int fs_open_verified(int fd, const char *path);

#endif
