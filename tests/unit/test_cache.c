/* fetch/cache: insert, lookup, duplicates, quarantine, refs, ls, gc,
 * download locks. */
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

#include "fetch/cache.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "trust/digest.h"

struct fx {
	char dir[64];
	struct cache c;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	struct wb_err e = WB_ERR_INIT;

	snprintf(f->dir, sizeof(f->dir), "/tmp/wb-test-cache-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	assert_int_equal(cache_open(&f->c, f->dir, 0, &e), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	struct wb_err e = WB_ERR_INIT;

	cache_close(&f->c);
	{
		char *up = fs_dirname(f->dir);
		int r = fs_remove_tree(up, fs_basename(f->dir), &e);

		free(up);
		(void)r;
	}
	free(f);
	return 0;
}

static void hex_of(const char *data, char out[65])
{
	struct digest_ctx d;
	struct digest_result r;
	struct wb_err e = WB_ERR_INIT;

	memset(&d, 0, sizeof(d));
	assert_int_equal(digest_init(&d, DIGEST_SHA256, &e), 0);
	digest_update(&d, data, strlen(data));
	digest_final(&d, &r);
	digest_hex(r.sha256, 32, out);
}

/* Write DATA to a new temp file and insert it; return the entry's hex. */
static void put(struct fx *f, const char *data, char hex[65])
{
	struct wb_err e = WB_ERR_INIT;
	char *tmp;
	int fd;

	hex_of(data, hex);
	assert_int_equal(cache_tmp_create(&f->c, &tmp, &fd, &e), 0);
	assert_int_equal(write(fd, data, strlen(data)), (int)strlen(data));
	assert_int_equal(cache_insert(&f->c, tmp, fd, hex, &e), 0);
	close(fd);   /* cache_insert leaves it open (the verified bytes) */
	assert_false(fs_exists(tmp));
	free(tmp);
}

static void test_default_dir(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	char *d;

	(void)state;
	d = cache_default_dir("/x/opt", &e);
	assert_string_equal(d, "/x/opt");
	free(d);
	setenv("WINBUILD_CACHE", "/x/env", 1);
	d = cache_default_dir(NULL, &e);
	assert_string_equal(d, "/x/env");
	free(d);
	unsetenv("WINBUILD_CACHE");
	setenv("XDG_CACHE_HOME", "/x/xdg", 1);
	d = cache_default_dir(NULL, &e);
	assert_string_equal(d, "/x/xdg/winbuild");
	free(d);
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", "/x/home", 1);
	d = cache_default_dir(NULL, &e);
	assert_string_equal(d, "/x/home/.cache/winbuild");
	free(d);
}

static void test_insert_lookup(void **state)
{
	struct fx *f = *state;
	struct wb_err e = WB_ERR_INIT;
	unsigned long long size = 0;
	char hex[65], sha512[129], *q = NULL, *path;

	put(f, "hello cache\n", hex);
	path = cache_entry_path(&f->c, hex);
	assert_non_null(strstr(path, "/sha256/"));
	assert_true(fs_exists(path));
	free(path);
	assert_int_equal(cache_lookup(&f->c, hex, &size, NULL, &q, &e), 1);
	assert_int_equal(size, 12);
	assert_null(q);
	/* the SHA-512 comes from the same pass when asked for */
	assert_int_equal(cache_lookup(&f->c, hex, &size, sha512, &q, &e), 1);
	assert_string_equal(sha512, "8cc06bef3977d4266db736688ec8e97e51d45b39c83c6ec4e3a497b3"
			    "dcdf72a05d3971ba2446f33c8daf24b06b0be395d6171d27b8e0d1886e"
			    "e6fa47b9b51907");
}

static void test_missing(void **state)
{
	struct fx *f = *state;
	struct wb_err e = WB_ERR_INIT;
	unsigned long long size;
	char hex[65], *q = NULL;

	hex_of("never inserted", hex);
	assert_int_equal(cache_lookup(&f->c, hex, &size, NULL, &q, &e), 0);
	assert_null(q);
	assert_int_equal(cache_lookup(&f->c, "../../etc/passwd", &size, NULL, &q, &e), -1);
}

static void test_duplicate_insert_discards_temp(void **state)
{
	struct fx *f = *state;
	struct wb_err e = WB_ERR_INIT;
	struct cache_listing l;
	char hex[65], hex2[65];

	put(f, "same bytes", hex);
	put(f, "same bytes", hex2);
	assert_string_equal(hex, hex2);
	assert_int_equal(cache_list(&f->c, &l, &e), 0);
	assert_int_equal(l.nr, 1);
	assert_int_equal(l.ntmp, 0);
	cache_listing_release(&l);
}

static void test_corrupt_is_quarantined(void **state)
{
	struct fx *f = *state;
	struct wb_err e = WB_ERR_INIT;
	unsigned long long size;
	char hex[65], *q = NULL, *path;

	put(f, "original bytes", hex);
	path = cache_entry_path(&f->c, hex);
	chmod(path, 0644);
	assert_int_equal(fs_write_atomic(path, "tampered bytes", 14, 0644, &e), 0);
	assert_int_equal(cache_lookup(&f->c, hex, &size, NULL, &q, &e), 0);
	assert_non_null(q);
	assert_non_null(strstr(q, "/quarantine/"));
	assert_true(fs_exists(q));
	assert_false(fs_exists(path));
	free(q);
	free(path);
}

static void test_insert_rejects_bad_key(void **state)
{
	struct fx *f = *state;
	struct wb_err e = WB_ERR_INIT;
	char *tmp;
	int fd;

	assert_int_equal(cache_tmp_create(&f->c, &tmp, &fd, &e), 0);
	assert_int_equal(cache_insert(&f->c, tmp, fd, "ABC", &e), -1);
	close(fd);
	assert_int_equal(e.code, WB_EIO);
	assert_false(fs_exists(tmp));
	free(tmp);
}

static void test_refs_ls_gc(void **state)
{
	struct fx *f = *state;
	struct wb_err e = WB_ERR_INIT;
	struct cache_listing l;
	struct cache_gc_stats st;
	char a[65], b[65], key[65], key2[65], *json, *text = NULL, *tmp;
	struct cache_ref ref, got;
	char name_a[] = "a", name_gone[] = "gone";
	int fd;

	put(f, "artifact a", a);
	put(f, "artifact b", b);
	cache_ref_key("spec of a", key);
	cache_ref_key("spec of a2", key2);
	assert_string_not_equal(key, key2);
	memset(&ref, 0, sizeof(ref));
	ref.artifact = name_a;
	memcpy(ref.sha256, a, 65);
	ref.size = 10;
	assert_int_equal(cache_ref_store(&f->c, key, &ref, &e), 0);
	assert_int_equal(cache_ref_load(&f->c, key, &got, &e), 1);
	assert_string_equal(got.artifact, "a");
	assert_string_equal(got.sha256, a);
	assert_int_equal(got.size, 10);
	assert_string_equal(got.sha512, "");
	assert_string_equal(got.blake2b512, "");
	cache_ref_release(&got);
	/* a BLAKE2b-512 a minisign check computed round-trips, and so does
	 * the SHA-512 a pin needs */
	memset(ref.blake2b512, 'b', 128);
	memset(ref.sha512, '5', 128);
	assert_int_equal(cache_ref_store(&f->c, key, &ref, &e), 0);
	assert_int_equal(cache_ref_load(&f->c, key, &got, &e), 1);
	assert_int_equal(strspn(got.blake2b512, "b"), 128);
	assert_int_equal(strspn(got.sha512, "5"), 128);
	cache_ref_release(&got);
	ref.blake2b512[0] = ref.sha512[0] = '\0';
	assert_int_equal(cache_ref_store(&f->c, key, &ref, &e), 0);
	assert_int_equal(cache_ref_load(&f->c, key2, &got, &e), 0);
	/* a ref that is not a well-formed one is no ref */
	json = xasprintf("%s/refs/%s", f->c.root, key2);
	text = xasprintf("{\"artifact\": \"x\", \"sha256\": \"not a digest\"}");
	assert_int_equal(fs_write_atomic(json, text, strlen(text), 0644, &e), 0);
	assert_int_equal(cache_ref_load(&f->c, key2, &got, &e), 0);
	free(text);
	free(json);
	ref.artifact = name_gone;
	snprintf(ref.sha256, sizeof(ref.sha256), "%064d", 0);
	assert_int_equal(cache_ref_store(&f->c, key2, &ref, &e), 0);
	assert_int_equal(cache_tmp_create(&f->c, &tmp, &fd, &e), 0);
	close(fd);

	assert_int_equal(cache_list(&f->c, &l, &e), 0);
	assert_int_equal(l.nr, 2);
	assert_int_equal(l.ntmp, 1);
	for (size_t i = 0; i < l.nr; i++) {
		if (!strcmp(l.v[i].sha256, a)) {
			assert_int_equal(l.v[i].nartifacts, 1);
			assert_string_equal(l.v[i].artifacts[0], "a");
		} else {
			assert_int_equal(l.v[i].nartifacts, 0);
		}
	}
	cache_listing_release(&l);

	/* gc needs the exclusive lock: reopen for gc */
	cache_close(&f->c);
	assert_int_equal(cache_open(&f->c, f->dir, 1, &e), 0);
	assert_int_equal(cache_gc(&f->c, &st, &e), 0);
	assert_int_equal(st.removed_entries, 1);
	assert_int_equal(st.removed_tmp, 1);
	assert_int_equal(st.removed_refs, 1);
	assert_false(fs_exists(tmp));
	free(tmp);
	assert_int_equal(cache_list(&f->c, &l, &e), 0);
	assert_int_equal(l.nr, 1);
	assert_string_equal(l.v[0].sha256, a);
	cache_listing_release(&l);
}

/* Download locks: one holder per key at a time (two open file
 * descriptions conflict, also in one process), the holder's pid for the
 * waiter; the holder removes the file when it lets go and a waiter that
 * locked the removed file takes the path's anew; never an entry; a file
 * left behind (a holder that died) goes with gc. */
static void test_download_locks(void **state)
{
	struct fx *f = *state;
	struct wb_err e = WB_ERR_INIT;
	struct cache_listing l;
	struct cache_gc_stats st;
	struct cache_dl_lock a = CACHE_DL_LOCK_INIT, b = CACHE_DL_LOCK_INIT;
	struct cache_dl_lock c = CACHE_DL_LOCK_INIT;
	char key[65], other[65], *p;
	long holder = -1;

	cache_ref_key("bytes one", key);
	cache_ref_key("bytes two", other);
	p = xasprintf("%s/locks/dl-%s", f->dir, key);
	assert_int_equal(cache_dl_trylock(&f->c, &a, key, &holder, &e), 1);
	assert_true(a.held);
	assert_true(fs_exists(p));
	assert_int_equal(cache_dl_trylock(&f->c, &b, key, &holder, &e), 0);
	assert_int_equal(holder, (long)getpid());
	assert_false(b.held);
	assert_true(b.fd >= 0);   /* kept open for the next try */
	/* another key is another lock */
	assert_int_equal(cache_dl_trylock(&f->c, &c, other, &holder, &e), 1);
	cache_dl_unlock(&f->c, &c);
	assert_int_equal(c.fd, -1);
	/* the holder lets go and removes the file; the waiter's next try
	 * locks the removed file, sees it gone, and takes a new one */
	cache_dl_unlock(&f->c, &a);
	assert_false(fs_exists(p));
	assert_int_equal(cache_dl_trylock(&f->c, &b, key, &holder, &e), 1);
	assert_true(fs_exists(p));
	/* and a third party waits on that one, not on the removed file */
	assert_int_equal(cache_dl_trylock(&f->c, &a, key, &holder, &e), 0);
	cache_dl_unlock(&f->c, &a);   /* a waiter removes nothing */
	assert_true(fs_exists(p));
	/* a key must be one: no path in it */
	assert_int_equal(cache_dl_trylock(&f->c, &c, "../../etc/passwd", &holder, &e), -1);
	assert_int_equal(e.code, WB_EIO);
	assert_int_equal(c.fd, -1);

	assert_int_equal(cache_list(&f->c, &l, &e), 0);
	assert_int_equal(l.nr, 0);
	assert_int_equal(l.ntmp, 0);
	cache_listing_release(&l);
	/* left behind (as by a holder that died): gc removes it */
	cache_close(&f->c);
	assert_int_equal(cache_open(&f->c, f->dir, 1, &e), 0);
	assert_int_equal(cache_gc(&f->c, &st, &e), 0);
	assert_int_equal(st.removed_entries + st.removed_tmp + st.removed_refs, 0);
	assert_false(fs_exists(p));
	cache_dl_unlock(&f->c, &b);
	cache_dl_unlock(&f->c, &b);   /* no-op */
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_dir),
		cmocka_unit_test_setup_teardown(test_insert_lookup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_duplicate_insert_discards_temp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_is_quarantined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_insert_rejects_bad_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refs_ls_gc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_download_locks, setup, teardown),
	};

	return cmocka_run_group_tests_name("cache", tests, NULL, NULL);
}
