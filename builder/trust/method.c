/* trust/method.h: the table of verification methods, and evidence. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "trust/method.h"
#include "lib/text.h"

/* Methods nothing else names: declared here only. */
extern const struct trust_method trust_m_sigstore, trust_m_attestation, trust_m_cosign,
	trust_m_authenticode;

/* One line per method (docs/architecture.md, "Adding a verification
 * method"). The order is the order of the recipe's keys in `plan`.
 * @where the table of verification methods (checksum files, minisign,
 *   Sigstore bundles, ...: what each fetches, checks, records and shows) --
 *   one file per method, `builder/trust/m_*.c` (docs/architecture.md "Adding
 *   a verification method")
 */
const struct trust_method *const trust_methods[] = {
	&trust_m_minisign,
	&trust_m_sha256_url,
	&trust_m_sha512_url,
	&trust_m_sigstore,
	&trust_m_attestation,
	&trust_m_cosign,
	&trust_m_authenticode,
	NULL,
};

const struct trust_method *trust_method_find(const char *name)
{
	for (size_t i = 0; trust_methods[i]; i++)
		if (!strcmp(trust_methods[i]->name, name))
			return trust_methods[i];
	return NULL;
}

size_t trust_method_naux(const struct trust_method *m)
{
	return m->naux ? m->naux : 1;
}

struct trust_aux_def trust_method_aux(const struct trust_method *m, size_t k)
{
	struct trust_aux_def d;

	if (m->naux)
		return m->aux[k];
	memset(&d, 0, sizeof(d));
	d.param = m->url_param;
	d.default_url = m->default_url;
	d.what = m->what;
	d.max = m->aux_max;
	d.lock_key = m->url_key;
	/* a signature kept beside the file it signs ("${url}.minisig") */
	if ((m->flags & TRUST_SIGNATURE) && m->default_url &&
	    !strncmp(m->default_url, "${url}", 6))
		d.suffix = m->default_url + 6;
	return d;
}

int trust_aux_required(const struct trust_req *r, size_t k)
{
	if (trust_method_aux(r->method, k).flags & TRUST_AUX_OPTIONAL)
		return 0;
	for (size_t i = 0; i < trust_method_naux(r->method); i++)
		if ((trust_method_aux(r->method, i).flags & TRUST_AUX_PREFERRED) &&
		    trust_req_urls(r, i)->nr)
			return 0;
	return 1;
}

size_t trust_spec_slot(const struct trust_spec *spec, size_t req)
{
	size_t n = 0;

	for (size_t i = 0; i < req; i++)
		n += trust_method_naux(spec->reqs[i].method);
	return n;
}

/*
 * @where text from outside in a record (lock, SBOM, manifest, `--json`):
 *   kept, escaped when it is not UTF-8 -- every evidence value
 */
void trust_ev_set(struct trust_ev *ev, const char *key, const char *value)
{
	for (size_t i = 0; i < ev->nfields; i++)
		if (!strcmp(ev->fields[i].key, key)) {
			free(ev->fields[i].value);
			ev->fields[i].value = text_record(value ? value : "");
			return;
		}
	ALLOC_GROW(ev->fields, ev->nfields + 1, ev->alloc_fields);
	ev->fields[ev->nfields].key = xstrdup(key);
	/* evidence is recorded (lock, SBOM, --json): kept escaped when it
	 * is not UTF-8, never dropped (lib/text.h text_record) */
	ev->fields[ev->nfields].value = text_record(value ? value : "");
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
	for (size_t k = 0; k + 1 < TRUST_AUX_MAX; k++) {
		free(ev->more[k].url);
		free(ev->more[k].text);
	}
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

void trust_lookup_ask(struct trust_lookup *lk, const char *url, const char *post_json,
		      size_t max, int no_redirect)
{
	struct trust_lookup_req *rq;

	lk->reqs = xrealloc(lk->reqs, (lk->nreqs + 1) * sizeof(*lk->reqs));
	rq = &lk->reqs[lk->nreqs++];
	memset(rq, 0, sizeof(*rq));
	rq->url = xstrdup(url);
	rq->post_json = post_json ? xstrdup(post_json) : NULL;
	rq->max = max;
	rq->no_redirect = no_redirect;
	buf_init(&rq->answer);
}

void trust_lookup_clear(struct trust_lookup *lk)
{
	for (size_t i = 0; i < lk->nreqs; i++) {
		free(lk->reqs[i].url);
		free(lk->reqs[i].post_json);
		buf_release(&lk->reqs[i].answer);
	}
	free(lk->reqs);
	lk->reqs = NULL;
	lk->nreqs = 0;
}

int trust_lookup_run(int (*step)(struct trust_lookup *lk, struct buf *out, struct wb_err *e),
		     const struct trust_req *r, const char *base, const char *sha256_hex,
		     const struct trust_http *http, struct buf *out, struct wb_err *e)
{
	struct trust_lookup lk;
	int ret;

	memset(&lk, 0, sizeof(lk));
	lk.req = r;
	lk.base = base;
	lk.sha256_hex = sha256_hex;
	while ((ret = step(&lk, out, e)) == 1) {
		for (size_t i = 0; i < lk.nreqs; i++) {
			struct trust_lookup_req *rq = &lk.reqs[i];

			if (http->request(http->ctx, rq->url, rq->post_json, rq->max,
					  rq->no_redirect, &rq->answer, &rq->status, &rq->err) < 0)
				break;
		}
		lk.round++;
	}
	trust_lookup_clear(&lk);
	return ret;
}
