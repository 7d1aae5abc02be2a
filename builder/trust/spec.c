/* trust/spec.h: the verify spec's lifetime and comparisons. */
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "trust/spec.h"

struct trust_req *trust_spec_add(struct trust_spec *s, const struct trust_method *method,
				 const struct wb_origin *origin)
{
	struct trust_req *r;

	ALLOC_GROW(s->reqs, s->nreqs + 1, s->alloc_reqs);
	r = &s->reqs[s->nreqs++];
	memset(r, 0, sizeof(*r));
	r->method = method;
	if (origin)
		r->origin = *origin;
	return r;
}

const char *trust_req_param(const struct trust_req *r, const char *key,
			    const struct wb_origin **origin)
{
	for (size_t i = 0; i < r->nparams; i++)
		if (!strcmp(r->params[i].key, key)) {
			if (origin)
				*origin = &r->params[i].origin;
			return r->params[i].value;
		}
	return NULL;
}

void trust_req_set_param(struct trust_req *r, const char *key, const char *value,
			 int file, const struct wb_origin *origin)
{
	struct trust_param *p;

	ALLOC_GROW(r->params, r->nparams + 1, r->alloc_params);
	p = &r->params[r->nparams++];
	p->key = xstrdup(key);
	p->value = xstrdup(value);
	p->file = file;
	memset(&p->origin, 0, sizeof(p->origin));
	if (origin)
		p->origin = *origin;
}

/* The same keys with the same flags: a site's key listed by a component
 * with file_check off or legacy allowed is another, looser requirement,
 * never the same one (so the site's is kept and ANDed, issue 25). */
static int same_keys(const struct trust_req *a, const struct trust_req *b)
{
	if (a->nkeys != b->nkeys)
		return 0;
	for (size_t i = 0; i < a->nkeys; i++) {
		const struct minisign_pubkey *ka = &a->keys[i].pk;
		size_t j = 0;

		while (j < b->nkeys && (strcmp(a->keys[i].text, b->keys[j].text) ||
					ka->allow_legacy != b->keys[j].pk.allow_legacy ||
					ka->file_check != b->keys[j].pk.file_check))
			j++;
		if (j == b->nkeys)
			return 0;
	}
	return 1;
}

const struct wb_strlist *trust_req_urls(const struct trust_req *r, size_t k)
{
	return k ? &r->more[k - 1] : &r->urls;
}

struct wb_strlist *trust_req_urls_mut(struct trust_req *r, size_t k)
{
	return k ? &r->more[k - 1] : &r->urls;
}

int trust_req_same(const struct trust_req *a, const struct trust_req *b)
{
	if (a->method != b->method || a->nparams != b->nparams || !same_keys(a, b) ||
	    !wb_strlist_equal(&a->lookup, &b->lookup))
		return 0;
	for (size_t k = 0; k < TRUST_AUX_MAX; k++)
		if (!wb_strlist_equal(trust_req_urls(a, k), trust_req_urls(b, k)))
			return 0;
	for (size_t i = 0; i < a->nparams; i++) {
		const char *v = trust_req_param(b, a->params[i].key, NULL);
		if (!v || strcmp(v, a->params[i].value))
			return 0;
	}
	return 1;
}

void trust_req_release(struct trust_req *r)
{
	wb_strlist_release(&r->urls);
	for (size_t k = 0; k + 1 < TRUST_AUX_MAX; k++)
		wb_strlist_release(&r->more[k]);
	wb_strlist_release(&r->lookup);
	for (size_t i = 0; i < r->nkeys; i++) {
		free(r->keys[i].name);
		free(r->keys[i].text);
		free(r->keys[i].key_file);
	}
	free(r->keys);
	for (size_t i = 0; i < r->nparams; i++) {
		free(r->params[i].key);
		free(r->params[i].value);
	}
	free(r->params);
	memset(r, 0, sizeof(*r));
}

void trust_authsets_release(struct trust_authset *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].roots);
		wb_strlist_release(&v[i].publishers);
	}
	free(v);
}

void trust_spec_release(struct trust_spec *s)
{
	free(s->sha256);
	free(s->sha512);
	free(s->sha1);
	free(s->source);
	free(s->needs_pin);
	for (size_t i = 0; i < s->nreqs; i++)
		trust_req_release(&s->reqs[i]);
	free(s->reqs);
	memset(s, 0, sizeof(*s));
}
