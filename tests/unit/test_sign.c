/* trust/sign: option checks, and signing a script with osslsigncode using a
 * code-signing certificate made by openssl at test time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "trust/sign.h"
#include "lib/buf.h"
#include "lib/fs.h"

static char dir[] = "/tmp/wb-test-sign-XXXXXX";

static int setup_pki(void **state)
{
	char *cmd;
	int rc;

	(void)state;
	if (!mkdtemp(dir))
		return -1;
	cmd = xasprintf("cd '%s' && openssl req -x509 -newkey rsa:2048 -nodes -keyout k.pem "
			"-out c.pem -days 30 -subj '/CN=winbuild test signer' "
			"-addext extendedKeyUsage=codeSigning -addext basicConstraints=CA:FALSE "
			">/dev/null 2>&1 && printf 'Write-Host \"hi\"\\r\\n' >s.ps1", dir);
	rc = system(cmd);
	free(cmd);
	return rc ? -1 : 0;
}

static int teardown_pki(void **state)
{
	struct wb_err e = WB_ERR_INIT;

	(void)state;
	{
		char *up = fs_dirname(dir);
		int r = fs_remove_tree(up, fs_basename(dir), &e);

		free(up);
		return r;
	}
}

static void test_check_opts(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct sign_opts o;

	(void)state;
	memset(&o, 0, sizeof(o));
	assert_false(sign_requested(&o));
	assert_int_equal(sign_check_opts(&o, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	o.key = "k.pem";
	assert_true(sign_requested(&o));
	assert_int_equal(sign_check_opts(&o, &e), -1);
	assert_string_equal(e.msg, "--sign-key needs --sign-cert");
	o.cert = "c.pem";
	assert_int_equal(sign_check_opts(&o, &e), 0);
	o.pkcs12 = "x.p12";
	assert_int_equal(sign_check_opts(&o, &e), -1);
	memset(&o, 0, sizeof(o));
	o.pkcs11_uri = "pkcs11:object=key";
	assert_int_equal(sign_check_opts(&o, &e), -1);
	assert_non_null(strstr(e.msg, "--sign-pkcs11-module"));
	o.pkcs11_module = "/usr/lib/softhsm/libsofthsm2.so";
	o.cert = "pkcs11:object=cert";
	assert_int_equal(sign_check_opts(&o, &e), 0);
}

static void test_sign_and_verify(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct sign_opts o;
	struct buf text = BUF_INIT;
	char *script = fs_join(dir, "s.ps1"), *cmd;

	(void)state;
	memset(&o, 0, sizeof(o));
	o.cert = xasprintf("%s/c.pem", dir);
	o.key = xasprintf("%s/k.pem", dir);
	assert_int_equal(sign_script(&o, script, &e), 0);
	assert_int_equal(fs_read_file(script, 1 << 20, WB_EIO, &text, &e), 0);
	assert_non_null(strstr(text.ptr, "Write-Host \"hi\""));
	assert_non_null(strstr(text.ptr, "# SIG # Begin signature block"));
	cmd = xasprintf("osslsigncode verify -CAfile '%s/c.pem' -in '%s' >/dev/null 2>&1",
			dir, script);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	free((char *)o.cert);
	free((char *)o.key);
	free(script);
	buf_release(&text);
}

static void test_sign_failure_leaves_script(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct sign_opts o;
	struct buf before = BUF_INIT, after = BUF_INIT;
	char *script = fs_join(dir, "s.ps1"), *tmp = xasprintf("%s.sign.tmp", script);

	(void)state;
	memset(&o, 0, sizeof(o));
	o.cert = xasprintf("%s/c.pem", dir);
	o.key = xasprintf("%s/missing.pem", dir);
	assert_int_equal(fs_read_file(script, 1 << 20, WB_EIO, &before, &e), 0);
	assert_int_equal(sign_script(&o, script, &e), -1);
	assert_int_equal(e.code, WB_EIO);
	assert_non_null(strstr(e.msg, "osslsigncode could not sign"));
	assert_int_equal(fs_read_file(script, 1 << 20, WB_EIO, &after, &e), 0);
	assert_string_equal(before.ptr, after.ptr);
	assert_false(fs_exists(tmp));
	o.program = "/nonexistent/osslsigncode";
	free((char *)o.key);
	o.key = o.cert;
	assert_int_equal(sign_script(&o, script, &e), -1);
	assert_non_null(strstr(e.msg, "cannot run '/nonexistent/osslsigncode'"));
	free((char *)o.cert);
	free(tmp);
	free(script);
	buf_release(&before);
	buf_release(&after);
}

/* sign_file: a new inode replaces the file (a hard link to the old one,
 * like a cache entry's, keeps the unsigned bytes), and a fixed signing
 * time gives the same bytes twice. */
static void test_sign_file_new_inode_and_deterministic(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct sign_opts o;
	struct buf orig = BUF_INIT, linked = BUF_INIT, one = BUF_INIT, two = BUF_INIT;
	char *a = fs_join(dir, "a.ps1"), *b = fs_join(dir, "b.ps1"), *l = fs_join(dir, "l.ps1");

	(void)state;
	assert_int_equal(fs_write_atomic(a, "Write-Host 1\r\n", 14, 0644, &e), 0);
	assert_int_equal(fs_write_atomic(b, "Write-Host 1\r\n", 14, 0644, &e), 0);
	unlink(l);
	assert_int_equal(link(a, l), 0);
	memset(&o, 0, sizeof(o));
	o.cert = xasprintf("%s/c.pem", dir);
	o.key = xasprintf("%s/k.pem", dir);
	assert_int_equal(fs_read_file(a, 1 << 20, WB_EIO, &orig, &e), 0);
	assert_int_equal(sign_file(&o, a, 1700000000, &e), 0);
	assert_int_equal(sign_file(&o, b, 1700000000, &e), 0);
	assert_int_equal(fs_read_file(l, 1 << 20, WB_EIO, &linked, &e), 0);
	assert_int_equal(fs_read_file(a, 1 << 20, WB_EIO, &one, &e), 0);
	assert_int_equal(fs_read_file(b, 1 << 20, WB_EIO, &two, &e), 0);
	assert_int_equal(linked.len, orig.len);
	assert_memory_equal(linked.ptr, orig.ptr, orig.len);
	assert_true(one.len > orig.len);
	assert_int_equal(one.len, two.len);
	assert_memory_equal(one.ptr, two.ptr, one.len);
	free((char *)o.cert);
	free((char *)o.key);
	free(a);
	free(b);
	free(l);
	buf_release(&orig);
	buf_release(&linked);
	buf_release(&one);
	buf_release(&two);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_opts),
		cmocka_unit_test(test_sign_and_verify),
		cmocka_unit_test(test_sign_failure_leaves_script),
		cmocka_unit_test(test_sign_file_new_inode_and_deterministic),
	};

	return cmocka_run_group_tests(tests, setup_pki, teardown_pki);
}
