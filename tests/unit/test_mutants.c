/*
 * Tests that kill mutants of tests/mutate/mutants.txt which the rest of
 * the suite let survive (make mutate; docs/hardening.md). Each test names
 * the mutant it kills; each fails with that mutant in place.
 */
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

#include <archive.h>
#include <archive_entry.h>

#include "fetch/cache.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/winpath.h"
#include "stage/extract.h"
#include "trust/checksum.h"
#include "trust/digest.h"

/* A temp dir (removed by rm_dir) for the tests that need files. */
static char *tmp_dir(void)
{
	char *d = xstrdup("/tmp/wb-test-mutants-XXXXXX");

	assert_non_null(mkdtemp(d));
	return d;
}

static void rm_dir(char *d)
{
	struct wb_err e = WB_ERR_INIT;

	assert_int_equal(fs_remove_tree("/tmp", fs_basename(d), &e), 0);
	free(d);
}

/* ---- fetch/cache ---- */

/* cache-key-length: only 64 lowercase hex digits name an entry */
static void test_cache_key_is_exactly_64_hex(void **state)
{
	char k[66];

	(void)state;
	memset(k, 'a', 64);
	k[64] = '\0';
	assert_true(cache_is_key(k));
	k[63] = '\0';
	assert_false(cache_is_key(k));      /* 63 */
	assert_false(cache_is_key("abc"));
	assert_false(cache_is_key(""));
	memset(k, 'a', 65);
	k[65] = '\0';
	assert_false(cache_is_key(k));      /* 65 */
	memset(k, 'a', 64);
	k[64] = '\0';
	k[10] = 'A';
	assert_false(cache_is_key(k));      /* upper case is another name */
}

/* cache-entry-writable: an inserted entry is read-only (0444) */
static void test_cache_entry_is_read_only(void **state)
{
	static const char data[] = "cache entry bytes\n";
	struct wb_err e = WB_ERR_INIT;
	struct digest_ctx d;
	struct digest_result r;
	struct cache c;
	struct stat st;
	char *dir = tmp_dir(), hex[65], *tmp, *path;
	int fd;

	(void)state;
	assert_int_equal(cache_open(&c, dir, 0, &e), 0);
	memset(&d, 0, sizeof(d));
	assert_int_equal(digest_init(&d, DIGEST_SHA256, &e), 0);
	digest_update(&d, data, strlen(data));
	digest_final(&d, &r);
	digest_hex(r.sha256, 32, hex);
	assert_int_equal(cache_tmp_create(&c, &tmp, &fd, &e), 0);
	assert_int_equal(write(fd, data, strlen(data)), (int)strlen(data));
	assert_int_equal(cache_insert(&c, tmp, fd, hex, &e), 0);
	close(fd);
	path = cache_entry_path(&c, hex);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0444);
	free(path);
	free(tmp);
	cache_close(&c);
	rm_dir(dir);
}

/* ---- lib/winpath ---- */

/* winpath-ctrl-off-by-one: every byte below 0x20 is refused, 0x1f too */
static void test_winpath_every_control_byte(void **state)
{
	const char *why;
	char name[4] = "a?b";

	(void)state;
	for (int c = 1; c < 0x20; c++) {
		name[1] = (char)c;
		why = NULL;
		assert_int_equal(winpath_name_ok(name, &why), 0);
		assert_non_null(why);
	}
	name[1] = ' ';
	assert_int_equal(winpath_name_ok(name, &why), 1);
}

/* winpath-reserved-last-dot: the device name is what comes before the
 * FIRST dot ('nul.tar.gz' is NUL to Windows) */
static void test_winpath_reserved_with_two_extensions(void **state)
{
	const char *why;

	(void)state;
	assert_int_equal(winpath_name_ok("nul.tar.gz", &why), 0);
	assert_int_equal(winpath_name_ok("CON.x.exe", &why), 0);
	assert_int_equal(winpath_name_ok("com1.a.b.c", &why), 0);
	assert_int_equal(winpath_name_ok("nul.d.tar.gz", &why), 0);
	assert_int_equal(winpath_name_ok("null.tar.gz", &why), 1);
}

/* names-byte-length (was winpath-name-length): 255 characters is the most
 * a name may have */
static void test_winpath_name_length_limit(void **state)
{
	const char *why;
	char name[258];

	(void)state;
	memset(name, 'a', 255);
	name[255] = '\0';
	assert_int_equal(winpath_name_ok(name, &why), 1);
	memset(name, 'a', 256);
	name[256] = '\0';
	assert_int_equal(winpath_name_ok(name, &why), 0);
}

/* ---- trust/checksum ---- */

/* checksum-digest-length: a digest longer than the algorithm's is refused,
 * not cut to size (a SHA-512 line in a SHA-256 file names no SHA-256) */
static void test_checksum_overlong_digest(void **state)
{
	static const char *const texts[] = {
		/* 65 digits, on a line and bare */
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0  a.zip\n",
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0\n",
		/* a SHA-512 where a SHA-256 is expected */
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  a.zip\n",
	};
	unsigned char out[64];

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct wb_err e = WB_ERR_INIT;

		assert_int_equal(checksum_parse(texts[i], strlen(texts[i]), "a.zip",
						DIGEST_SHA256, out, &e), -1);
		assert_non_null(strstr(e.msg, "a SHA-256 digest has 64 hex digits, found"));
	}
}

/* ---- stage/extract ---- */

/* DIR/a.tar holding regular files of SIZES[i] bytes each ("f0", "f1", ...),
 * written with libarchive; extracted into a fresh DIR/dest with
 * limits.max_bytes MAX. Returns extract_archive's result. */
static int extract_sizes(const char *dir, const size_t *sizes, size_t n,
			 unsigned long long max, struct wb_err *e)
{
	struct extract_spec spec = { .limits = { .max_bytes = max, .max_ratio = 1000000 } };
	struct extract_result res = { 0 };
	struct archive *a = archive_write_new();
	struct archive_entry *ae = archive_entry_new();
	char *tar = fs_join(dir, "a.tar"), *dest = fs_join(dir, "dest"), name[16];
	static const char block[256] = { 'x' };
	struct wb_err rm = WB_ERR_INIT;
	int ret;

	assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	assert_int_equal(archive_write_open_filename(a, tar), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		assert_true(sizes[i] <= sizeof(block));
		snprintf(name, sizeof(name), "f%zu", i);
		archive_entry_clear(ae);
		archive_entry_set_pathname(ae, name);
		archive_entry_set_filetype(ae, AE_IFREG);
		archive_entry_set_perm(ae, 0644);
		archive_entry_set_size(ae, (la_int64_t)sizes[i]);
		assert_int_equal(archive_write_header(a, ae), ARCHIVE_OK);
		assert_int_equal(archive_write_data(a, block, sizes[i]), (la_ssize_t)sizes[i]);
	}
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	archive_entry_free(ae);
	fs_remove_tree(dir, "dest", &rm);
	assert_int_equal(mkdir(dest, 0755), 0);
	ret = extract_archive(tar, NULL, &spec, dest, &res, e);
	extract_result_release(&res);
	free(tar);
	free(dest);
	return ret;
}

/* extract-max-bytes-off-by-one: limits.max_bytes is the exact cap, for one
 * entry and summed over several */
static void test_extract_max_bytes_is_exact(void **state)
{
	static const size_t one[] = { 100 }, two[] = { 50, 51 };
	struct wb_err e = WB_ERR_INIT;
	char *dir = tmp_dir();

	(void)state;
	assert_int_equal(extract_sizes(dir, one, 1, 100, &e), 0);
	assert_int_equal(extract_sizes(dir, one, 1, 99, &e), -1);
	assert_int_equal(e.code, WB_ESTAGE);
	assert_non_null(strstr(e.msg, "limits.max_bytes"));
	wb_err_clear(&e);
	assert_int_equal(extract_sizes(dir, two, 2, 101, &e), 0);
	assert_int_equal(extract_sizes(dir, two, 2, 100, &e), -1);
	assert_non_null(strstr(e.msg, "entry 'f1'"));
	assert_non_null(strstr(e.msg, "limits.max_bytes"));
	rm_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cache_key_is_exactly_64_hex),
		cmocka_unit_test(test_cache_entry_is_read_only),
		cmocka_unit_test(test_winpath_every_control_byte),
		cmocka_unit_test(test_winpath_reserved_with_two_extensions),
		cmocka_unit_test(test_winpath_name_length_limit),
		cmocka_unit_test(test_extract_max_bytes_is_exact),
		cmocka_unit_test(test_checksum_overlong_digest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
