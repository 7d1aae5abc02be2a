/*
 * The content-addressed download cache (DESIGN §5).
 *
 * Layout under the cache root:
 *   sha256/ab/abcdef...   verified entries, named by their SHA-256
 *   tmp/                  downloads in progress (unique temp files)
 *   quarantine/           entries whose bytes no longer match their name
 *   refs/<key>            one small JSON file per (artifact, URLs, verify
 *                         spec): which entry verified for it and how, so a
 *                         warm fetch knows the digest without the network
 *   lock                  flock: held exclusively around insert, ref write,
 *                         quarantine and gc steps (short critical sections)
 *   gc.lock               flock: shared by every process using the cache
 *                         for its whole run, exclusive for `cache gc`, so gc
 *                         never removes another process's temp file
 *   locks/dl-<key>        flock: one download lock per artifact's bytes,
 *                         held while one process downloads them, so a second
 *                         process waits and then finds them cached
 *                         (cache_dl_trylock). The holder's pid only; removed
 *                         by the holder when it lets go (by `cache gc` when
 *                         it died); never entries, never listed
 *
 * An entry becomes visible only by linking the very inode that was
 * written and hashed (never a name that may have been swapped since); a
 * process that finds the entry already present discards its own temp file.
 * Nothing in sha256/ is ever written in place.
 *
 * The cache is untrusted storage (docs/hardening.md, "cache writer"):
 * everything below the root is opened relative to a directory descriptor,
 * component by component, without following symlinks and without blocking
 * on FIFOs; what winbuild writes has private (O_EXCL) names; something that
 * is not a regular file where a file belongs is quarantined or removed.
 * Whoever can write the directory can make winbuild download again,
 * nothing else.
 */
#ifndef WB_CACHE_H
#define WB_CACHE_H

#include <stddef.h>

#include "lib/err.h"

struct json_t;

enum { CACHE_SHA256, CACHE_TMP, CACHE_QUARANTINE, CACHE_REFS, CACHE_LOCKS,
       CACHE_NDIRS };

struct cache {
	char *root;       /* owned; for messages (files are opened by dir_fd) */
	int lock_fd;      /* <root>/lock */
	int gc_fd;        /* <root>/gc.lock, held shared (or exclusive for gc) */
	int root_fd;      /* <root> */
	int dir_fd[CACHE_NDIRS];  /* its subdirectories, opened without
				   * following a symlink */
};

#define CACHE_INIT { NULL, -1, -1, -1, { -1, -1, -1, -1, -1 } }

/*
 * The cache directory: OPT (--cache) if set, else $WINBUILD_CACHE, else
 * $XDG_CACHE_HOME/winbuild, else $HOME/.cache/winbuild. Returns a new
 * string, or NULL with WB_EUSAGE when none can be determined.
 */
char *cache_default_dir(const char *opt, struct wb_err *e);

/*
 * Open (creating as needed) the cache at DIR and take the shared gc lock
 * (exclusive when FOR_GC). Errors are WB_EIO.
 */
int cache_open(struct cache *c, const char *dir, int for_gc, struct wb_err *e);
void cache_close(struct cache *c);

/* 1 if S is a cache key: exactly 64 lowercase hex digits. */
int cache_is_key(const char *s);

/* Path of the entry for SHA256_HEX (64 lowercase hex digits); new string. */
char *cache_entry_path(const struct cache *c, const char *sha256_hex);

/*
 * Open the entry SHA256_HEX for reading without reading it: 1 (*SIZE, *FD
 * set; the caller closes it) or 0 when absent. For a caller that hashes
 * every byte it reads from FD and quarantines the entry on a mismatch
 * (stage). Anything at its name that is not a regular file is quarantined
 * (*QUARANTINED, as cache_lookup) and counts as absent. -1 with WB_EIO on an
 * invalid key or an I/O error.
 */
int cache_entry_open(struct cache *c, const char *sha256_hex,
		     unsigned long long *size, int *fd, char **quarantined,
		     struct wb_err *e);

/*
 * Look up the entry SHA256_HEX and re-hash it. Returns 1 when present and
 * intact (*SIZE set; SHA512, when not NULL, set to its SHA-512 in hex,
 * computed in the same pass), 0 when absent. A present entry whose bytes
 * do not hash to its name is moved to quarantine/ and 0 is returned with
 * *QUARANTINED set to a new string naming where it went (caller frees and
 * reports). -1 with WB_EIO on I/O errors.
 */
int cache_lookup(struct cache *c, const char *sha256_hex,
		 unsigned long long *size, char sha512[129], char **quarantined,
		 struct wb_err *e);

/* As cache_lookup, computing the enum digest_alg bits ALGS (SHA-256
 * always) of the entry in the same pass into *DR (size included). With FD
 * not NULL, a hit leaves *FD open on the file that was hashed (the
 * caller's; -1 otherwise). */
struct digest_result;
int cache_lookup_digests(struct cache *c, const char *sha256_hex, unsigned algs,
			 struct digest_result *dr, char **quarantined, int *fd,
			 struct wb_err *e);

/*
 * Move the entry SHA256_HEX to quarantine/ under the lock, because a reader
 * found that its bytes do not hash to its name (stage re-hashes while it
 * reads). *WHERE is set to a new string naming where it went, or NULL if
 * the entry was already gone. Errors are WB_EIO.
 */
int cache_quarantine(struct cache *c, const char *sha256_hex, char **where,
		     struct wb_err *e);

/* Create a new private temp file under tmp/ (O_EXCL, mode 0600). *PATH
 * (new string, for messages) and *FD (open for reading and writing) are
 * set. Errors are WB_EIO. */
int cache_tmp_create(struct cache *c, char **path, int *fd, struct wb_err *e);

/*
 * Make the verified temp file open as FD (created as TMP_PATH) the entry
 * SHA256_HEX (mode 0444; no fsync, see cache.c): under the lock, link the
 * inode FD names into place unless the entry already exists. The temp name
 * is removed afterwards when it still names FD's file. FD stays open (the
 * caller's): the verified bytes, for a caller that uses them. Errors are
 * WB_EIO.
 */
int cache_insert(struct cache *c, const char *tmp_path, int fd,
		 const char *sha256_hex, struct wb_err *e);

/*
 * Refs: one small JSON file per ref key (cache_ref_key of fetch_ref_spec),
 * read and written only here:
 *   { "artifact": NAME, "sha256": HEX, "sha512": HEX, "blake2b512": HEX,
 *     "size": N,
 *     "url": URL, "methods": BITS, "evidence": [ ... ] }
 * "evidence" is what verified the bytes (trust/verify.h,
 * verify_evidence_to_json), kept whole so a hit can check it again.
 */
struct cache_ref {
	char *artifact;
	char sha256[65];           /* a cache key (cache_is_key) */
	char sha512[129];          /* "" when not recorded */
	char blake2b512[129];      /* "" when not recorded */
	unsigned long long size;
	char *url;                 /* or NULL */
	unsigned methods;          /* enum verify_method bits that held */
	struct json_t *evidence;   /* owned (jansson), or NULL */
};

void cache_ref_key(const char *spec, char out[65]);
int cache_ref_store(struct cache *c, const char *key, const struct cache_ref *ref,
		    struct wb_err *e);
/* 1 and *REF filled (release with cache_ref_release); 0 when there is no
 * ref, or it is not a well-formed one (a ref is only a hint); -1 with
 * WB_EIO when it cannot be read. */
int cache_ref_load(struct cache *c, const char *key, struct cache_ref *ref,
		   struct wb_err *e);
void cache_ref_release(struct cache_ref *ref);

/* One entry as `cache ls` shows it. */
struct cache_entry_info {
	char sha256[65];
	unsigned long long size;
	char **artifacts;     /* names of artifacts whose refs point here */
	size_t nartifacts;
};

struct cache_listing {
	struct cache_entry_info *v;   /* sorted by sha256 */
	size_t nr, alloc;
	size_t ntmp, nquarantine;     /* files in tmp/ and quarantine/ */
};

int cache_list(struct cache *c, struct cache_listing *out, struct wb_err *e);
void cache_listing_release(struct cache_listing *l);

/*
 * Download locks. KEY (64 hex digits) names what the bytes are (fetch/dlock.c:
 * the pinned SHA-256, else the ref spec). cache_dl_trylock tries to take
 * the lock KEY without blocking into L (CACHE_DL_LOCK_INIT at first; its
 * file stays open between tries). Returns 1 when held (this process's pid
 * is written into the file), 0 when another open file description holds
 * it (*HOLDER set to the pid its holder wrote, 0 when unknown), -1 with
 * WB_EIO. An flock: the kernel releases it when its holder dies, so there
 * is nothing stale to clean up; and one process's two jobs for the same
 * bytes also wait on each other (two opens, two descriptions).
 */
struct cache_dl_lock {
	int fd;         /* the lock file, or -1 */
	int held;
	char key[65];
};

#define CACHE_DL_LOCK_INIT { -1, 0, "" }

int cache_dl_trylock(struct cache *c, struct cache_dl_lock *l, const char *key,
		     long *holder, struct wb_err *e);
/* Let go of L (held or only tried): a holder removes the lock file first,
 * so locks/ holds files only while their locks are held (or their holder
 * died: `cache gc` removes those). No-op on a lock never tried. */
void cache_dl_unlock(struct cache *c, struct cache_dl_lock *l);

struct cache_gc_stats {
	size_t removed_entries, removed_tmp, removed_quarantine, removed_refs;
	unsigned long long freed_bytes;
};

/* Remove temp files, quarantined files, refs that point at missing
 * entries, and entries no ref points to. Needs the cache opened FOR_GC.
 * Download lock files are removed too, uncounted: with gc.lock held
 * exclusively no other process has the cache open, so none is held. */
int cache_gc(struct cache *c, struct cache_gc_stats *st, struct wb_err *e);

#endif
