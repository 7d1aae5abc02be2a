/*
 * libFuzzer harness: a Sigstore bundle through the whole verifier
 * (sigstore_verify) against the production trusted root of the test
 * vectors, for the artifact tests/vectors/sigstore/conformance/a.txt and
 * the conformance identity. The input is the bundle JSON. Run from the
 * repository root (tests/fuzz/run does).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trust/digest.h"
#include "trust/sigstore.h"

#define ROOT "tests/vectors/sigstore/trusted_root/public-good.json"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sigstore_root root;
	static int loaded;
	static unsigned char sha[32];
	struct sigstore_input in;
	struct sigstore_evidence ev;
	struct wb_err e = WB_ERR_INIT;

	if (!loaded) {
		if (sigstore_root_load(ROOT, &root, &e) < 0)
			return 0;
		digest_unhex("a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf",
			     sha, 32);
		loaded = 1;
	}
	memset(&in, 0, sizeof(in));
	in.artifact_sha256 = sha;
	in.bundle = (const char *)data;
	in.bundle_len = size;
	in.root = &root;
	in.identity = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
	in.issuer = "https://token.actions.githubusercontent.com";
	if (sigstore_verify(&in, &ev, &e) == 0)
		sigstore_evidence_release(&ev);
	return 0;
}
