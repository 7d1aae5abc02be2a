/* trust/method.h: the table of verification methods, and evidence. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "trust/method.h"

/* Methods nothing else names: declared here only. */
extern const struct trust_method trust_m_sigstore, trust_m_attestation;

/* One line per method (docs/architecture.md, "Adding a verification
 * method"). The order is the order of the recipe's keys in `plan`. */
const struct trust_method *const trust_methods[] = {
	&trust_m_minisign,
	&trust_m_sha256_url,
	&trust_m_sha512_url,
	&trust_m_sigstore,
	&trust_m_attestation,
	NULL,
};

const struct trust_method *trust_method_find(const char *name)
{
	for (size_t i = 0; trust_methods[i]; i++)
		if (!strcmp(trust_methods[i]->name, name))
			return trust_methods[i];
	return NULL;
}

void trust_ev_set(struct trust_ev *ev, const char *key, const char *value)
{
	for (size_t i = 0; i < ev->nfields; i++)
		if (!strcmp(ev->fields[i].key, key)) {
			free(ev->fields[i].value);
			ev->fields[i].value = xstrdup(value ? value : "");
			return;
		}
	ALLOC_GROW(ev->fields, ev->nfields + 1, ev->alloc_fields);
	ev->fields[ev->nfields].key = xstrdup(key);
	ev->fields[ev->nfields].value = xstrdup(value ? value : "");
	ev->nfields++;
}

const char *trust_ev_get(const struct trust_ev *ev, const char *key)
{
	for (size_t i = 0; i < ev->nfields; i++)
		if (!strcmp(ev->fields[i].key, key))
			return ev->fields[i].value;
	return NULL;
}

void trust_ev_release(struct trust_ev *ev)
{
	for (size_t i = 0; i < ev->nfields; i++) {
		free(ev->fields[i].key);
		free(ev->fields[i].value);
	}
	free(ev->fields);
	free(ev->url);
	free(ev->text);
	memset(ev, 0, sizeof(*ev));
}

void trust_params_describe(const struct trust_req *r,
			   void (*line)(void *ctx, const char *text,
					const struct wb_origin *o), void *ctx)
{
	for (size_t i = 0; i < r->nparams; i++) {
		const struct trust_param *p = &r->params[i];
		struct buf b = BUF_INIT;

		buf_addf(&b, "%s %s", p->key, p->value);
		line(ctx, b.ptr, &p->origin);
		buf_release(&b);
	}
}

void trust_params_json(const struct trust_req *r, json_t *obj)
{
	for (size_t i = 0; r->method->params && r->method->params[i].name; i++) {
		const char *k = r->method->params[i].name, *v = trust_req_param(r, k, NULL);

		json_object_set_new(obj, k, v ? json_string(v) : json_null());
	}
}
