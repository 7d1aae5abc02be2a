/* fetch/sink: the threaded writer/hasher gives the bytes and digests of a
 * one-thread pass, refuses what does not fit (and wakes when it does), and
 * keeps a write error. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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

#include "fetch/sink.h"
#include "trust/digest.h"

#define ALL_ALGS (DIGEST_SHA512 | DIGEST_BLAKE2B512)

static char tmpl[] = "/tmp/wb-test-sink-XXXXXX";

static int tmp_fd(void)
{
	char path[sizeof(tmpl)];
	int fd;

	memcpy(path, tmpl, sizeof(tmpl));
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	return fd;
}

/* Deterministic bytes, not a multiple of any buffer size. */
static unsigned char *pattern(size_t n)
{
	unsigned char *p = malloc(n);
	uint32_t x = 2463534242u;

	assert_non_null(p);
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (unsigned char)x;
	}
	return p;
}

struct waker {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int woken;
};

static void wake(void *ctx)
{
	struct waker *w = ctx;

	pthread_mutex_lock(&w->mu);
	w->woken++;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/* Offer DATA in pieces of PIECE bytes, waiting for the wake after every
 * refusal, as the fetch engine does (pause, resume). */
static void offer_all(struct sink *s, struct waker *w, const unsigned char *data,
		     size_t n, size_t piece)
{
	for (size_t off = 0; off < n;) {
		size_t k = n - off < piece ? n - off : piece;
		int r;

		pthread_mutex_lock(&w->mu);
		w->woken = 0;
		pthread_mutex_unlock(&w->mu);
		r = sink_offer(s, data + off, k);
		assert_true(r >= 0);
		if (r == 0) {
			off += k;
			continue;
		}
		pthread_mutex_lock(&w->mu);
		while (!w->woken)
			pthread_cond_wait(&w->cv, &w->mu);
		pthread_mutex_unlock(&w->mu);
		assert_true(sink_has_room(s));
	}
}

static void check_same(int fd, const unsigned char *data, size_t n,
		       struct digest_ctx *dc)
{
	struct wb_err e = WB_ERR_INIT;
	struct digest_ctx one;
	struct digest_result a, b;
	unsigned char *back = malloc(n ? n : 1);
	struct stat st;

	digest_final(dc, &a);
	assert_int_equal(digest_init(&one, ALL_ALGS, &e), 0);
	digest_update(&one, data, n);
	digest_final(&one, &b);
	assert_true(a.size == n);
	assert_int_equal(a.algs, b.algs);
	assert_memory_equal(a.sha256, b.sha256, 32);
	assert_memory_equal(a.sha512, b.sha512, 64);
	assert_memory_equal(a.blake2b512, b.blake2b512, 64);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true((size_t)st.st_size == n);
	assert_true(pread(fd, back, n, 0) == (ssize_t)n);
	assert_memory_equal(back, data, n);
	free(back);
}

static void run_pieces(size_t n, size_t piece)
{
	struct wb_err e = WB_ERR_INIT;
	struct waker w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
	struct digest_ctx dc;
	struct sink s;
	unsigned char *data = pattern(n);
	int fd = tmp_fd();

	assert_int_equal(digest_init(&dc, ALL_ALGS, &e), 0);
	assert_int_equal(sink_start(&s, fd, &dc, wake, &w), 0);
	assert_int_equal(s.ncons, 4);   /* the writer and three hashers */
	offer_all(&s, &w, data, n, piece);
	assert_int_equal(sink_stop(&s), 0);
	check_same(fd, data, n, &dc);
	close(fd);
	free(data);
}

static void test_digests_and_bytes_match_one_pass(void **state)
{
	(void)state;
	run_pieces(0, 1000);
	run_pieces(1, 1000);
	run_pieces(SINK_BUFFER, SINK_BUFFER);
	run_pieces(3 * SINK_BUFFER + 17, 16384);
	run_pieces(40u << 20, SINK_BUFFER);
	run_pieces(9u << 20, 100000);
}

/* The reader end of a pipe the sink writes to: held back until GO. */
struct reader {
	int fd;
	int go;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct digest_ctx dc;
};

static void *read_pipe(void *arg)
{
	struct reader *r = arg;
	char buf[65536];
	ssize_t k;

	pthread_mutex_lock(&r->mu);
	while (!r->go)
		pthread_cond_wait(&r->cv, &r->mu);
	pthread_mutex_unlock(&r->mu);
	while ((k = read(r->fd, buf, sizeof(buf))) > 0)
		digest_update(&r->dc, buf, (size_t)k);
	return NULL;
}

static void release(struct reader *r)
{
	pthread_mutex_lock(&r->mu);
	r->go = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* A pipe whose reader (thread *TH) waits for release(); returns the end
 * to write to. */
static int start_reader(struct reader *rd, pthread_t *th)
{
	struct wb_err e = WB_ERR_INIT;
	int p[2];

	assert_int_equal(pipe(p), 0);
	memset(rd, 0, sizeof(*rd));
	rd->fd = p[0];
	pthread_mutex_init(&rd->mu, NULL);
	pthread_cond_init(&rd->cv, NULL);
	assert_int_equal(digest_init(&rd->dc, 0, &e), 0);
	assert_int_equal(pthread_create(th, NULL, read_pipe, rd), 0);
	return p[1];
}

/* Close the write end W and join the reader: it read the N bytes whose
 * SHA-256 the sink computed (GOT). */
static void finish_reader(struct reader *rd, pthread_t th, int w,
			  const struct digest_result *got, size_t n)
{
	struct digest_result want;

	close(w);
	pthread_join(th, NULL);
	close(rd->fd);
	digest_final(&rd->dc, &want);
	assert_true(got->size == n && want.size == n);
	assert_memory_equal(got->sha256, want.sha256, 32);
}

/* A ring that cannot take the bytes refuses all of them (nothing half
 * taken), and the wake comes once half of it is free. The writer is held
 * back by a pipe nobody reads yet. */
static void test_full_ring_refuses_then_wakes(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct waker w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
	struct reader rd;
	struct digest_ctx dc;
	struct digest_result got, want;
	struct sink s;
	size_t n = 3 * SINK_NBUF * (size_t)SINK_BUFFER;
	unsigned char *data = pattern(n);
	pthread_t th;
	int wfd, taken = 0;

	(void)state;
	wfd = start_reader(&rd, &th);
	assert_int_equal(digest_init(&dc, ALL_ALGS, &e), 0);
	assert_int_equal(sink_start(&s, wfd, &dc, wake, &w), 0);
	/* the writer blocks in its first buffer: SINK_NBUF - 1 hand-overs,
	 * then every offer is refused, whole */
	while (sink_offer(&s, data + (size_t)taken * SINK_BUFFER, SINK_BUFFER) == 0)
		taken++;
	assert_int_equal(taken, SINK_NBUF - 1);
	assert_int_equal(sink_offer(&s, data + (size_t)taken * SINK_BUFFER, SINK_BUFFER), 1);
	assert_false(sink_has_room(&s));
	pthread_mutex_lock(&w.mu);
	assert_int_equal(w.woken, 0);
	pthread_mutex_unlock(&w.mu);
	/* let the writer go: the wake comes, and the rest goes through */
	release(&rd);
	pthread_mutex_lock(&w.mu);
	while (!w.woken)
		pthread_cond_wait(&w.cv, &w.mu);
	pthread_mutex_unlock(&w.mu);
	assert_true(sink_has_room(&s));
	offer_all(&s, &w, data + (size_t)taken * SINK_BUFFER,
		  n - (size_t)taken * SINK_BUFFER, SINK_BUFFER);
	assert_int_equal(sink_stop(&s), 0);
	digest_final(&dc, &got);
	finish_reader(&rd, th, wfd, &got, n);
	digest_init(&dc, ALL_ALGS, &e);
	digest_update(&dc, data, n);
	digest_final(&dc, &want);
	assert_memory_equal(got.sha512, want.sha512, 64);
	assert_memory_equal(got.blake2b512, want.blake2b512, 64);
	free(data);
}

static void *release_later(void *arg)
{
	usleep(50000);
	release(arg);
	return NULL;
}

/* sink_add (for transfers that cannot pause) never refuses: with the
 * writer held back it waits, and every byte arrives. */
static void test_add_waits_instead_of_refusing(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct reader rd;
	struct digest_ctx dc;
	struct digest_result got;
	struct sink s;
	size_t n = 3 * SINK_NBUF * (size_t)SINK_BUFFER;
	unsigned char *data = pattern(n);
	pthread_t th, rel;
	int wfd;

	(void)state;
	wfd = start_reader(&rd, &th);
	assert_int_equal(pthread_create(&rel, NULL, release_later, &rd), 0);
	assert_int_equal(digest_init(&dc, ALL_ALGS, &e), 0);
	assert_int_equal(sink_start(&s, wfd, &dc, NULL, NULL), 0);
	for (size_t off = 0; off < n; off += SINK_BUFFER)
		assert_int_equal(sink_add(&s, data + off, SINK_BUFFER), 0);
	assert_int_equal(sink_stop(&s), 0);
	pthread_join(rel, NULL);
	digest_final(&dc, &got);
	finish_reader(&rd, th, wfd, &got, n);
	free(data);
}

/* More than a whole ring in one piece is taken (waiting), not refused
 * forever. */
static void test_piece_larger_than_ring(void **state)
{
	(void)state;
	run_pieces((SINK_NBUF + 3) * (size_t)SINK_BUFFER + 5,
		   (SINK_NBUF + 1) * (size_t)SINK_BUFFER);
}

/* A failed write is sticky: later offers fail, stop reports the errno. */
static void test_write_error_is_sticky(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct digest_ctx dc;
	struct sink s;
	unsigned char *data = pattern(SINK_BUFFER);
	int fd = open("/dev/null", O_RDONLY), r = 0;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(digest_init(&dc, ALL_ALGS, &e), 0);
	assert_int_equal(sink_start(&s, fd, &dc, NULL, NULL), 0);
	assert_int_equal(sink_offer(&s, data, SINK_BUFFER), 0);
	assert_int_equal(sink_drain(&s), EBADF);
	r = sink_offer(&s, data, 10);
	assert_int_equal(r, -1);
	assert_int_equal(sink_stop(&s), EBADF);
	digest_release(&dc);
	close(fd);
	free(data);
}

/* Only SHA-256: the writer and one hasher. */
static void test_sha256_only_one_consumer(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct digest_ctx dc;
	struct digest_result a, b;
	struct sink s;
	unsigned char *data = pattern(2u << 20);
	int fd = tmp_fd();

	(void)state;
	assert_int_equal(digest_init(&dc, 0, &e), 0);
	assert_int_equal(sink_start(&s, fd, &dc, NULL, NULL), 0);
	assert_int_equal(s.ncons, 2);   /* the writer and one hasher */
	assert_int_equal(sink_offer(&s, data, 2u << 20), 0);
	assert_int_equal(sink_stop(&s), 0);
	digest_final(&dc, &a);
	assert_int_equal(digest_init(&dc, 0, &e), 0);
	digest_update(&dc, data, 2u << 20);
	digest_final(&dc, &b);
	assert_int_equal(a.algs, DIGEST_SHA256);
	assert_memory_equal(a.sha256, b.sha256, 32);
	assert_true(a.size == (2u << 20));
	close(fd);
	free(data);
}

/* A tee gets every byte, in order; a tee that cannot be written ends the
 * tee only: the file and the digests are complete all the same. */
static void test_tee(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct digest_ctx dc;
	struct sink s;
	size_t n = 3 * SINK_BUFFER + 999;
	unsigned char *data = pattern(n);
	int fd = tmp_fd(), tee = tmp_fd(), bad = open("/dev/null", O_RDONLY);

	(void)state;
	assert_true(bad >= 0);
	assert_int_equal(digest_init(&dc, ALL_ALGS, &e), 0);
	assert_int_equal(sink_start(&s, fd, &dc, NULL, NULL), 0);
	sink_tee(&s, tee);
	for (size_t off = 0; off < n; off += 1000)
		assert_int_equal(sink_add(&s, data + off, n - off < 1000 ? n - off : 1000), 0);
	assert_int_equal(sink_drain(&s), 0);
	assert_int_equal(sink_tee_ok(&s), 1);
	assert_int_equal(sink_stop(&s), 0);
	check_same(fd, data, n, &dc);
	assert_int_equal(digest_init(&dc, ALL_ALGS, &e), 0);
	digest_update(&dc, data, n);
	check_same(tee, data, n, &dc);

	close(fd);
	fd = tmp_fd();
	assert_int_equal(digest_init(&dc, ALL_ALGS, &e), 0);
	assert_int_equal(sink_start(&s, fd, &dc, NULL, NULL), 0);
	sink_tee(&s, bad);
	assert_int_equal(sink_add(&s, data, n), 0);
	assert_int_equal(sink_drain(&s), 0);
	assert_int_equal(sink_tee_ok(&s), 0);
	assert_int_equal(sink_stop(&s), 0);
	check_same(fd, data, n, &dc);
	close(fd);
	close(tee);
	close(bad);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_digests_and_bytes_match_one_pass),
		cmocka_unit_test(test_full_ring_refuses_then_wakes),
		cmocka_unit_test(test_piece_larger_than_ring),
		cmocka_unit_test(test_add_waits_instead_of_refusing),
		cmocka_unit_test(test_write_error_is_sticky),
		cmocka_unit_test(test_sha256_only_one_consumer),
		cmocka_unit_test(test_tee),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
