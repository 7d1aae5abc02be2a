/* emit/sign: option checks, and signing a script with osslsigncode using a
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_opts),
		cmocka_unit_test(test_sign_and_verify),
		cmocka_unit_test(test_sign_failure_leaves_script),
	};

	return cmocka_run_group_tests(tests, setup_pki, teardown_pki);
}
