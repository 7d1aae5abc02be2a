#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"

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

int fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
		    struct wb_err *e)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	const char *p = data;
	int fd, ret = 0;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0) {
		ret = wb_error(e, WB_EIO, "cannot create '%s': %s", tmp,
			       strerror(errno));
		goto out;
	}
	if (fs_write_all(fd, p, len) < 0)
		ret = wb_error(e, WB_EIO, "cannot write '%s': %s", tmp, strerror(errno));
	if (!ret && fsync(fd) < 0)
		ret = wb_error(e, WB_EIO, "cannot sync '%s': %s", tmp,
			       strerror(errno));
	if (close(fd) < 0 && !ret)
		ret = wb_error(e, WB_EIO, "cannot close '%s': %s", tmp,
			       strerror(errno));
	if (!ret && fchmodat(AT_FDCWD, tmp, mode, 0) < 0)
		ret = wb_error(e, WB_EIO, "cannot chmod '%s': %s", tmp,
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

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) < 0 && errno != ENOENT ? -1 : 0;
	return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
}

int fs_remove_tree(const char *path, struct wb_err *e)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return 0;
	if (!S_ISDIR(st.st_mode)) {
		if (unlink(path) < 0)
			return wb_error(e, WB_EIO, "cannot remove '%s': %s", path,
					strerror(errno));
		return 0;
	}
	/* Make directories writable first so a read-only tree can go. */
	if (nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS) < 0)
		return wb_error(e, WB_EIO, "cannot remove '%s': %s", path,
				strerror(errno));
	return 0;
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
