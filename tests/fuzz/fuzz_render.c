/*
 * libFuzzer harness: the template engine and every sink encoder
 * (stage/render.c, lib/tmpl.c) for memory errors and crashes; the
 * oracle fuzzer (render_fuzz.py) checks what they produce. Byte 0 picks
 * the mode: even, the rest is a template rendered with a few variables of
 * each kind; odd, byte 1 picks a sink and the rest is a value rendered
 * through it as a string, in a list and in a record.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/strlist.h"
#include "lib/tmpl.h"
#include "stage/render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const sinks[] = {
	"comment", "toml", "toml_lit", "ini", "json", "xml", "ps", "ps_native",
	"ps_msiprop", "ps_path", "ps_binpath", "ps_here", "hcl", "hcl_in",
	"md_code", "media_type", "trusted",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tmpl_vars v = TMPL_VARS_INIT;
	struct wb_strlist l = WB_STRLIST_INIT;
	struct buf out = BUF_INIT;
	struct wb_err e = WB_ERR_INIT;

	if (size < 2)
		return 0;
	if (!(data[0] & 1)) {
		wb_strlist_push(&l, "a'b");
		wb_strlist_push(&l, "C:\\x y");
		tmpl_set(&v, "v", "x'\"\n$%;#");
		tmpl_set(&v, "e", "");
		tmpl_set_list(&v, "l", &l);
		tmpl_set_int(&v, "n", 7);
		tmpl_set_trusted(&v, "t", "@('own')");
		tmpl_set_json(&v, "r", json_pack("[{s:s,s:i}]", "Name", "k", "Port", 1));
		render_string("fuzz", (const char *)data + 1, size - 1, &v, &out, &e);
	} else {
		const char *sink = sinks[data[1] % (sizeof(sinks) / sizeof(*sinks))];
		char *value = strndup((const char *)data + 2, size - 2);
		char *t = NULL;
		json_t *rec = json_object();

		if (!value || asprintf(&t, "{{%s:v}} {{%s:l}} {{%s:r}}", sink, sink, sink) < 0)
			abort();
		wb_strlist_push(&l, value);
		wb_strlist_push(&l, "");
		tmpl_set_from(&v, "v", value, "fuzz");
		tmpl_set_list_from(&v, "l", &l, &l);
		json_object_set_new(rec, "Key", json_stringn_nocheck(value, strlen(value)));
		tmpl_set_json(&v, "r", json_pack("[o]", rec));
		/* each placeholder alone, so a refusal of one does not hide the rest */
		for (char *p = t; p && *p; ) {
			char *end = strstr(p, "}}") + 2;

			buf_reset(&out);
			render_string("fuzz", p, (size_t)(end - p), &v, &out, &e);
			p = *end ? end + 1 : NULL;
		}
		free(t);
		free(value);
	}
	tmpl_vars_release(&v);
	wb_strlist_release(&l);
	buf_release(&out);
	return 0;
}
