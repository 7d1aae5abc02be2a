/* lib/bulk: whatever the sizes, offsets and memory alignment of the
 * pieces, the file gets exactly the bytes of one plain write, the
 * descriptor's offset ends after them, and a copy (direct reads or not)
 * hands every byte to EACH in order. Pipes (no offset, no O_DIRECT) work
 * too. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/bulk.h"

static int tmp_fd(void)
{
	char path[] = "/tmp/wb-test-bulk-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	return fd;
}

/* 1 when FD's filesystem takes O_DIRECT (then bulk must use it). */
static int direct_ok(int fd)
{
	char path[64];
	int d;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	d = open(path, O_WRONLY | O_DIRECT);
	if (d >= 0)
		close(d);
	return d >= 0;
}

static unsigned char *pattern(size_t n, uint32_t seed)
{
	unsigned char *p = malloc(n ? n : 1);
	uint32_t x = seed;

	assert_non_null(p);
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (unsigned char)x;
	}
	return p;
}

static void check_file(int fd, off_t start, const unsigned char *data, size_t n)
{
	unsigned char *back = malloc(n ? n : 1);
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal((long long)st.st_size, (long long)(start + (off_t)n));
	assert_int_equal((long long)lseek(fd, 0, SEEK_CUR), (long long)st.st_size);
	assert_true(pread(fd, back, n, start) == (ssize_t)n);
	assert_memory_equal(back, data, n);
	free(back);
}

/* DATA (N bytes) written in pieces of the sizes in STEPS (cycled), from
 * memory SHIFT bytes past an aligned address, after START bytes written
 * plainly. */
static void write_pieces(size_t n, const size_t *steps, size_t nsteps,
			 size_t shift, off_t start)
{
	unsigned char *data = pattern(n, 2463534242u);
	unsigned char *mem = bulk_alloc(n + shift + 1);
	unsigned char *pre = pattern((size_t)start, 88172645u);
	struct bulk b;
	size_t off = 0, k = 0;
	int fd = tmp_fd();

	memcpy(mem + shift, data, n);
	if (start)
		assert_true(write(fd, pre, (size_t)start) == (ssize_t)start);
	bulk_begin(&b, fd);
	if (direct_ok(fd))
		assert_true(b.dfd >= 0);
	while (off < n) {
		size_t len = steps[k++ % nsteps];

		if (len > n - off)
			len = n - off;
		assert_int_equal(bulk_write(&b, mem + shift + off, len), 0);
		off += len;
	}
	assert_int_equal(bulk_end(&b), 0);
	check_file(fd, start, data, n);
	if (start) {
		unsigned char *back = malloc((size_t)start);

		assert_true(pread(fd, back, (size_t)start, 0) == (ssize_t)start);
		assert_memory_equal(back, pre, (size_t)start);
		free(back);
	}
	close(fd);
	free(mem);
	free(data);
	free(pre);
}

static void test_aligned_blocks(void **state)
{
	static const size_t steps[] = { 512 * 1024 };

	(void)state;
	write_pieces(8 * 512 * 1024, steps, 1, 0, 0);           /* all direct */
	write_pieces(8 * 512 * 1024 + 1234, steps, 1, 0, 0);    /* and a tail */
}

static void test_odd_pieces(void **state)
{
	static const size_t steps[] = { 1, 4095, 4096, 4097, BULK_BLOCK + 3, 17, 65536 };

	(void)state;
	write_pieces(5 * BULK_BLOCK + 777, steps, 7, 0, 0);
	write_pieces(5 * BULK_BLOCK + 777, steps, 7, 3, 0);      /* unaligned memory */
	write_pieces(3 * BULK_BLOCK, steps, 7, 0, 4096 * 3);     /* aligned start */
	write_pieces(3 * BULK_BLOCK + 5, steps, 7, 0, 1001);     /* unaligned start */
}

static void test_empty_and_tiny(void **state)
{
	static const size_t one[] = { 1 };

	(void)state;
	write_pieces(0, one, 1, 0, 0);
	write_pieces(1, one, 1, 0, 0);
	write_pieces(4095, one, 1, 0, 0);
}

/* A flush in the middle: later writes go on after the flushed bytes. */
static void test_flush_then_more(void **state)
{
	size_t n = 2 * BULK_BLOCK + 100;
	unsigned char *data = pattern(n, 1u);
	struct bulk b;
	int fd = tmp_fd();

	(void)state;
	bulk_begin(&b, fd);
	assert_int_equal(bulk_write(&b, data, 5000), 0);
	assert_int_equal(bulk_flush(&b), 0);
	assert_int_equal((long long)lseek(fd, 0, SEEK_CUR), 5000);
	assert_int_equal(bulk_write(&b, data + 5000, n - 5000), 0);
	assert_int_equal(bulk_end(&b), 0);
	check_file(fd, 0, data, n);
	close(fd);
	free(data);
}

/* A pipe has no offset and takes no O_DIRECT: plain writes, in order. */
static void test_pipe(void **state)
{
	size_t n = 3 * 65536 + 11;   /* the pipe is made large enough */
	unsigned char *data = pattern(n, 7u), *back = malloc(n);
	struct bulk b;
	size_t got = 0;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(fcntl(p[1], F_SETPIPE_SZ, 1 << 20) >= (int)n, 1);
	bulk_begin(&b, p[1]);
	assert_int_equal(b.dfd, -1);
	assert_int_equal(bulk_write(&b, data, 1000), 0);
	assert_int_equal(bulk_write(&b, data + 1000, n - 1000), 0);
	assert_int_equal(bulk_end(&b), 0);
	close(p[1]);
	while (got < n) {
		ssize_t k = read(p[0], back + got, n - got);

		assert_true(k > 0);
		got += (size_t)k;
	}
	assert_memory_equal(back, data, n);
	close(p[0]);
	free(back);
	free(data);
}

/* A write error is reported with errno, at the latest by bulk_end. */
static void test_write_error(void **state)
{
	unsigned char *data = pattern(4096, 3u);
	struct bulk b;
	int fd = open("/dev/null", O_RDONLY), r;

	(void)state;
	assert_true(fd >= 0);
	bulk_begin(&b, fd);
	r = bulk_write(&b, data, 4096);
	if (r == 0)
		r = bulk_end(&b);
	else
		bulk_end(&b);
	assert_int_equal(r, -1);
	assert_int_equal(errno, EBADF);
	close(fd);
	free(data);
}

struct seen {
	unsigned char *p;
	size_t n;
};

static void collect(void *ctx, const void *p, size_t n)
{
	struct seen *s = ctx;

	memcpy(s->p + s->n, p, n);
	s->n += n;
}

/* A copy of a file written directly (not in the page cache), from an
 * unaligned offset too: every byte to EACH in order and to the output. */
static void test_copy(void **state)
{
	size_t n = 3 * BULK_BLOCK + 4321;
	unsigned char *data = pattern(n, 99u);
	struct seen s = { malloc(n), 0 };
	struct bulk b;
	int in = tmp_fd(), out = tmp_fd(), writing = 1;

	(void)state;
	bulk_begin(&b, in);
	assert_int_equal(bulk_write(&b, data, n), 0);
	assert_int_equal(bulk_end(&b), 0);
	assert_int_equal(lseek(in, 0, SEEK_SET), 0);
	assert_int_equal(bulk_copy(in, out, collect, &s, &writing), 0);
	assert_int_equal(writing, 0);
	assert_true(s.n == n);
	assert_memory_equal(s.p, data, n);
	check_file(out, 0, data, n);
	assert_int_equal((long long)lseek(in, 0, SEEK_CUR), (long long)n);

	/* from the middle, at an unaligned offset */
	s.n = 0;
	assert_int_equal(ftruncate(out, 0), 0);
	assert_int_equal(lseek(out, 0, SEEK_SET), 0);
	assert_int_equal(lseek(in, 12345, SEEK_SET), 12345);
	assert_int_equal(bulk_copy(in, out, collect, &s, &writing), 0);
	assert_true(s.n == n - 12345);
	assert_memory_equal(s.p, data + 12345, n - 12345);
	check_file(out, 0, data + 12345, n - 12345);
	close(in);
	close(out);
	free(s.p);
	free(data);
}

/* From a pipe: plain reads; a failed write says so. */
static void test_copy_pipe_and_write_error(void **state)
{
	size_t n = 200000;
	unsigned char *data = pattern(n, 5u);
	int p[2], out = tmp_fd(), bad = open("/dev/null", O_RDONLY), writing = 0;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(fcntl(p[1], F_SETPIPE_SZ, 1 << 20) >= (int)n, 1);
	assert_true(write(p[1], data, n) == (ssize_t)n);
	close(p[1]);
	assert_int_equal(bulk_copy(p[0], out, NULL, NULL, &writing), 0);
	check_file(out, 0, data, n);
	close(p[0]);

	assert_int_equal(lseek(out, 0, SEEK_SET), 0);
	assert_int_equal(bulk_copy(out, bad, NULL, NULL, &writing), -1);
	assert_int_equal(writing, 1);
	assert_int_equal(errno, EBADF);
	close(out);
	close(bad);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aligned_blocks),
		cmocka_unit_test(test_odd_pieces),
		cmocka_unit_test(test_empty_and_tiny),
		cmocka_unit_test(test_flush_then_more),
		cmocka_unit_test(test_pipe),
		cmocka_unit_test(test_write_error),
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_copy_pipe_and_write_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
