#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <linux/fs.h>
#include <unistd.h>

#include "fs.h"
#include "names.h"

int fs_mkdir_p(const char *path, mode_t mode, struct wb_err *e)
{
	char *p = xstrdup(path), *s;
	int ret = 0;

	for (s = p + 1; ; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			ret = wb_error(e, WB_EIO, "cannot create directory '%s': %s",
				       p, strerror(errno));
			break;
		}
		*s = c;
		if (!c)
			break;
	}
	if (!ret) {
		struct stat st;
		if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
			ret = wb_error(e, WB_EIO, "'%s' is not a directory", path);
	}
	free(p);
	return ret;
}

int fs_read_file(const char *path, size_t max, int toobig_code, struct buf *out,
		 struct wb_err *e)
{
	char tmp[65536];
	size_t total = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return wb_error(e, errno == ENOENT ? WB_EUSAGE : WB_EIO,
				"cannot open '%s': %s", path, strerror(errno));
	while ((n = read(fd, tmp, sizeof(tmp))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int err = errno;
			close(fd);
			return wb_error(e, WB_EIO, "cannot read '%s': %s", path,
					strerror(err));
		}
		total += (size_t)n;
		if (total > max) {
			close(fd);
			return wb_error(e, toobig_code,
					"'%s' is larger than the limit of %zu bytes",
					path, max);
		}
		buf_add(out, tmp, (size_t)n);
	}
	close(fd);
	return 0;
}

int fs_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Write PATH through a temp file beside it: created by mkostemp (O_EXCL, a
 * private name, mode 0600 from the first instant, so a planted symlink is
 * never followed and a secret is never readable by others, whatever the
 * umask), given MODE through its descriptor before any byte is written,
 * then renamed over PATH.
 */
static int write_renamed(const char *path, const void *data, size_t len, mode_t mode,
			 int sync, struct wb_err *e)
{
	char *tmp = xasprintf("%s.tmp.XXXXXX", path);
	const char *p = data;
	int fd, ret = 0;

	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		ret = wb_error(e, WB_EIO, "cannot create a temp file for '%s': %s", path,
			       strerror(errno));
		goto out;
	}
	if (fchmod(fd, mode) < 0)
		ret = wb_error(e, WB_EIO, "cannot chmod '%s': %s", tmp,
			       strerror(errno));
	if (!ret && fs_write_all(fd, p, len) < 0)
		ret = wb_error(e, WB_EIO, "cannot write '%s': %s", tmp, strerror(errno));
	if (!ret && sync && fsync(fd) < 0)
		ret = wb_error(e, WB_EIO, "cannot sync '%s': %s", tmp,
			       strerror(errno));
	if (close(fd) < 0 && !ret)
		ret = wb_error(e, WB_EIO, "cannot close '%s': %s", tmp,
			       strerror(errno));
	if (!ret && rename(tmp, path) < 0)
		ret = wb_error(e, WB_EIO, "cannot rename '%s' to '%s': %s", tmp,
			       path, strerror(errno));
	if (ret)
		unlink(tmp);
out:
	free(tmp);
	return ret;
}

/*
 * @where where a file is written atomically -- a private `mkostemp` temp file
 *   (0600, `O_EXCL`), the mode set through its descriptor, then renamed
 */
int fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
		    struct wb_err *e)
{
	return write_renamed(path, data, len, mode, 1, e);
}

/*
 * @where where a file is written atomically -- the same without the fsync,
 *   for the cache refs
 */
int fs_write_hint(const char *path, const void *data, size_t len, mode_t mode,
		  struct wb_err *e)
{
	return write_renamed(path, data, len, mode, 0, e);
}

/* Remove the entry NAME of the directory DFD and everything below it,
 * never following a symlink (a symlink is unlinked, not entered). */
static int rm_at(int dfd, const char *name, int depth)
{
	struct dirent *de;
	DIR *d;
	int fd, err = 0;

	if (!unlinkat(dfd, name, 0) || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	if (depth > 4096) {
		errno = ELOOP;
		return -1;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	(void)fchmod(fd, 0700);   /* a read-only directory can go too */
	if (!(d = fdopendir(fd))) {
		close(fd);
		return -1;
	}
	while (!err && (de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			err = rm_at(dirfd(d), de->d_name, depth + 1);
	closedir(d);
	if (err)
		return -1;
	return unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -1 : 0;
}

/*
 * @where recursive deletion, only strictly below a root winbuild owns (no
 *   symlink followed)
 */
int fs_remove_tree(const char *root, const char *rel, struct wb_err *e)
{
	char *copy = xstrdup(rel), *seg, *next;
	const char *why = NULL;
	int fd, ret = 0;
	struct stat st;

	if (!*rel || rel[0] == '/') {
		why = "not a path below it";
		goto bad;
	}
	for (seg = copy; seg; seg = next) {
		next = strchr(seg, '/');
		if (next)
			*next++ = '\0';
		if (!names_segment_ok(seg, &why))
			goto bad;
	}
	free(copy);
	copy = xstrdup(rel);
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		free(copy);
		if (errno == ENOENT)
			return 0;
		return wb_error(e, WB_EIO, "cannot open '%s': %s", root, strerror(errno));
	}
	for (seg = copy; (next = strchr(seg, '/')) != NULL; seg = next) {
		int sub;

		*next++ = '\0';
		sub = openat(fd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (sub < 0) {
			ret = errno == ENOENT ? 0 :
				wb_error(e, WB_EIO, "cannot remove '%s/%s': '%s' is not a "
					 "directory to enter: %s", root, rel, seg,
					 strerror(errno));
			free(copy);
			return ret;
		}
		fd = sub;
	}
	if (fstatat(fd, seg, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			ret = wb_error(e, WB_EIO, "cannot stat '%s/%s': %s", root, rel,
				       strerror(errno));
	} else if (!S_ISDIR(st.st_mode)) {
		ret = wb_error(e, WB_EIO, "not removing '%s/%s': winbuild made a "
			       "directory there, and it is not one", root, rel);
	} else if (rm_at(fd, seg, 0) < 0) {
		ret = wb_error(e, WB_EIO, "cannot remove '%s/%s': %s", root, rel,
			       strerror(errno));
	}
	close(fd);
	free(copy);
	return ret;
bad:
	free(copy);
	return wb_error(e, WB_EIO, "refusing to remove '%s' below '%s': %s", rel,
			root, why);
}

int fs_remove_below(const char *root, const char *path, struct wb_err *e)
{
	size_t n = strlen(root);

	if (strncmp(path, root, n) || path[n] != '/')
		return wb_error(e, WB_EIO, "refusing to remove '%s': not below '%s'",
				path, root);
	return fs_remove_tree(root, path + n + 1, e);
}

const char *fs_basename(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

char *fs_dirname(const char *path)
{
	const char *s = strrchr(path, '/');

	if (!s)
		return xstrdup(".");
	if (s == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(s - path));
}

char *fs_join(const char *a, const char *b)
{
	size_t la = strlen(a);

	if (!la || !strcmp(a, "."))
		return xstrdup(b);
	if (a[la - 1] == '/')
		return xasprintf("%s%s", a, b);
	return xasprintf("%s/%s", a, b);
}

int fs_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/*
 * @where the one guard for a component's Windows objects (every key marked
 *   `S_WIN(kind)`) -- templates
 */
int fs_within(const char *dir, const char *path)
{
	char *d = realpath(dir, NULL), *f = d ? realpath(path, NULL) : NULL;
	size_t n = d ? strlen(d) : 0;
	int ret = -1;

	if (d && f)
		ret = !strncmp(f, d, n) && (f[n] == '/' || (n == 1 && f[1]));
	free(d);
	free(f);
	return ret;
}

int fs_open_verified(int fd, const char *path)
{
	char proc[64];
	struct stat st;
	int in;

	if (fd >= 0) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		in = open(proc, O_RDONLY | O_CLOEXEC);
	} else {
		in = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	}
	if (in >= 0 && (fstat(in, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(in);
		errno = EINVAL;
		return -1;
	}
	return in;
}

/* fs_copy_tree's copy of the regular file N of SFD into DFD: a reflink
 * where the filesystem has them, else its bytes; its mode and times. */
static int copy_file(int sfd, int dfd, const char *n, const struct stat *st)
{
	struct timespec ts[2] = { st->st_atim, st->st_mtim };
	char b[65536];
	int in = openat(sfd, n, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), out, ret = 0;
	ssize_t r;

	if (in < 0)
		return -1;
	out = openat(dfd, n, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		close(in);
		return -1;
	}
	if (ioctl(out, FICLONE, in) < 0) {
		while ((r = read(in, b, sizeof(b))) > 0)
			if (fs_write_all(out, b, (size_t)r) < 0)
				break;
		ret = r == 0 ? 0 : -1;
	}
	if (!ret && (fchmod(out, st->st_mode & 07777) < 0 || futimens(out, ts) < 0))
		ret = -1;
	close(in);
	if (close(out) < 0)
		ret = -1;
	return ret;
}

/* fs_copy_tree's walk: the entries of the directory SFD into DFD. */
static int copy_dir(int sfd, int dfd, int top, const char *what, struct wb_err *e)
{
	DIR *d = fdopendir(sfd);
	struct dirent *de;
	int ret = 0;

	if (!d) {
		close(sfd);
		return wb_error(e, WB_EIO, "cannot read '%s': %s", what, strerror(errno));
	}
	while (ret == 0 && (de = readdir(d))) {
		const char *n = de->d_name;
		struct stat st;
		char target[4096];
		ssize_t tl;

		if (!strcmp(n, ".") || !strcmp(n, "..") || (top && n[0] == '.'))
			continue;
		if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			ret = wb_error(e, WB_EIO, "cannot stat '%s/%s': %s", what, n,
				       strerror(errno));
		} else if (S_ISDIR(st.st_mode)) {
			struct timespec ts[2] = { st.st_atim, st.st_mtim };
			int s2, d2;

			if (mkdirat(dfd, n, 0700) < 0 ||
			    (s2 = openat(dirfd(d), n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					 O_CLOEXEC)) < 0) {
				ret = wb_error(e, WB_EIO, "cannot copy '%s/%s': %s", what, n,
					       strerror(errno));
				break;
			}
			d2 = openat(dfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (d2 < 0) {
				close(s2);
				ret = wb_error(e, WB_EIO, "cannot open the copy of '%s/%s': %s",
					       what, n, strerror(errno));
				break;
			}
			ret = copy_dir(s2, d2, 0, what, e);
			if (ret == 0 && (fchmod(d2, st.st_mode & 07777) < 0 ||
					 futimens(d2, ts) < 0))
				ret = wb_error(e, WB_EIO, "cannot set the mode or time of a copy "
					       "of '%s/%s': %s", what, n, strerror(errno));
			close(d2);
		} else if (S_ISLNK(st.st_mode)) {
			tl = readlinkat(dirfd(d), n, target, sizeof(target) - 1);
			if (tl < 0 || (target[tl] = 0, symlinkat(target, dfd, n) < 0))
				ret = wb_error(e, WB_EIO, "cannot copy the link '%s/%s': %s",
					       what, n, strerror(errno));
		} else if (!S_ISREG(st.st_mode) || copy_file(dirfd(d), dfd, n, &st) < 0) {
			ret = wb_error(e, WB_EIO, "cannot copy '%s/%s': %s", what, n,
				       S_ISREG(st.st_mode) ? strerror(errno) : "not a file");
		}
	}
	closedir(d);
	return ret;
}

int fs_copy_tree(const char *src, const char *dst, struct wb_err *e)
{
	int sfd = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), dfd;

	if (sfd < 0)
		return wb_error(e, WB_EIO, "cannot open '%s': %s", src, strerror(errno));
	if (mkdir(dst, 0700) < 0 ||
	    (dfd = open(dst, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		close(sfd);
		return wb_error(e, WB_EIO, "cannot make '%s': %s", dst, strerror(errno));
	}
	if (copy_dir(sfd, dfd, 1, src, e) < 0) {
		close(dfd);
		return -1;
	}
	close(dfd);
	return 0;
}
