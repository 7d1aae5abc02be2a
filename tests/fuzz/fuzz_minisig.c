/*
 * libFuzzer harness: the minisign signature file parser, then the verifier
 * on whatever parsed (against a fixed key and a fixed file digest, so the
 * key-id, comment and both signature checks all run).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trust/digest.h"
#include "trust/minisign.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the key that signed the seed signatures in tests/fuzz/corpus/fuzz_minisig (over "hello world\n") */
static const char pub_text[] = "RWSlDy8e/zQ9/ukznaJKW5KE4h08nLt8okoaVvQPRtku/udt4e2aGu7d";
static struct minisign_pubkey keys[2];
static struct digest_result file_digest;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct wb_err e = WB_ERR_INIT;
	struct digest_ctx dc;

	(void)argc;
	(void)argv;
	if (minisign_pubkey_parse(pub_text, strlen(pub_text), &keys[0], &e))
		abort();
	keys[1] = keys[0];
	keys[1].allow_legacy = 1;
	keys[1].file_check = 0;
	keys[1].keyid[0] ^= 1;
	memset(&dc, 0, sizeof(dc));
	if (digest_init(&dc, DIGEST_BLAKE2B512, &e))
		abort();
	digest_update(&dc, "hello world\n", 12);
	digest_final(&dc, &file_digest);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct minisign_sig sig;
	struct minisign_result res;
	struct wb_err e = WB_ERR_INIT;

	memset(&sig, 0, sizeof(sig));
	if (minisign_sig_parse((const char *)data, size, &sig, &e))
		return 0;
	memset(&res, 0, sizeof(res));
	wb_err_clear(&e);
	/* legacy_path NULL: an "Ed" signature by key 1 must fail cleanly */
	minisign_verify(&sig, keys, 2, file_digest.blake2b512, NULL, "a.bin", &res, &e);
	minisign_result_release(&res);
	minisign_sig_release(&sig);
	return 0;
}
