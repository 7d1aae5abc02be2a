/*
 * The artifact sink: the bytes of one download, written to its temp file
 * and hashed on worker threads, so the curl thread only copies them into a
 * buffer and both cores work.
 *
 * A ring of SINK_NBUF buffers with one writer thread and one consumer
 * thread per digest the download needs: the writer writes each buffer to
 * the file (and to the tee, when the caller gave one: a second copy of the
 * bytes, such as the staged file, written as they arrive), the others
 * feed SHA-256, SHA-512 and BLAKE2b-512 (digest_update_slot). Writes go
 * through lib/bulk.h (past the page cache where the filesystem allows). A
 * buffer is reused once every consumer is done with it, so one large
 * download keeps both cores busy and the slowest consumer sets the pace,
 * not the sum of all.
 *
 * The curl thread never waits on a full ring: sink_offer() takes all of
 * the bytes or none, and when it takes none the caller pauses the transfer
 * (CURL_WRITEFUNC_PAUSE) and serves the others; the WAKE callback (from a
 * consumer thread) tells it when half the ring is free again. Nothing here
 * prints.
 */
#ifndef WB_SINK_H
#define WB_SINK_H

#include <pthread.h>
#include <stddef.h>

#include "lib/bulk.h"
#include "trust/digest.h"

#define SINK_BUFFER (512 * 1024)
#define SINK_NBUF 8

struct sink {
	int fd;
	struct bulk bulk;         /* FD's writes (consumer 0; lib/bulk.h) */
	int tee_fd;               /* a second copy of the bytes, or -1 */
	struct bulk tee;
	int tee_err;              /* errno of a failed tee write: no more tee */
	struct digest_ctx *dc;    /* borrowed; slot i fed by consumer i only */
	char *buf[SINK_NBUF];
	size_t len[SINK_NBUF];
	size_t fill;              /* bytes in the head buffer, being filled */
	void (*wake)(void *ctx);  /* called on a consumer thread; may be NULL */
	void *wake_ctx;
	/* shared with the consumers, under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th[DIGEST_NSLOTS + 1];
	int slot[DIGEST_NSLOTS + 1];  /* consumer i > 0 feeds digest slot[i];
				       * consumer 0 writes */
	int ncons;
	unsigned long long produced;                     /* buffers handed over */
	unsigned long long consumed[DIGEST_NSLOTS + 1];  /* per consumer */
	int want_wake;            /* an offer was refused: wake when room */
	int quit;
	int err;                  /* errno of a failed write, sticky */
	int started;
};

/* Start the consumers for FD and DC (one per digest slot DC computes).
 * WAKE (with CTX) is called, on a consumer thread, when an offer was
 * refused and half the ring is free again. 0, or -1 with errno. */
int sink_start(struct sink *s, int fd, struct digest_ctx *dc,
	       void (*wake)(void *ctx), void *ctx);

/* Take the N bytes (copied) if they fit in the free part of the ring:
 * 0 taken, 1 not taken (no room: pause and offer them again after WAKE),
 * -1 when an earlier write failed (errno in s->err). N larger than the
 * whole ring is taken, waiting for room. */
int sink_offer(struct sink *s, const void *data, size_t n);

/* Take the N bytes (copied), waiting for room: for transfers that cannot
 * be paused (libcurl refuses CURL_WRITEFUNC_PAUSE for file:// URLs). 0, or
 * -1 as sink_offer. */
int sink_add(struct sink *s, const void *data, size_t n);

/* 1 when at least half the ring is free (a paused transfer may go on). */
int sink_has_room(struct sink *s);

/* Wait until every byte taken so far is written and hashed. Returns
 * s->err (0 when all is well). FD and DC may then be used by the caller
 * until the next sink_offer. */
int sink_drain(struct sink *s);

/* Also write every byte, from here on, to FD (at its offset): after
 * sink_start, before the first byte. A failed write to FD only ends the
 * tee (sink_tee_ok), never the download. FD stays the caller's. */
void sink_tee(struct sink *s, int fd);

/* 1 when a tee was given and holds every byte taken (after a drain). */
int sink_tee_ok(struct sink *s);

/* Drain, stop the consumers and free the buffers (no-op when not
 * started). Returns s->err. */
int sink_stop(struct sink *s);

#endif
