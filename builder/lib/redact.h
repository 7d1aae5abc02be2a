/*
 * The one place a secret is taken out of a URL before the URL is recorded
 * (lock, cache ref, manifest, SBOM, provenance in the image, mirror index,
 * --json) or shown (messages, the log, progress). Issue 31.
 *
 * What counts as a secret in a URL:
 *   - userinfo: "https://user:password@host/" becomes "https://host/" (the
 *     user name goes too: a token is often given as the user name);
 *   - the value of a query parameter named (case-insensitively) sig,
 *     signature, token, access_token, X-Amz-Signature, X-Amz-Credential,
 *     X-Amz-Security-Token, X-Goog-Signature, X-Goog-Credential, or one
 *     named in $WINBUILD_REDACT_PARAMS (comma-separated): the value becomes
 *     "REDACTED", the name stays, so a reader still sees that the URL was
 *     a signed one.
 * Nothing else changes: a URL without either comes back byte for byte.
 */
#ifndef WB_REDACT_H
#define WB_REDACT_H

#include <stddef.h>
#include <stdio.h>

#include "lib/buf.h"

#define REDACTED "REDACTED"

/* Secrets shorter than this are not looked for in free text. */
#define REDACT_MIN_SECRET 8

/*
 * What a run learns is secret (issue 41 item 3): every secret of the
 * credentials file and netrc (fetch/creds.c: creds_load) and every
 * registry token (fetch/registry_http.c) is redacted wherever it appears
 * in text that leaves the process (redact_text, redact_url), and every
 * parameter a query credential adds is a secret parameter as those
 * listed above.
 */
void redact_add_secret(const char *secret);
void redact_add_params(const char *query);

/* Whether TEXT holds one of the secrets redact_add_secret learnt. */
int redact_has_secret(const char *text);

/* Whether URL holds userinfo or a secret query parameter. */
int redact_url_needed(const char *url);

/* Append URL[0..LEN), its secrets redacted, to B. */
void redact_add_url(struct buf *b, const char *url, size_t len);

/* URL with its secrets redacted, as a new string (NULL for NULL). */
char *redact_url(const char *url);

/* Whether A and B are the same URL once redacted: how a recorded (redacted)
 * URL is matched against the plan's. */
int redact_same_url(const char *a, const char *b);

/*
 * Free text that may hold URLs (a message): every "scheme://..." in it,
 * up to a space, a quote or the end, redacted as redact_url does; the rest
 * unchanged. In place, in TEXT's SIZE bytes (a redacted value may be
 * longer than the secret: the end of the text is cut then).
 */
void redact_text(char *text, size_t size);

/* TEXT[0..LEN) with every URL's secret and every learnt secret redacted,
 * as a new string of any length (redact_text, without its cut). */
char *redact_text_dup(const char *text, size_t len);

/*
 * From now on, every byte the process writes to stdout and stderr goes
 * through redact_text_dup, a line at a time (main() calls it first): the
 * one redaction of what leaves the process on the terminal or a pipe.
 * redact_stdio_flush writes an unfinished line out (before an exec, a
 * fork, or _exit).
 */
void redact_stdio(void);
void redact_stdio_flush(void);

/* Those streams also write every terminal control (C0 but tab, newline
 * and the CR of a CRLF; DEL; C1) as \xNN: text from outside never drives
 * the terminal. CTL, winbuild's own control sequence (the progress
 * display's cursor moves), is written to F (stdout or stderr) as it is. */
void redact_stdio_raw(FILE *f, const char *ctl);

#endif
