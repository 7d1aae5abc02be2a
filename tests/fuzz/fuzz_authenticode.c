/*
 * libFuzzer harness: a PE (.exe, .dll), MSI or cabinet (.cab, .msu) file
 * through the whole Authenticode verifier, authenticode_verify_mem
 * (trust/authenticode*.c: the PE headers and certificate-table entries,
 * the MSI compound file or the cabinet header, the image, stream or
 * cabinet hash, nested signatures, the
 * PKCS#7 SignedData, the timestamp countersignature, the chain, the EKU
 * and the publishers), offline. The roots are the test root CA of
 * tests/lib/authenticode.bash (tests/fuzz/authenticode-roots.pem); the
 * seeds, tests/fuzz/corpus/fuzz_authenticode, are files it signed with
 * osslsigncode (PE32+, PE32, a DLL, a timestamped .exe, an MSI), so the
 * inputs reach every step, not only the parsers. The seeds of issue 32
 * (signed.cab, nested.cab, nested.exe, nested.msi, two-entries.exe: a gcab
 * cabinet, nested signatures, two certificate-table entries) were signed
 * by another run's test CA: they reach every step up to the chain.
 */
#include <stddef.h>
#include <stdint.h>

#include "trust/authenticode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);
const char *__asan_default_options(void);

/*
 * OpenSSL 3.0's PKCS7_verify() leaks the memory BIO it copies the content
 * into when PKCS7_dataInit() then fails (a SignedData it cannot set up
 * digests for; tests/fuzz/regressions/fuzz_authenticode/ holds one, from
 * make fuzz-smoke): its error path frees the BIO chain but not that copy,
 * as openssl/openssl#30471 describes for CMS_verify(). 272 bytes per such
 * file, inside libcrypto; winbuild's own frees are still checked. The
 * suppression needs whole allocation stacks: libcrypto has no frame
 * pointers, so the fast unwinder stops at CRYPTO_zalloc.
 */
const char *__lsan_default_suppressions(void)
{
	return "leak:PKCS7_verify\n";
}

const char *__asan_default_options(void)
{
	return "fast_unwind_on_malloc=0";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const publishers[] = {
		"O=Example Corp,CN=Example Code Signing",
		"06ddf17da0a8349d571661664867dbb22b414a32ac21aa1fdf635514f7d08a80",
	};
	struct authenticode_policy pol = {
		.require = 1,
		.roots = "tests/fuzz/authenticode-roots.pem",
		.publishers = publishers,
		.npublishers = 2,
	};
	struct authenticode_result res = { 0 };
	struct wb_err e = WB_ERR_INIT;

	authenticode_verify_mem(data, size, "fuzz.exe", &pol, &res, &e);
	authenticode_result_release(&res);
	return 0;
}
