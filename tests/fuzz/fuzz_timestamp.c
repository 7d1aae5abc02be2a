/*
 * libFuzzer harness: an RFC 3161 TimeStampResp or TimeStampToken (DER)
 * through timestamp_verify against the timestamp authority of a real
 * trusted root (Sigstore staging), over fixed signature bytes, and
 * timestamp_peek_time. Seeds: tests/fuzz/corpus/fuzz_timestamp, the
 * tokens of conformance bundles.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/x509.h>

#include "lib/base64.h"
#include "trust/timestamp.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct timestamp_authority tsa;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	json_t *root = json_load_file("tests/vectors/sigstore/conformance/rekor2-happy-path/trusted_root.json",
				      0, NULL);
	const json_t *certs, *c;
	size_t i;

	(void)argc;
	(void)argv;
	if (!root)
		abort();
	certs = json_object_get(json_object_get(json_array_get(json_object_get(root,
			"timestampAuthorities"), 0), "certChain"), "certificates");
	tsa.chain = sk_X509_new_null();
	json_array_foreach(certs, i, c) {
		const json_t *raw = json_object_get(c, "rawBytes");
		size_t n;
		unsigned char *der = b64_decode(json_string_value(raw), json_string_length(raw), &n);
		const unsigned char *p = der;

		if (!der)
			abort();
		sk_X509_push(tsa.chain, d2i_X509(NULL, &p, (long)n));
		free(der);
	}
	tsa.valid_from = INT64_MIN;
	tsa.valid_to = INT64_MAX;
	json_decref(root);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned char sig[] = "signature bytes";
	struct timestamp_result res;
	struct wb_err e = WB_ERR_INIT;
	int64_t t;

	timestamp_verify(data, size, sig, sizeof(sig) - 1, &tsa, 1, &res, &e);
	wb_err_clear(&e);
	timestamp_peek_time(data, size, &t, &e);
	return 0;
}
