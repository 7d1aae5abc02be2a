/* The artifact sink: see sink.h.
 *
 * @where where bytes are hashed while downloading -- written on one thread,
 *   hashed on one thread per digest (contexts carried across resumes)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fetch/sink.h"
#include "lib/buf.h"
#include "lib/bulk.h"

struct consumer_arg {
	struct sink *s;
	int i;
};

/* Buffers handed over and not yet released by every consumer. Under mu. */
static unsigned long long in_use(const struct sink *s)
{
	unsigned long long low = s->produced;

	for (int i = 0; i < s->ncons; i++)
		if (s->consumed[i] < low)
			low = s->consumed[i];
	return s->produced - low;
}

/* Write one buffer to the file and, while it works, to the tee. Outside
 * mu, on consumer 0 only. Returns an errno of the file's write, or 0. */
static int write_out(struct sink *s, const char *p, size_t n)
{
	if (s->tee_fd >= 0 && !s->tee_err && bulk_write(&s->tee, p, n) < 0)
		s->tee_err = errno ? errno : EIO;
	if (bulk_write(&s->bulk, p, n) < 0)
		return errno ? errno : EIO;
	s->dc->size += n;   /* read by the caller after a drain */
	return 0;
}

/* Consumer I: the first writes each buffer (to the file and the tee), the
 * others feed one digest each, so the writes' waits on the disk overlap
 * the hashing. */
static void consume(struct sink *s, int i)
{
	pthread_mutex_lock(&s->mu);
	for (;;) {
		unsigned long long before;
		const char *p;
		size_t n;
		int err = 0, skip, wake = 0;

		while (s->consumed[i] == s->produced && !s->quit)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->consumed[i] == s->produced)
			break;
		p = s->buf[s->consumed[i] % SINK_NBUF];
		n = s->len[s->consumed[i] % SINK_NBUF];
		skip = s->err != 0;   /* after a failed write, only drain */
		pthread_mutex_unlock(&s->mu);
		if (!skip && i == 0)
			err = write_out(s, p, n);
		else if (!skip)
			digest_update_slot(s->dc, s->slot[i], p, n);
		pthread_mutex_lock(&s->mu);
		if (err && !s->err)
			s->err = err;
		before = in_use(s);
		s->consumed[i]++;
		if (in_use(s) != before) {
			pthread_cond_broadcast(&s->cv);
			if (s->want_wake && in_use(s) <= SINK_NBUF / 2) {
				s->want_wake = 0;
				wake = 1;
			}
		}
		if (wake && s->wake) {
			pthread_mutex_unlock(&s->mu);
			s->wake(s->wake_ctx);
			pthread_mutex_lock(&s->mu);
		}
	}
	pthread_mutex_unlock(&s->mu);
}

static void *consumer(void *arg)
{
	struct consumer_arg a = *(struct consumer_arg *)arg;

	free(arg);
	consume(a.s, a.i);
	return NULL;
}

static void join_all(struct sink *s, int n)
{
	pthread_mutex_lock(&s->mu);
	s->quit = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	for (int i = 0; i < n; i++)
		pthread_join(s->th[i], NULL);
}

static void free_all(struct sink *s)
{
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	for (int i = 0; i < SINK_NBUF; i++)
		free(s->buf[i]);
	bulk_end(&s->bulk);
	if (s->tee_fd >= 0)
		bulk_end(&s->tee);
	memset(s, 0, sizeof(*s));
}

int sink_start(struct sink *s, int fd, struct digest_ctx *dc,
	       void (*wake)(void *ctx), void *ctx)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->dc = dc;
	s->wake = wake;
	s->wake_ctx = ctx;
	s->tee_fd = -1;
	s->slot[s->ncons++] = -1;   /* consumer 0 writes */
	for (int i = 0; i < DIGEST_NSLOTS; i++)
		if (dc->md[i])
			s->slot[s->ncons++] = i;
	for (int i = 0; i < SINK_NBUF; i++)
		s->buf[i] = bulk_alloc(SINK_BUFFER);   /* aligned: written directly */
	bulk_begin(&s->bulk, fd);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	for (int i = 0; i < s->ncons; i++) {
		struct consumer_arg *a = xmalloc(sizeof(*a));
		int r;

		a->s = s;
		a->i = i;
		r = pthread_create(&s->th[i], NULL, consumer, a);
		if (r) {
			free(a);
			join_all(s, i);
			free_all(s);
			errno = r;
			return -1;
		}
	}
	s->started = 1;
	return 0;
}

/* Hand the head buffer to the consumers, waiting for room if need be (not
 * when sink_offer counted the room first). */
static void hand_over(struct sink *s)
{
	pthread_mutex_lock(&s->mu);
	while (in_use(s) >= SINK_NBUF - 1)
		pthread_cond_wait(&s->cv, &s->mu);
	s->len[s->produced % SINK_NBUF] = s->fill;
	s->produced++;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	s->fill = 0;
}

/* Take N bytes, or refuse them all when they do not fit and NOWAIT. */
static int take(struct sink *s, const void *data, size_t n, int nowait)
{
	const char *p = data;
	unsigned long long need = (s->fill + n) / SINK_BUFFER;

	pthread_mutex_lock(&s->mu);
	if (s->err) {
		pthread_mutex_unlock(&s->mu);
		return -1;
	}
	/* each full buffer is one hand-over; one buffer is always the head */
	if (nowait && need > SINK_NBUF - 1 - in_use(s) &&
	    n <= (SINK_NBUF - 1) * SINK_BUFFER) {
		s->want_wake = 1;
		pthread_mutex_unlock(&s->mu);
		return 1;
	}
	pthread_mutex_unlock(&s->mu);
	while (n) {
		size_t k = SINK_BUFFER - s->fill;

		if (k > n)
			k = n;
		memcpy(s->buf[s->produced % SINK_NBUF] + s->fill, p, k);
		s->fill += k;
		p += k;
		n -= k;
		if (s->fill == SINK_BUFFER)
			hand_over(s);
	}
	return 0;
}

int sink_offer(struct sink *s, const void *data, size_t n)
{
	return take(s, data, n, 1);
}

int sink_add(struct sink *s, const void *data, size_t n)
{
	return take(s, data, n, 0);
}

int sink_has_room(struct sink *s)
{
	int room;

	pthread_mutex_lock(&s->mu);
	room = in_use(s) <= SINK_NBUF / 2;
	pthread_mutex_unlock(&s->mu);
	return room;
}

int sink_drain(struct sink *s)
{
	int err;

	if (!s->started)
		return 0;
	if (s->fill)
		hand_over(s);
	pthread_mutex_lock(&s->mu);
	while (in_use(s))
		pthread_cond_wait(&s->cv, &s->mu);
	/* the consumers are idle: write what the first one left staged */
	if (!s->err && bulk_flush(&s->bulk) < 0)
		s->err = errno ? errno : EIO;
	if (s->tee_fd >= 0 && !s->tee_err && bulk_flush(&s->tee) < 0)
		s->tee_err = errno ? errno : EIO;
	err = s->err;
	pthread_mutex_unlock(&s->mu);
	return err;
}

/*
 * @where where a download's bytes are also written to their staged place as
 *   they arrive (the tee) -- written by the sink
 */
void sink_tee(struct sink *s, int fd)
{
	pthread_mutex_lock(&s->mu);
	if (s->started && s->tee_fd < 0 && !s->produced && !s->fill) {
		bulk_begin(&s->tee, fd);
		s->tee_fd = fd;
	}
	pthread_mutex_unlock(&s->mu);
}

int sink_tee_ok(struct sink *s)
{
	int ok;

	pthread_mutex_lock(&s->mu);
	ok = s->started && s->tee_fd >= 0 && !s->tee_err && !s->err;
	pthread_mutex_unlock(&s->mu);
	return ok;
}

int sink_stop(struct sink *s)
{
	int err;

	if (!s->started)
		return 0;
	err = sink_drain(s);
	join_all(s, s->ncons);
	free_all(s);
	return err;
}
