/*
 * The renderer under an oracle (tests/fuzz/render_fuzz.py): reads lines
 *     HEX(template) KIND HEX(value) [HEX(value)...]
 * from stdin (KIND "s": one string, "l": a list of strings), renders the
 * template with the variable "v" through stage/render.c and lib/tmpl.c, as
 * winbuild does, and prints one line per input:
 *     OK HEX(output)      or      NO HEX(message)
 * Hex keeps every byte (newlines, quotes) out of the framing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/strlist.h"
#include "lib/tmpl.h"
#include "stage/render.h"

static char *unhex(const char *s, size_t n, size_t *len)
{
	char *out = xmalloc(n / 2 + 1);

	for (size_t i = 0; i + 1 < n; i += 2) {
		unsigned v;

		if (sscanf(s + i, "%2x", &v) != 1)
			v = '?';
		out[i / 2] = (char)v;
	}
	out[n / 2] = '\0';
	*len = n / 2;
	return out;
}

static void puthex(const char *tag, const char *p, size_t n)
{
	fputs(tag, stdout);
	for (size_t i = 0; i < n; i++)
		printf("%02x", (unsigned char)p[i]);
	putchar('\n');
}

int main(void)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t got;

	while ((got = getline(&line, &cap, stdin)) > 0) {
		struct tmpl_vars vars = TMPL_VARS_INIT;
		struct wb_strlist l = WB_STRLIST_INIT;
		struct buf out = BUF_INIT;
		struct wb_err e = WB_ERR_INIT;
		char *save = NULL, *tok, *tmpl, *kind;
		size_t tlen, vlen;

		line[strcspn(line, "\n")] = '\0';
		tok = strtok_r(line, " ", &save);
		kind = strtok_r(NULL, " ", &save);
		if (!tok || !kind)
			return 2;
		tmpl = unhex(tok, strlen(tok), &tlen);
		while ((tok = strtok_r(NULL, " ", &save))) {
			char *v = unhex(tok, strlen(tok), &vlen);

			wb_strlist_push(&l, v);
			free(v);
		}
		if (!strcmp(kind, "-"))   /* an empty string has no hex token */
			wb_strlist_push(&l, "");
		if (kind[0] == 'l')
			tmpl_set_list(&vars, "v", &l);
		else
			tmpl_set_from(&vars, "v", l.nr ? l.v[0] : "", "fuzz value");
		if (render_string("fuzz", tmpl, tlen, &vars, &out, &e) == 0)
			puthex("OK ", out.ptr ? out.ptr : "", out.len);
		else
			puthex("NO ", e.msg, strlen(e.msg));
		fflush(stdout);
		free(tmpl);
		wb_strlist_release(&l);
		tmpl_vars_release(&vars);
		buf_release(&out);
	}
	free(line);
	return 0;
}
