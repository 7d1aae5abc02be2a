/*
 * The artifact sink: bytes of one download, written to its temp file and
 * hashed on a worker thread, so the curl thread only copies them into a
 * buffer and both cores work (one does the network, the other the
 * SHA-256/BLAKE2b and the write). A ring of SINK_NBUF buffers: the curl
 * thread fills one while the worker writes and hashes the others; it waits
 * only when the ring is full (the curl thread serves every transfer, so a
 * shallow ring would stall them all behind the slowest hash). Nothing here
 * prints.
 */
#ifndef WB_SINK_H
#define WB_SINK_H

#include <pthread.h>
#include <stddef.h>

#include "trust/digest.h"

#define SINK_BUFFER (512 * 1024)
#define SINK_NBUF 8

struct sink {
	int fd;
	struct digest_ctx *dc;    /* borrowed; updated on the worker only */
	char *buf[SINK_NBUF];
	size_t len[SINK_NBUF];
	size_t fill;              /* bytes in buf[head], being filled */
	unsigned head;            /* the buffer the curl thread fills */
	/* shared with the worker, under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	unsigned tail;            /* the next buffer the worker takes */
	unsigned count;           /* handed over, not yet written */
	int quit;
	int err;                  /* errno of a failed write, sticky */
	int started;
};

/* Start the worker for FD and DC. 0, or -1 with errno. */
int sink_start(struct sink *s, int fd, struct digest_ctx *dc);

/* Take N bytes (copied). 0, or -1 when an earlier write failed (errno in
 * s->err). */
int sink_add(struct sink *s, const void *data, size_t n);

/* Wait until every byte taken so far is written and hashed. Returns
 * s->err (0 when all is well). FD and DC may then be used by the caller
 * until the next sink_add. */
int sink_drain(struct sink *s);

/* Drain, stop the worker and free the buffers (no-op when not started).
 * Returns s->err. */
int sink_stop(struct sink *s);

#endif
