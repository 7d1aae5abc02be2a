/*
 * The --json result (docs/json.md): one object on stdout per run, built by
 * the command as it goes (cmd_json) and printed by main() when the command
 * returns (cmd_json_finish), on success and on failure alike, with the
 * exit code and every error line that went to stderr. Human messages stay
 * on stderr; nothing else is printed on stdout.
 *
 * @where `--json`: the result object of every command (schema, command, ok,
 *   exit, errors; docs/json.md)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "fetch/fetch.h"
#include "lib/json.h"
#include "recipe/plan.h"

#define CMD_JSON_SCHEMA 1

json_t *cmd_json(struct wb_run *run)
{
	json_t *o;

	if (!run->json)
		return NULL;
	if (run->json_result)
		return run->json_result;
	o = json_object();
	json_object_set_new(o, "schema", json_integer(CMD_JSON_SCHEMA));
	json_object_set_new(o, "command", json_string(run->command ? run->command : ""));
	json_object_set_new(o, "ok", json_false());
	json_object_set_new(o, "exit", json_integer(0));
	json_object_set_new(o, "errors", json_array());
	run->json_result = o;
	return o;
}

/* {"file", "line", "col", "message"} of an error "FILE:LINE:COL: MESSAGE"
 * (a recipe error), or NULL
 * @where `--json`: the result object of every command (schema, command, ok,
 *   exit, errors; docs/json.md) -- `error_locations`: file, line, col of
 *   recipe errors
 */
static json_t *error_location(const char *msg)
{
	for (const char *p = strchr(msg, ':'); p; p = strchr(p + 1, ':')) {
		char *end1, *end2;
		unsigned long line, col;

		if (p[1] < '0' || p[1] > '9')
			continue;
		line = strtoul(p + 1, &end1, 10);
		if (*end1 != ':' || end1[1] < '0' || end1[1] > '9')
			continue;
		col = strtoul(end1 + 1, &end2, 10);
		if (strncmp(end2, ": ", 2) || p == msg)
			continue;
		return json_pack("{s:s%,s:I,s:I,s:s}", "file", msg, (size_t)(p - msg),
				 "line", (json_int_t)line, "col", (json_int_t)col,
				 "message", end2 + 2);
	}
	return NULL;
}

/*
 * @where `--json`: the result object of every command (schema, command, ok,
 *   exit, errors; docs/json.md) -- printed from `main()`, on success and
 *   failure
 */
int cmd_json_finish(struct wb_run *run, int exit_code)
{
	const struct wb_strlist *errs = cmd_reported_errors();
	json_t *o = cmd_json(run), *arr;
	int ret = exit_code;

	if (!o || run->json_done) {
		json_decref(o);
		run->json_result = NULL;
		return ret;
	}
	if (cmd_reported_warnings()->nr) {
		json_t *w = json_array();

		for (size_t i = 0; i < cmd_reported_warnings()->nr; i++)
			json_array_append_new(w, json_text(cmd_reported_warnings()->v[i]));
		json_object_set_new(o, "warnings", w);
	}
	json_object_set_new(o, "ok", json_boolean(exit_code == 0));
	json_object_set_new(o, "exit", json_integer(exit_code));
	arr = json_object_get(o, "errors");
	for (size_t i = 0; i < errs->nr; i++) {
		json_t *loc = error_location(errs->v[i]);

		/* json_text, not json_string: a message cut inside a UTF-8
		 * sequence (a long path of non-ASCII names at WB_ERR_MAX)
		 * is kept, its broken bytes escaped (lib/text.h:
		 * text_record), never dropped by jansson */
		json_array_append_new(arr, json_text(errs->v[i]));
		if (loc && !json_object_get(o, "error_locations"))
			json_object_set_new(o, "error_locations", json_array());
		if (loc)
			json_array_append_new(json_object_get(o, "error_locations"), loc);
	}
	if (json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0 && !ret)
		ret = WB_EIO;
	putchar('\n');
	json_decref(o);
	run->json_result = NULL;
	run->json_done = 1;
	return ret;
}

/*
 * @where `--json`: the result object of every command (schema, command, ok,
 *   exit, errors; docs/json.md) -- each command adds its fields
 */
void cmd_json_set(struct wb_run *run, const char *key, json_t *value)
{
	json_t *o = cmd_json(run);

	if (o)
		json_object_set_new(o, key, value);
	else
		json_decref(value);
}

static json_t *item_json(const struct fetch_item *it)
{
	const struct trust_ev *signer;
	json_t *o = json_object(), *vb;

	json_object_set_new(o, "name", json_string(it->art->name));
	json_object_set_new(o, "ok", json_boolean(!it->status));
	if (it->status) {
		json_object_set_new(o, "exit", json_integer(it->status));
		json_object_set_new(o, "error", json_text(it->err.msg));
		return o;
	}
	json_object_set_new(o, "cached", json_boolean(it->from_cache));
	json_object_set_new(o, "sha256", json_string(it->sha256));
	json_object_set_new(o, "size", json_integer((json_int_t)it->size));
	json_object_set_new(o, "url", json_url(it->url ? it->url : ""));
	json_object_set_new(o, "path", json_text(it->path ? it->path : ""));
	signer = verify_evidence_signer(&it->ev);
	if (signer) {
		/* the signer's evidence (minisign: key_id, trusted_comment) */
		json_t *also = json_array();

		for (size_t i = 0; i < signer->nfields; i++)
			json_object_set_new(o, signer->fields[i].key,
					    json_text(signer->fields[i].value));
		/* the further signature requirements' signers */
		for (size_t i = 0; i < it->ev.nr; i++) {
			const struct trust_ev *x = &it->ev.v[i];
			if (x != signer && (x->method->flags & TRUST_SIGNATURE) && x->nfields)
				json_array_append_new(also, json_text(x->fields[0].value));
		}
		if (json_array_size(also))
			json_object_set_new(o, "also_key_ids", also);
		else
			json_decref(also);
	}
	vb = verify_evidence_lock_json(&it->ev);
	if (json_object_get(vb, "checksum_url"))
		json_object_set(o, "checksum_url", json_object_get(vb, "checksum_url"));
	json_decref(vb);
	return o;
}

void cmd_json_fetch(struct wb_run *run, const struct plan *plan,
		    const struct fetch_item *items)
{
	json_t *arr;

	if (!run->json || !items)
		return;
	arr = json_array();
	for (size_t i = 0; i < plan->nartifacts; i++)
		json_array_append_new(arr, item_json(&items[i]));
	cmd_json_set(run, "recipe", json_string(plan->name ? plan->name : ""));
	cmd_json_set(run, "artifacts", arr);
}
