/* lib/redact: the one place a secret is taken out of a URL (issue 31). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/redact.h"

static void check(const char *in, const char *want)
{
	char *got = redact_url(in);

	assert_string_equal(got, want);
	assert_int_equal(redact_url_needed(in), strcmp(in, want) != 0);
	free(got);
}

static void test_url(void **state)
{
	(void)state;
	unsetenv("WINBUILD_REDACT_PARAMS");
	/* nothing to take: byte for byte */
	check("https://example.com/a.bin", "https://example.com/a.bin");
	check("https://example.com/a.bin?version=2&x", "https://example.com/a.bin?version=2&x");
	check("file:///srv/mirror/a.bin", "file:///srv/mirror/a.bin");
	/* an @ in the path is no userinfo (Sigstore identities) */
	check("https://github.com/o/r/.github/workflows/release.yml@refs/tags/v1",
	      "https://github.com/o/r/.github/workflows/release.yml@refs/tags/v1");
	/* userinfo, with and without a password, IPv6, a port */
	check("https://builder:S3cret@host.example/a.bin", "https://host.example/a.bin");
	check("https://tokenonly@host.example:8443/a", "https://host.example:8443/a");
	check("http://u:p@[::1]:80/x?y=1", "http://[::1]:80/x?y=1");
	check("https://a:b@c@host/x", "https://host/x");
	/* secret query values, any case, the others kept, fragment kept */
	check("https://s.blob.core.windows.net/c/a.bin?sv=2024&sp=r&sig=abc%2Bdef",
	      "https://s.blob.core.windows.net/c/a.bin?sv=2024&sp=r&sig=REDACTED");
	check("https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F1"
	      "&X-Amz-Security-Token=tok&X-Amz-Signature=ff00#frag",
	      "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED"
	      "&X-Amz-Security-Token=REDACTED&X-Amz-Signature=REDACTED#frag");
	check("https://h/a?TOKEN=1&access_token=2&Signature=3&tokens=4",
	      "https://h/a?TOKEN=REDACTED&access_token=REDACTED&Signature=REDACTED&tokens=4");
	check("https://u:p@h/a?sig=1", "https://h/a?sig=REDACTED");
	/* already redacted: nothing left to take */
	check("https://h/a?sig=REDACTED", "https://h/a?sig=REDACTED");
	/* a name without a value is no secret */
	check("https://h/a?sig&x=1", "https://h/a?sig&x=1");
	/* the user's own names */
	setenv("WINBUILD_REDACT_PARAMS", "api_key,,Code", 1);
	check("https://h/a?api_key=k&code=c&keep=1", "https://h/a?api_key=REDACTED&code=REDACTED&keep=1");
	unsetenv("WINBUILD_REDACT_PARAMS");
	check("https://h/a?api_key=k", "https://h/a?api_key=k");
	assert_null(redact_url(NULL));
	assert_int_equal(redact_same_url("https://u:p@h/a?sig=1", "https://h/a?sig=REDACTED"), 1);
	assert_int_equal(redact_same_url("https://h/a?sig=1", "https://h/b?sig=1"), 0);
}

static void test_text(void **state)
{
	char msg[256];

	(void)state;
	snprintf(msg, sizeof(msg), "artifact 'a': artifact 'https://u:pw@h/a.bin?sig=s3cr3t&x=1': HTTP 403 "
		 "(redirects to \"https://cdn/x?X-Amz-Signature=ff\")");
	redact_text(msg, sizeof(msg));
	assert_string_equal(msg, "artifact 'a': artifact 'https://h/a.bin?sig=REDACTED&x=1': HTTP 403 "
			    "(redirects to \"https://cdn/x?X-Amz-Signature=REDACTED\")");
	/* text without a URL secret is left alone */
	snprintf(msg, sizeof(msg), "plain https://h/a.bin and a:b@c and ://x");
	redact_text(msg, sizeof(msg));
	assert_string_equal(msg, "plain https://h/a.bin and a:b@c and ://x");
	/* growing past the buffer cuts the end, never shows the secret */
	{
		char small[24] = "x https://h/?sig=1 tail";

		redact_text(small, sizeof(small));
		assert_null(strstr(small, "sig=1"));
		assert_int_equal(strlen(small), sizeof(small) - 1);
	}
}

/* The run's known secrets (a credentials file's, a registry token): every
 * copy of one taken out, by the message path (redact_text), the URL path
 * (redact_url) and the stdout/stderr streams' (redact_text_dup); one too
 * short to tell from text is not one. Last: the secrets are process-wide.
 * (o41-redact-literal-once, o41-redact-stdio-no-literals) */
static void test_known_secrets(void **state)
{
	static const char line[] = "401 from https://h/Pl4ntedS3cret/a?x=1: "
		"token Pl4ntedS3cret refused (was Pl4ntedS3cret)\n";
	char msg[256], *got;

	(void)state;
	redact_add_secret("Pl4ntedS3cret");
	redact_add_secret("short");
	got = redact_text_dup(line, strlen(line));
	assert_string_equal(got, "401 from https://h/REDACTED/a?x=1: token REDACTED refused "
			    "(was REDACTED)\n");
	free(got);
	snprintf(msg, sizeof(msg), "%s", line);
	redact_text(msg, sizeof(msg));
	assert_string_equal(msg, "401 from https://h/REDACTED/a?x=1: token REDACTED refused "
			    "(was REDACTED)\n");
	got = redact_url("https://h/Pl4ntedS3cret/Pl4ntedS3cret.bin");
	assert_string_equal(got, "https://h/REDACTED/REDACTED.bin");
	free(got);
	assert_int_equal(redact_has_secret("a short text"), 0);
	got = redact_text_dup("a short text", 12);
	assert_string_equal(got, "a short text");
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_known_secrets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
