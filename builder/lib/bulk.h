/*
 * Bulk writes and copies: the large files winbuild writes once and does
 * not read back soon (cache entries, artifacts copied or unpacked into the
 * staged tree). Their aligned blocks go through a second, O_DIRECT
 * descriptor of the same file, so the bytes reach the disk without
 * filling the page cache; the unaligned rest (the tail of a file, or a
 * write at an unaligned offset) goes through the ordinary descriptor.
 * Where the filesystem refuses O_DIRECT (tmpfs before Linux 6.6, some
 * network and FUSE filesystems) or a direct write fails with EINVAL,
 * every write is an ordinary one: the bytes and the file are the same
 * either way, only the page cache differs.
 *
 * Why: a buffered write of N bytes takes N bytes of newly allocated page
 * cache, and on a VM whose free memory is handed back to the host (free
 * page reporting) each newly touched page faults on the host: 1.2-1.5
 * ns/byte of system time here, more than SHA-256 (bench/README.md). A
 * direct write costs about 0.1 ns/byte of CPU.
 *
 * Nothing here prints; errors are -1 with errno.
 */
#ifndef WB_BULK_H
#define WB_BULK_H

#include <stddef.h>
#include <sys/types.h>

#define BULK_ALIGN 4096               /* offset, length and memory */
#define BULK_BLOCK (1024 * 1024)      /* the staging buffer and copy size */

struct bulk {
	int fd;                /* borrowed: the file, open for writing */
	int dfd;               /* O_DIRECT descriptor of the same file, or -1 */
	off_t off;             /* where the next byte goes */
	unsigned char *stage;  /* BULK_BLOCK, aligned: bytes not yet written */
	size_t fill;
};

/* A buffer of N bytes aligned for direct I/O (aborts on out of memory);
 * release it with free(). */
void *bulk_alloc(size_t n);

/* Begin writing to FD at its current offset. Never fails: without a
 * direct descriptor, bulk_write is an ordinary write. */
void bulk_begin(struct bulk *b, int fd);

/* Write N bytes of P after the previous ones (some may wait in the
 * staging buffer until bulk_flush). 0, or -1 with errno. */
int bulk_write(struct bulk *b, const void *p, size_t n);

/* Write whatever waits, and leave FD's offset after the last byte. 0, or
 * -1 with errno. Further bulk_writes may follow. */
int bulk_flush(struct bulk *b);

/* bulk_flush, then release the direct descriptor and the buffer (FD stays
 * open). 0, or -1 with errno (of the flush). */
int bulk_end(struct bulk *b);

/*
 * Copy IN from its current offset to its end to OUT at OUT's current
 * offset: direct reads where the filesystem allows (the source may have
 * been written directly and not be in the page cache), bulk writes.
 * EACH, when not NULL, sees every block in order (to hash it). 0, or -1
 * with errno and *WRITING set when the write (not the read) failed.
 */
int bulk_copy(int in, int out, void (*each)(void *ctx, const void *p, size_t n),
	      void *ctx, int *writing);

#endif
