/* Bulk writes and copies through O_DIRECT where it works: see bulk.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "bulk.h"

void *bulk_alloc(size_t n)
{
	void *p = NULL;

	if (posix_memalign(&p, BULK_ALIGN, n ? n : 1)) {
		fprintf(stderr, "winbuild: out of memory (%zu bytes)\n", n);
		abort();
	}
	return p;
}

/* A second descriptor of the regular file FD with FLAGS|O_DIRECT, or -1
 * (not a regular file, or the filesystem refuses). */
static int bulk_open_direct(int fd, int flags)
{
	char path[64];
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return open(path, flags | O_DIRECT | O_CLOEXEC);
}

void bulk_begin(struct bulk *b, int fd)
{
	off_t off = lseek(fd, 0, SEEK_CUR);

	memset(b, 0, sizeof(*b));
	b->fd = fd;
	b->off = off;   /* -1: not seekable (a pipe), plain write(2) */
	b->dfd = off < 0 ? -1 : bulk_open_direct(fd, O_WRONLY);
	b->stage = bulk_alloc(BULK_BLOCK);
}

static int is_aligned(const void *p, off_t off)
{
	return (uintptr_t)p % BULK_ALIGN == 0 && off % BULK_ALIGN == 0;
}

/* pread(2) of up to N bytes at OFF: through *DFD when BUF, N and OFF are
 * aligned, else through FD; a direct read refused with EINVAL closes *DFD
 * (-1 from then on) and reads through FD. */
static ssize_t bulk_pread(int fd, int *dfd, void *buf, size_t n, off_t off)
{
	ssize_t k;

	for (;;) {
		if (*dfd >= 0 && n % BULK_ALIGN == 0 && is_aligned(buf, off)) {
			k = pread(*dfd, buf, n, off);
			if (k < 0 && errno == EINVAL) {
				close(*dfd);   /* no direct read here after all */
				*dfd = -1;
				continue;
			}
		} else {
			k = pread(fd, buf, n, off);
		}
		if (k < 0 && errno == EINTR)
			continue;
		return k;
	}
}

/* Write N bytes of P at b->off through descriptor FD. */
static int pwrite_all(struct bulk *b, int fd, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t k = b->off < 0 ? write(fd, p, n) : pwrite(fd, p, n, b->off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0) {
			errno = EIO;
			return -1;
		}
		p += k;
		n -= (size_t)k;
		if (b->off >= 0)
			b->off += k;
		if (fd == b->dfd && n % BULK_ALIGN)
			break;   /* a short direct write: the rest goes below */
	}
	return n ? pwrite_all(b, b->fd, p, n) : 0;
}

/* Write N bytes of P at b->off: the aligned part directly when P and the
 * offset allow it, the rest (or all, without a direct descriptor) through
 * b->fd. */
static int put(struct bulk *b, const unsigned char *p, size_t n)
{
	size_t direct = b->dfd >= 0 && is_aligned(p, b->off) ? n - n % BULK_ALIGN : 0;

	if (direct) {
		off_t at = b->off;

		if (pwrite_all(b, b->dfd, p, direct) < 0) {
			if (errno != EINVAL || b->off != at)
				return -1;
			/* the filesystem takes no direct write after all */
			close(b->dfd);
			b->dfd = -1;
			return put(b, p, n);
		}
		p += direct;
		n -= direct;
	}
	return n ? pwrite_all(b, b->fd, p, n) : 0;
}

/* Write the staged bytes: all of them when ALL, else the aligned part
 * (the rest moves to the front). */
static int flush_stage(struct bulk *b, int all)
{
	size_t k = all || b->off % BULK_ALIGN ? b->fill : b->fill - b->fill % BULK_ALIGN;

	if (k && put(b, b->stage, k) < 0)
		return -1;
	memmove(b->stage, b->stage + k, b->fill - k);
	b->fill -= k;
	return 0;
}

/*
 * @where where bulk bytes are written past the page cache (O_DIRECT where the
 *   filesystem takes it)
 */
int bulk_write(struct bulk *b, const void *data, size_t n)
{
	const unsigned char *p = data;

	while (n) {
		size_t k;

		if (!b->fill && b->dfd < 0) {
			k = n;   /* no direct writes: nothing to stage for */
			if (put(b, p, k) < 0)
				return -1;
		} else if (!b->fill && n >= BULK_ALIGN && is_aligned(p, b->off)) {
			k = n - n % BULK_ALIGN;   /* straight from the caller's memory */
			if (put(b, p, k) < 0)
				return -1;
		} else {
			k = BULK_BLOCK - b->fill;
			if (k > n)
				k = n;
			memcpy(b->stage + b->fill, p, k);
			b->fill += k;
			if (b->fill == BULK_BLOCK && flush_stage(b, 0) < 0)
				return -1;
		}
		p += k;
		n -= k;
	}
	return 0;
}

int bulk_flush(struct bulk *b)
{
	if (b->fill && flush_stage(b, 1) < 0)
		return -1;
	return b->off >= 0 && lseek(b->fd, b->off, SEEK_SET) < 0 ? -1 : 0;
}

int bulk_end(struct bulk *b)
{
	int ret = bulk_flush(b), err = errno;

	if (b->dfd >= 0)
		close(b->dfd);
	b->dfd = -1;
	free(b->stage);
	b->stage = NULL;
	b->fill = 0;
	errno = err;
	return ret;
}

/*
 * @where where bulk bytes are written past the page cache (O_DIRECT where the
 *   filesystem takes it) -- the one copy loop: the sink, the tree's copies,
 *   `winbuild mirror`
 */
int bulk_copy(int in, int out, void (*each)(void *ctx, const void *p, size_t n),
	      void *ctx, int *writing)
{
	off_t at = lseek(in, 0, SEEK_CUR);   /* -1: not seekable, plain reads */
	int din = at >= 0 ? bulk_open_direct(in, O_RDONLY) : -1;
	unsigned char *block = bulk_alloc(BULK_BLOCK);
	struct bulk b;
	int ret = 0, err = 0;

	*writing = 0;
	bulk_begin(&b, out);
	for (;;) {
		ssize_t n;

		if (at >= 0)
			n = bulk_pread(in, &din, block, BULK_BLOCK, at);
		else
			n = read(in, block, BULK_BLOCK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = (int)n;
			err = errno;
			break;
		}
		if (at >= 0)
			at += n;
		if (each)
			each(ctx, block, (size_t)n);
		if (bulk_write(&b, block, (size_t)n) < 0) {
			ret = -1;
			err = errno;
			*writing = 1;
			break;
		}
	}
	if (bulk_end(&b) < 0 && !ret) {
		ret = -1;
		err = errno;
		*writing = 1;
	}
	if (din >= 0)
		close(din);
	if (at >= 0 && lseek(in, at, SEEK_SET) < 0 && !ret) {
		ret = -1;
		err = errno;
	}
	free(block);
	errno = err;
	return ret;
}
