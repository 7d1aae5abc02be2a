/*
 * Authenticode signing with osslsigncode (Debian's osslsigncode, spawned
 * without a shell): the emitted PowerShell scripts, so Packer can run them
 * under `execution_policy = "allsigned"`, and the staged executables a
 * recipe's `site_signing` selects (stage/sitesign.c; docs/authenticode.md).
 * In trust/ so both stage/ and emit/ can reach it.
 *
 * Exactly one key source: a PEM certificate and key (CERT + KEY), a
 * PKCS#12 file (PKCS12), or a key in a PKCS#11 token (PKCS11_URI, with
 * PKCS11_MODULE and CERT as a file or a PKCS#11 URI). Secrets never go on
 * a command line: a key, PKCS#12 or token PIN password is read by
 * osslsigncode from PASS_FILE.
 */
#ifndef WB_TRUST_SIGN_H
#define WB_TRUST_SIGN_H

#include "lib/err.h"

struct sign_opts {
	const char *cert;           /* --sign-cert: PEM chain, or a PKCS#11 URI */
	const char *key;            /* --sign-key: PEM private key */
	const char *pkcs12;         /* --sign-pkcs12 */
	const char *pkcs11_uri;     /* --sign-pkcs11-uri: the key in the token */
	const char *pkcs11_module;  /* --sign-pkcs11-module: the token's .so */
	const char *pass_file;      /* --sign-pass-file: password or PIN */
	const char *timestamp_url;  /* --sign-timestamp: RFC 3161 TSA URL */
	const char *program;        /* osslsigncode (default "osslsigncode") */
};

/* 1 when any signing option is set. */
int sign_requested(const struct sign_opts *o);

/* Check that O names exactly one complete key source. Errors are
 * WB_EUSAGE naming the options. */
int sign_check_opts(const struct sign_opts *o, struct wb_err *e);

/*
 * Sign the script PATH in place: osslsigncode writes PATH.sign.tmp, which
 * replaces PATH only when signing succeeded (rename). Errors are WB_EIO
 * with osslsigncode's last message.
 */
int sign_script(const struct sign_opts *o, const char *path, struct wb_err *e);

/*
 * The same for any file osslsigncode signs (PE, MSI, PowerShell), with the
 * signing time SIGN_TIME (seconds since 1970; osslsigncode's -time) when
 * it is >= 0, so the same key gives the same bytes. An existing signature
 * is replaced, not nested. The file at PATH is replaced by a new inode
 * (rename), never written in place: a hard link to it elsewhere keeps the
 * old bytes.
 */
int sign_file(const struct sign_opts *o, const char *path, long long sign_time,
	      struct wb_err *e);

#endif
