/*
 * libFuzzer harness: a Rekor entry as a bundle's tlogEntries[] element
 * (tlog_entry_from_bundle), then tlog_entry_verify against the logs of two
 * real trusted roots (Rekor v1 production, Rekor v2 staging), the body
 * parser, and the checkpoint parser on its envelope. The same bytes also
 * go to the Rekor API form parser (tlog_entry_from_rekor_api).
 * Seeds: tests/fuzz/corpus/fuzz_tlog, the entries of conformance bundles.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/x509.h>

#include "lib/base64.h"
#include "trust/tlog.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct tlog_key keys[8];
static size_t nkeys;

static void add_logs(const char *path)
{
	json_t *root = json_load_file(path, 0, NULL);
	const json_t *one;
	size_t i;

	if (!root)
		abort();
	json_array_foreach(json_object_get(root, "tlogs"), i, one) {
		const json_t *pk = json_object_get(one, "publicKey");
		const json_t *raw = json_object_get(pk, "rawBytes");
		const json_t *id = json_object_get(json_object_get(one, "logId"), "keyId");
		size_t n, idn;
		unsigned char *der = b64_decode(json_string_value(raw), json_string_length(raw), &n);
		unsigned char *lid = b64_decode(json_string_value(id), json_string_length(id), &idn);
		const unsigned char *p = der;
		struct tlog_key *k = &keys[nkeys++];

		if (!der || !lid || idn != TLOG_HASH_LEN || nkeys > 8)
			abort();
		memcpy(k->log_id, lid, TLOG_HASH_LEN);
		k->pkey = d2i_PUBKEY(NULL, &p, (long)n);
		k->valid_from = TLOG_TIME_MIN;
		k->valid_to = TLOG_TIME_MAX;
		k->base_url = strdup(json_string_value(json_object_get(one, "baseUrl")));
		free(der);
		free(lid);
	}
	json_decref(root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	add_logs("tests/vectors/sigstore/trusted_root/public-good.json");
	add_logs("tests/vectors/sigstore/conformance/rekor2-happy-path/trusted_root.json");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tlog_entry ent;
	struct tlog_result res;
	struct tlog_body body;
	struct tlog_checkpoint cp;
	struct wb_err e = WB_ERR_INIT;
	json_t *j = json_loadb((const char *)data, size, 0, NULL);

	if (j && tlog_entry_from_bundle(j, &ent, &e) == 0) {
		wb_err_clear(&e);
		tlog_entry_verify(&ent, keys, nkeys, 0, 2000000000, &res, &e);
		wb_err_clear(&e);
		if (tlog_body_parse(&ent, &body, &e) == 0)
			tlog_body_release(&body);
		if (ent.proof.checkpoint) {
			wb_err_clear(&e);
			if (tlog_checkpoint_parse(ent.proof.checkpoint, ent.proof.checkpoint_len, &cp, &e) == 0) {
				for (size_t i = 0; i < nkeys; i++) {
					wb_err_clear(&e);
					tlog_checkpoint_verify(&cp, &keys[i], i % 2 ? "log.example" : NULL, &e);
				}
				tlog_checkpoint_release(&cp);
			}
		}
		tlog_entry_release(&ent);
	}
	json_decref(j);
	wb_err_clear(&e);
	if (tlog_entry_from_rekor_api((const char *)data, size, &ent, &e) == 0) {
		wb_err_clear(&e);
		tlog_entry_verify(&ent, keys, nkeys, TLOG_REQUIRE_SET, 2000000000, &res, &e);
		tlog_entry_release(&ent);
	}
	return 0;
}
