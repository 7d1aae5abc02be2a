/* trust/authenticode: the PE, MSI and cabinet parsers on hostile input. The real
 * signatures are tested end to end in tests/cli/authenticode.bats. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "trust/authenticode.h"

#define LFANEW 0x80
#define OPT (LFANEW + 24)
#define OPTSIZE 240                 /* PE32+: 112 + 16 directories * 8 */
#define HDR_END (OPT + OPTSIZE)
#define BODY 0x200

static void put16(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
	put16(p, v & 0xffff);
	put16(p + 2, v >> 16);
}

/* A minimal PE32+ image of BODY bytes plus CERTLEN bytes of certificate
 * table (zeros) at BODY; the caller frees it. */
static unsigned char *make_pe(size_t certlen, size_t *len)
{
	unsigned char *d = calloc(1, BODY + certlen);

	d[0] = 'M';
	d[1] = 'Z';
	put32(d + 0x3c, LFANEW);
	memcpy(d + LFANEW, "PE\0\0", 4);
	put16(d + LFANEW + 4, 0x8664);       /* machine */
	put16(d + LFANEW + 6, 0);            /* sections */
	put16(d + LFANEW + 20, OPTSIZE);
	put16(d + OPT, 0x20b);
	put32(d + OPT + 108, 16);            /* NumberOfRvaAndSizes */
	if (certlen) {
		put32(d + OPT + 112 + 32, BODY);
		put32(d + OPT + 112 + 36, (uint32_t)certlen);
	}
	for (size_t i = HDR_END; i < BODY; i++)
		d[i] = (unsigned char)i;
	*len = BODY + certlen;
	return d;
}

static int parse(const unsigned char *d, size_t len, struct wb_err *e)
{
	struct authenticode_pe pe;

	wb_err_clear(e);
	return authenticode_pe_parse(d, len, &pe, e);
}

static void test_pe_valid_unsigned(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct authenticode_pe pe;
	size_t len;
	unsigned char *d = make_pe(0, &len);

	(void)state;
	assert_int_equal(authenticode_pe_parse(d, len, &pe, &e), 0);
	assert_int_equal(pe.pe32plus, 1);
	assert_int_equal(pe.checksum_off, OPT + 64);
	assert_int_equal(pe.certdir_off, OPT + 112 + 32);
	assert_int_equal(pe.cert_len, 0);
	free(d);
}

static void test_pe_valid_signed(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct authenticode_pe pe;
	size_t len;
	unsigned char *d = make_pe(64, &len);

	(void)state;
	assert_int_equal(authenticode_pe_parse(d, len, &pe, &e), 0);
	assert_int_equal(pe.cert_off, BODY);
	assert_int_equal(pe.cert_len, 64);
	free(d);
}

static void test_pe_truncated(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	size_t len;
	unsigned char *d = make_pe(0, &len);

	(void)state;
	assert_int_equal(parse(d, 0, &e), -1);
	assert_int_equal(parse(d, 63, &e), -1);
	assert_string_equal(e.msg, "not a PE file (no MZ header)");
	/* the PE header itself cut off */
	assert_int_equal(parse(d, LFANEW + 10, &e), -1);
	assert_non_null(strstr(e.msg, "lies outside the file"));
	/* the optional header cut off */
	assert_int_equal(parse(d, OPT + 100, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	assert_non_null(strstr(e.msg, "optional header"));
	free(d);
}

static void test_pe_bad_offsets(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	size_t len;
	unsigned char *d = make_pe(0, &len);

	(void)state;
	put32(d + 0x3c, 0xfffffff0u);   /* e_lfanew far past the end (and overflowing) */
	assert_int_equal(parse(d, len, &e), -1);
	assert_non_null(strstr(e.msg, "PE header offset"));
	put32(d + 0x3c, LFANEW);
	d[LFANEW + 1] = 'X';
	assert_int_equal(parse(d, len, &e), -1);
	assert_non_null(strstr(e.msg, "no PE signature"));
	d[LFANEW + 1] = 'E';
	put16(d + OPT, 0x107);
	assert_int_equal(parse(d, len, &e), -1);
	assert_non_null(strstr(e.msg, "magic 0x107"));
	put16(d + OPT, 0x20b);
	put16(d + LFANEW + 20, 60);     /* too short for PE32+ */
	assert_int_equal(parse(d, len, &e), -1);
	assert_non_null(strstr(e.msg, "too short"));
	put16(d + LFANEW + 20, OPTSIZE);
	put16(d + LFANEW + 6, 0xffff);  /* section table beyond the file */
	assert_int_equal(parse(d, len, &e), -1);
	assert_non_null(strstr(e.msg, "section table"));
	free(d);
}

static void test_pe_huge_certificate_table(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	size_t len;
	unsigned char *d = make_pe(64, &len);

	(void)state;
	put32(d + OPT + 112 + 36, 0xffffffffu);   /* size */
	assert_int_equal(parse(d, len, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	assert_non_null(strstr(e.msg, "lies outside the file"));
	put32(d + OPT + 112 + 36, 64);
	put32(d + OPT + 112 + 32, 0xffffffc0u);   /* offset + size wraps */
	assert_int_equal(parse(d, len, &e), -1);
	assert_non_null(strstr(e.msg, "lies outside the file"));
	put32(d + OPT + 112 + 32, 0x10);          /* inside the headers */
	assert_int_equal(parse(d, len, &e), -1);
	assert_non_null(strstr(e.msg, "lies outside the file"));
	put32(d + OPT + 112 + 32, BODY);
	put32(d + OPT + 112 + 36, 32);            /* 32 bytes left after it */
	assert_int_equal(parse(d, len, &e), -1);
	assert_int_equal(e.code, WB_EVERIFY);
	assert_non_null(strstr(e.msg, "32 bytes after the certificate table"));
	put32(d + OPT + 112 + 32, BODY + 60);
	put32(d + OPT + 112 + 36, 4);             /* shorter than WIN_CERTIFICATE */
	assert_int_equal(parse(d, len, &e), -1);
	assert_non_null(strstr(e.msg, "too short"));
	free(d);
}

static void test_pe_digest_skips_checksum_and_directory(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct authenticode_pe pe;
	unsigned char h1[64], h2[64];
	unsigned l1 = 0, l2 = 0;
	size_t len;
	unsigned char *d = make_pe(64, &len);

	(void)state;
	assert_int_equal(authenticode_pe_parse(d, len, &pe, &e), 0);
	assert_int_equal(authenticode_pe_digest(d, len, &pe, "sha256", h1, &l1, &e), 0);
	assert_int_equal(l1, 32);
	/* checksum and certificate table contents are not hashed */
	put32(d + pe.checksum_off, 0x12345678);
	memset(d + BODY, 0xaa, 64);
	assert_int_equal(authenticode_pe_digest(d, len, &pe, "sha256", h2, &l2, &e), 0);
	assert_memory_equal(h1, h2, 32);
	/* any other byte is */
	d[BODY - 1] ^= 1;
	assert_int_equal(authenticode_pe_digest(d, len, &pe, "sha256", h2, &l2, &e), 0);
	assert_memory_not_equal(h1, h2, 32);
	free(d);
}

static void test_pe_bad_win_certificate(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct authenticode_policy pol = { .require = 1 };
	struct authenticode_result res;
	size_t len;
	unsigned char *d = make_pe(64, &len);

	(void)state;
	put32(d + BODY, 0x7fffffff);             /* dwLength beyond the table */
	assert_int_equal(authenticode_verify_mem(d, len, "x.exe", &pol, &res, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	assert_non_null(strstr(e.msg, "'x.exe': WIN_CERTIFICATE length"));
	put32(d + BODY, 64);
	put16(d + BODY + 4, 0x0100);
	put16(d + BODY + 6, 1);                  /* X.509, not PKCS#7 */
	wb_err_clear(&e);
	assert_int_equal(authenticode_verify_mem(d, len, "x.exe", &pol, &res, &e), -1);
	assert_non_null(strstr(e.msg, "not a PKCS#7 signature"));
	put16(d + BODY + 4, 0x0200);
	put16(d + BODY + 6, 2);
	memset(d + BODY + 8, 0x30, 56);          /* garbage DER */
	wb_err_clear(&e);
	assert_int_equal(authenticode_verify_mem(d, len, "x.exe", &pol, &res, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	assert_non_null(strstr(e.msg, "not a PKCS#7 SignedData"));
	authenticode_result_release(&res);
	free(d);
}

static void test_unsigned_policy(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct authenticode_policy pol = { .require = 0 };
	struct authenticode_result res;
	size_t len;
	unsigned char *d = make_pe(0, &len);

	(void)state;
	assert_int_equal(authenticode_verify_mem(d, len, "u.dll", &pol, &res, &e), 0);
	assert_int_equal(res.is_signed, 0);
	assert_int_equal(res.format, AUTHENTICODE_PE);
	pol.require = 1;
	assert_int_equal(authenticode_verify_mem(d, len, "u.dll", &pol, &res, &e), -1);
	assert_int_equal(e.code, WB_EVERIFY);
	assert_string_equal(e.msg, "'u.dll': not signed (no Authenticode signature)");
	free(d);
}

static void test_not_pe_or_msi(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	struct authenticode_policy pol = { .require = 1 };
	struct authenticode_result res;

	(void)state;
	assert_int_equal(authenticode_verify_mem((const unsigned char *)"#!/bin/sh\n", 10,
						 "s", &pol, &res, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	assert_string_equal(e.msg, "'s': not a PE, MSI or cabinet file");
}

/* A compound-file header with no valid FAT. */
static unsigned char *make_cfb(size_t *len)
{
	static const unsigned char magic[8] = { 0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1 };
	unsigned char *d = calloc(1, 512 * 4);

	memcpy(d, magic, 8);
	put16(d + 0x1a, 3);
	put16(d + 0x1c, 0xfffe);
	put16(d + 0x1e, 9);
	put16(d + 0x20, 6);
	put32(d + 0x2c, 1);            /* one FAT sector: sector 0 */
	put32(d + 0x30, 1);            /* directory at sector 1 */
	put32(d + 0x38, 4096);
	put32(d + 0x3c, 0xfffffffeu);
	put32(d + 0x44, 0xfffffffeu);
	for (int i = 0; i < 109; i++)
		put32(d + 0x4c + i * 4, 0xffffffffu);
	put32(d + 0x4c, 0);
	*len = 512 * 4;
	return d;
}

static void test_msi_malformed(void **state)
{
	struct wb_err e = WB_ERR_INIT;
	unsigned char h[64], *sig = NULL;
	unsigned hl;
	size_t len, sl;
	unsigned char *d = make_cfb(&len);

	(void)state;
	/* truncated header */
	assert_int_equal(authenticode_msi_digest(d, 100, "sha256", h, &hl, &sig, &sl, &e), -1);
	assert_non_null(strstr(e.msg, "not a compound file"));
	/* FAT claims more sectors than the file has */
	put32(d + 0x2c, 0x10000000);
	wb_err_clear(&e);
	assert_int_equal(authenticode_msi_digest(d, len, "sha256", h, &hl, &sig, &sl, &e), -1);
	assert_non_null(strstr(e.msg, "larger than the file"));
	put32(d + 0x2c, 1);
	/* FAT sector 0: sector 1 (directory) loops to itself */
	for (int i = 0; i < 128; i++)
		put32(d + 512 + i * 4, 0xffffffffu);
	put32(d + 512 + 4, 1);
	wb_err_clear(&e);
	assert_int_equal(authenticode_msi_digest(d, len, "sha256", h, &hl, &sig, &sl, &e), -1);
	assert_non_null(strstr(e.msg, "directory chain is broken"));
	/* directory ends, but entry 0 is not a root */
	put32(d + 512 + 4, 0xfffffffeu);
	wb_err_clear(&e);
	assert_int_equal(authenticode_msi_digest(d, len, "sha256", h, &hl, &sig, &sl, &e), -1);
	assert_non_null(strstr(e.msg, "no root entry"));
	/* a root whose child points at itself */
	d[1024 + 0x42] = 5;
	put16(d + 1024 + 0x40, 2);
	put32(d + 1024 + 0x44, 0xffffffffu);
	put32(d + 1024 + 0x48, 0xffffffffu);
	put32(d + 1024 + 0x4c, 0);
	put32(d + 1024 + 0x74, 0xfffffffeu);
	wb_err_clear(&e);
	assert_int_equal(authenticode_msi_digest(d, len, "sha256", h, &hl, &sig, &sl, &e), -1);
	assert_non_null(strstr(e.msg, "directory tree is malformed"));
	/* an empty root hashes to H(root CLSID) */
	put32(d + 1024 + 0x4c, 0xffffffffu);
	wb_err_clear(&e);
	assert_int_equal(authenticode_msi_digest(d, len, "sha256", h, &hl, &sig, &sl, &e), 0);
	assert_null(sig);
	assert_int_equal(hl, 32);
	free(d);
}

static void test_wants(void **state)
{
	(void)state;
	assert_true(authenticode_wants("bin/kubelet.exe"));
	assert_true(authenticode_wants("X.DLL"));
	assert_true(authenticode_wants("a/b.Msi"));
	assert_false(authenticode_wants("a.ps1"));
	assert_false(authenticode_wants(".exe"));
	assert_true(authenticode_wants("u/windows10.0-kb5034439-x64.MSU"));
	assert_true(authenticode_wants("a.cab"));
	/* the site never re-signs a cabinet (an update keeps Microsoft's) */
	assert_false(authenticode_signable("a.cab"));
	assert_false(authenticode_signable("a.msu"));
	assert_true(authenticode_signable("a.exe"));
}

/* ---- cabinets ---- */

#define CAB_SIGOFF 200
#define CAB_SIGLEN 40

/* A signed-cabinet header (reserve of 20, one folder) whose "signature"
 * (CAB_SIGLEN zero bytes) lies at CAB_SIGOFF and ends the buffer. */
static unsigned char *make_cab(size_t *len)
{
	unsigned char *d = calloc(1, CAB_SIGOFF + CAB_SIGLEN);

	memcpy(d, "MSCF", 4);
	put32(d + 8, CAB_SIGOFF);           /* cbCabinet */
	put32(d + 16, 60 + 8);              /* coffFiles: after one CFFOLDER */
	d[24] = 3;
	d[25] = 1;
	put16(d + 26, 1);                   /* cFolders */
	put16(d + 28, 1);                   /* cFiles */
	put16(d + 30, 0x0004);              /* cfhdrRESERVE_PRESENT */
	put32(d + 36, 20);                  /* cbCFHeader 20, cbCFFolder/Data 0 */
	put32(d + 40, 0x00100000);
	put32(d + 44, CAB_SIGOFF);
	put32(d + 48, CAB_SIGLEN);
	for (size_t i = 60; i < CAB_SIGOFF; i++)
		d[i] = (unsigned char)(i * 7);
	*len = CAB_SIGOFF + CAB_SIGLEN;
	return d;
}

static void cab_hash(const unsigned char *d, size_t len, unsigned char out[64])
{
	struct authenticode_cab cab;
	struct wb_err e = WB_ERR_INIT;
	unsigned n = 0;

	assert_int_equal(authenticode_cab_parse(d, len, &cab, &e), 0);
	assert_int_equal(authenticode_cab_digest(d, len, &cab, "sha256", out, &n, &e), 0);
	assert_int_equal(n, 32);
}

static void test_cab_valid(void **state)
{
	struct authenticode_cab cab;
	struct wb_err e = WB_ERR_INIT;
	size_t len;
	unsigned char *d = make_cab(&len);

	(void)state;
	assert_int_equal(authenticode_cab_parse(d, len, &cab, &e), 0);
	assert_int_equal(cab.sig_off, CAB_SIGOFF);
	assert_int_equal(cab.sig_len, CAB_SIGLEN);
	assert_int_equal(cab.end, CAB_SIGOFF);
	free(d);
}

/* the hashed ranges: bytes 4-7 and 34-55 and the signature are not
 * covered; 0-3, 8-33, 56 and the last byte before the signature are */
static void test_cab_digest_ranges(void **state)
{
	/* (bytes 4-7, reserved1, must be 0, and 36-51 the parser checks) */
	static const size_t out[] = { 34, 35, 52, 55, CAB_SIGOFF + 5 };
	static const size_t in[] = { 8, 33, 56, 59, 60, CAB_SIGOFF - 1 };
	unsigned char h0[64], h1[64];
	size_t len;
	unsigned char *d = make_cab(&len);

	(void)state;
	cab_hash(d, len, h0);
	for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
		unsigned char *c = malloc(len);

		memcpy(c, d, len);
		c[out[i]] ^= 0x80;
		cab_hash(c, len, h1);
		assert_memory_equal(h0, h1, 32);
		free(c);
	}
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		unsigned char *c = malloc(len);

		memcpy(c, d, len);
		c[in[i]] ^= 0x01;
		cab_hash(c, len, h1);
		assert_memory_not_equal(h0, h1, 32);
		free(c);
	}
	free(d);
}

static void cab_refused(unsigned char *d, size_t len, int code, const char *msg)
{
	struct authenticode_cab cab;
	struct wb_err e = WB_ERR_INIT;

	assert_int_equal(authenticode_cab_parse(d, len, &cab, &e), -1);
	assert_int_equal(e.code, code);
	if (!strstr(e.msg, msg))
		fail_msg("'%s' lacks '%s'", e.msg, msg);
}

static void test_cab_malformed(void **state)
{
	size_t len;
	unsigned char *d = make_cab(&len);

	(void)state;
	cab_refused(d, 20, WB_EUSAGE, "not a cabinet file");
	cab_refused(d, 50, WB_EUSAGE, "not an Authenticode signature header");
	put32(d + 44, CAB_SIGOFF + 1);
	cab_refused(d, len, WB_EUSAGE, "lies outside the file");
	put32(d + 44, CAB_SIGOFF - 1);
	cab_refused(d, len, WB_EVERIFY, "1 bytes after the cabinet signature");
	put32(d + 44, 0);
	cab_refused(d, len, WB_EUSAGE, "inconsistent");
	put32(d + 44, 10);
	put32(d + 48, (uint32_t)len - 10);
	cab_refused(d, len, WB_EUSAGE, "lies outside the file");
	put32(d + 44, CAB_SIGOFF);
	put32(d + 48, 0xffffffffu);
	cab_refused(d, len, WB_EUSAGE, "lies outside the file");
	put32(d + 48, CAB_SIGLEN);
	put32(d + 40, 0x00200000);
	cab_refused(d, len, WB_EUSAGE, "not an Authenticode signature header");
	put32(d + 40, 0x00100000);
	put32(d + 16, 60);
	cab_refused(d, len, WB_EUSAGE, "do not end at coffFiles (60)");
	put32(d + 16, 68);
	put16(d + 26, 0xffff);
	cab_refused(d, len, WB_EUSAGE, "65535 folders");
	put16(d + 26, 1);
	put16(d + 30, 0x0005);
	cab_refused(d, len, WB_EUSAGE, "multi-volume");
	memset(d + 60, 'a', CAB_SIGOFF - 60);   /* no NUL before the signature */
	put16(d + 30, 0x0006);
	cab_refused(d, len, WB_EUSAGE, "szCabinetNext");
	put16(d + 30, 0x0004);
	put32(d + 4, 1);
	cab_refused(d, len, WB_EUSAGE, "reserved1");
	put32(d + 4, 0);
	d[25] = 2;
	cab_refused(d, len, WB_EUSAGE, "version 2.3");
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pe_valid_unsigned),
		cmocka_unit_test(test_pe_valid_signed),
		cmocka_unit_test(test_pe_truncated),
		cmocka_unit_test(test_pe_bad_offsets),
		cmocka_unit_test(test_pe_huge_certificate_table),
		cmocka_unit_test(test_pe_digest_skips_checksum_and_directory),
		cmocka_unit_test(test_pe_bad_win_certificate),
		cmocka_unit_test(test_unsigned_policy),
		cmocka_unit_test(test_not_pe_or_msi),
		cmocka_unit_test(test_msi_malformed),
		cmocka_unit_test(test_wants),
		cmocka_unit_test(test_cab_valid),
		cmocka_unit_test(test_cab_digest_ranges),
		cmocka_unit_test(test_cab_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
