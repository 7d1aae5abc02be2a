/* libFuzzer harness: the minisign public key parser (bare line or .pub). */
#include <stddef.h>
#include <stdint.h>

#include "trust/minisign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct minisign_pubkey pk;
	struct wb_err e = WB_ERR_INIT;

	if (!minisign_pubkey_parse((const char *)data, size, &pk, &e)) {
		char hex[17];
		minisign_keyid_hex(pk.keyid, hex);
	}
	return 0;
}
