/*
 * Methods "sha256_url" and "sha512_url": a checksum file (sha256sum or
 * BSD style, trust/checksum.h) whose line for the artifact's file name
 * must name the artifact's digest.
 */
#include <stdlib.h>
#include <string.h>

#include "trust/checksum.h"
#include "trust/method.h"

static int check_file(enum digest_alg alg, const struct trust_subject *s,
		      const struct trust_aux *aux, struct wb_err *e)
{
	unsigned char want[64];
	size_t n = alg == DIGEST_SHA512 ? 64 : 32;
	const unsigned char *actual = alg == DIGEST_SHA512 ? s->dr->sha512 : s->dr->sha256;
	char eh[129], ah[129];

	if (!aux->text)
		return wb_error(e, WB_EUSAGE, "artifact '%s': checksum file was not fetched",
				s->name);
	if (checksum_parse(aux->text, aux->len, s->filename, alg, want, e) < 0) {
		wb_error_prefix(e, "artifact '%s': checksum file '%s'", s->name, aux->url);
		return -1;
	}
	if (digest_equal(want, actual, n))
		return 0;
	digest_hex(want, n, eh);
	digest_hex(actual, n, ah);
	return wb_error(e, WB_EVERIFY,
			"artifact '%s' from '%s' did not verify: %s (from checksum file '%s') "
			"mismatch\n  expected %s\n  actual   %s", s->name, s->url,
			alg == DIGEST_SHA512 ? "sha512" : "sha256", aux->url, eh, ah);
}

static int check256(const struct trust_req *r, const struct trust_subject *s,
		    const struct trust_aux *aux, const char *which, struct trust_ev *ev,
		    struct wb_err *e)
{
	(void)r, (void)which, (void)ev;
	return check_file(DIGEST_SHA256, s, aux, e);
}

static int check512(const struct trust_req *r, const struct trust_subject *s,
		    const struct trust_aux *aux, const char *which, struct trust_ev *ev,
		    struct wb_err *e)
{
	(void)r, (void)which, (void)ev;
	return check_file(DIGEST_SHA512, s, aux, e);
}

static void describe_ev(const struct trust_ev *ev, struct buf *out)
{
	buf_addf(out, "checksum file %s", ev->url ? ev->url : "");
}

const struct trust_method trust_m_sha256_url = {
	.name = "sha256_url",
	.what = "sha256 checksum file",
	.shown = "sha256 checksum file",
	.flags = TRUST_CHECKSUM,
	.aux_max = CHECKSUM_FILE_MAX,
	.digest_algs = DIGEST_SHA256,
	.label = "sha256 from checksum file",
	.check = check256,
	.describe_ev = describe_ev,
};

const struct trust_method trust_m_sha512_url = {
	.name = "sha512_url",
	.what = "sha512 checksum file",
	.shown = "sha512 checksum file",
	.flags = TRUST_CHECKSUM,
	.aux_max = CHECKSUM_FILE_MAX,
	.digest_algs = DIGEST_SHA512,
	.label = "sha512 from checksum file",
	.check = check512,
	.describe_ev = describe_ev,
};
