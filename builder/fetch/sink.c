/* The artifact sink: see sink.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fetch/sink.h"
#include "lib/buf.h"
#include "lib/fs.h"

static void *worker(void *arg)
{
	struct sink *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		const char *p;
		size_t n;
		int err = 0;

		while (!s->count && !s->quit)
			pthread_cond_wait(&s->cv, &s->mu);
		if (!s->count)
			break;
		p = s->buf[s->tail];
		n = s->len[s->tail];
		pthread_mutex_unlock(&s->mu);
		if (!s->err)   /* after a failed write, only drain */
			err = fs_write_all(s->fd, p, n) < 0 ? (errno ? errno : EIO) : 0;
		if (!err)
			digest_update(s->dc, p, n);
		pthread_mutex_lock(&s->mu);
		if (err && !s->err)
			s->err = err;
		s->tail = (s->tail + 1) % SINK_NBUF;
		s->count--;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int sink_start(struct sink *s, int fd, struct digest_ctx *dc)
{
	int r;

	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->dc = dc;
	for (int i = 0; i < SINK_NBUF; i++)
		s->buf[i] = xmalloc(SINK_BUFFER);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	r = pthread_create(&s->th, NULL, worker, s);
	if (r) {
		pthread_mutex_destroy(&s->mu);
		pthread_cond_destroy(&s->cv);
		for (int i = 0; i < SINK_NBUF; i++)
			free(s->buf[i]);
		memset(s, 0, sizeof(*s));
		errno = r;
		return -1;
	}
	s->started = 1;
	return 0;
}

/* Hand buf[head] to the worker; wait while no other buffer is free. */
static void hand_over(struct sink *s)
{
	pthread_mutex_lock(&s->mu);
	while (s->count >= SINK_NBUF - 1)
		pthread_cond_wait(&s->cv, &s->mu);
	s->len[s->head] = s->fill;
	s->count++;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	s->head = (s->head + 1) % SINK_NBUF;
	s->fill = 0;
}

static int sticky_err(struct sink *s)
{
	int err;

	pthread_mutex_lock(&s->mu);
	err = s->err;
	pthread_mutex_unlock(&s->mu);
	return err;
}

int sink_add(struct sink *s, const void *data, size_t n)
{
	const char *p = data;

	if (sticky_err(s))
		return -1;
	while (n) {
		size_t k = SINK_BUFFER - s->fill;

		if (k > n)
			k = n;
		memcpy(s->buf[s->head] + s->fill, p, k);
		s->fill += k;
		p += k;
		n -= k;
		if (s->fill == SINK_BUFFER)
			hand_over(s);
	}
	return 0;
}

int sink_drain(struct sink *s)
{
	if (!s->started)
		return 0;
	if (s->fill)
		hand_over(s);
	pthread_mutex_lock(&s->mu);
	while (s->count)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	return s->err;
}

int sink_stop(struct sink *s)
{
	int err;

	if (!s->started)
		return 0;
	err = sink_drain(s);
	pthread_mutex_lock(&s->mu);
	s->quit = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->th, NULL);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	for (int i = 0; i < SINK_NBUF; i++)
		free(s->buf[i]);
	memset(s, 0, sizeof(*s));
	return err;
}
