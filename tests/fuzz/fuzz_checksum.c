/*
 * libFuzzer harness: the checksum file parser. The first byte picks the
 * algorithm (even: SHA-256, odd: SHA-512); the rest is the file, looked up
 * for "a.bin".
 */
#include <stddef.h>
#include <stdint.h>

#include "trust/checksum.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char out[64];
	struct wb_err e = WB_ERR_INIT;
	enum digest_alg alg;

	if (!size)
		return 0;
	alg = (data[0] & 1) ? DIGEST_SHA512 : DIGEST_SHA256;
	checksum_parse((const char *)data + 1, size - 1, "a.bin", alg, out, &e);
	return 0;
}
