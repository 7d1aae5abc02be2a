/*
 * Text that comes from outside (archive entry names, checksum-file names):
 * strict UTF-8 validation, and the one escaper every message uses before
 * such text can reach a terminal.
 */
#ifndef WB_TEXT_H
#define WB_TEXT_H

#include <stddef.h>

#include "lib/buf.h"

/* Length of the well-formed UTF-8 sequence at S (at most AVAIL bytes, at
 * least 1) and its code point in *CP (NUL is U+0000), or 0 when the bytes
 * there are not one (RFC 3629: overlong, surrogate, above U+10FFFF,
 * truncated, stray continuation byte). */
size_t text_utf8_next(const char *s, size_t avail, unsigned *cp);

/* 1 if S[0..LEN) is well-formed UTF-8 (RFC 3629: no overlong forms, no
 * surrogates U+D800..U+DFFF, nothing above U+10FFFF, no NUL), else 0. */
int text_utf8_valid(const char *s, size_t len);

/*
 * Append S[0..LEN) to B so that it is safe to print: well-formed UTF-8
 * characters are kept except the C0 and C1 control characters, DEL and the
 * bidirectional overrides (U+202A..U+202E, U+2066..U+2069); those, every
 * byte of a malformed sequence, and the backslash itself are written as
 * \xNN (one per byte), so the output is unambiguous and never carries an
 * escape sequence or a newline.
 */
void text_add_printable(struct buf *b, const char *s, size_t len);

/* text_add_printable of the NUL-terminated S, as a new string. */
char *text_printable(const char *s);

/*
 * S as a record (lock, SBOM, manifest, --json) holds it, as a new string:
 * S itself when it is well-formed UTF-8, else text_printable(S) (each byte
 * of a malformed sequence, each control character and each backslash as
 * \xNN). JSON strings must be UTF-8: such text used to be dropped from the
 * record (jansson's json_string() refuses it), now it is kept, escaped.
 */
char *text_record(const char *s);

/*
 * Did-you-mean: the candidate nearest to WANT by edit distance
 * (Levenshtein), for misspelt commands, options, recipe keys and component
 * names. text_suggest_init, then text_suggest_add each candidate; best is
 * the one within distance 2 (the first such, the nearest wins), else the
 * first candidate WANT is a prefix of (at least 2 characters) or that is a
 * prefix of WANT (at least 4), else NULL.
 */
struct text_suggest {
	const char *want;
	const char *best;
	size_t dist;
};

void text_suggest_init(struct text_suggest *s, const char *want);
void text_suggest_add(struct text_suggest *s, const char *cand);
/* The edit distance of A and B (99 when either is 63 bytes or longer). */
size_t text_edit_distance(const char *a, const char *b);

#endif
