#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "lib/buf.h"
#include "lib/json.h"
#include "trust/verify.h"

int verify_url_allowed(const struct trust_policy *policy, const char *url)
{
	if (policy && !policy->allow_http && !strncasecmp(url, "http://", 7))
		return 0;
	return 1;
}

int verify_plan(const struct trust_spec *v, const struct trust_policy *policy,
		const char *lock_sha256, int accept_new, struct verify_needs *needs,
		struct wb_err *e)
{
	int forbid = policy && policy->forbid_checksum_urls, forbidden = 0;
	unsigned m = 0, algs = 0;
	unsigned long long reqs = 0;

	memset(needs, 0, sizeof(*needs));
	if (lock_sha256 && v->sha256 && strcasecmp(lock_sha256, v->sha256))
		return wb_error(e, WB_EVERIFY,
				"artifact '%s': the lock file pins sha256 %s, but the recipe "
				"pins sha256 %s; a recipe pin always holds (run 'winbuild lock' "
				"to pin what the recipe says)", v->name, lock_sha256, v->sha256);
	if (v->nreqs > VERIFY_MAX_REQS)
		return wb_error(e, WB_EUSAGE, "artifact '%s' has more than %d verification "
				"requirements", v->name, VERIFY_MAX_REQS);
	if (v->needs_pin) {
		/* Only a lock pin verifies it; other methods still apply. */
		if (lock_sha256)
			m |= VERIFY_LOCK_PIN;
		else if (accept_new)
			m |= VERIFY_ACCEPTED_NEW;
		else
			return wb_error(e, WB_EUSAGE,
					"artifact '%s' cannot be verified: %s; pin it with "
					"'winbuild lock --accept-new' and review the lock",
					v->name, v->needs_pin);
	} else if (lock_sha256) {
		m |= VERIFY_LOCK_PIN;
	}
	if (v->sha256)
		m |= VERIFY_PINNED_SHA256;
	if (v->sha512)
		m |= VERIFY_PINNED_SHA512;
	for (size_t i = 0; i < v->nreqs; i++) {
		const struct trust_method *tm = v->reqs[i].method;

		if (forbid && (tm->flags & TRUST_CHECKSUM)) {
			forbidden = 1;
			continue;
		}
		reqs |= 1ULL << i;
		algs |= tm->digest_algs;
		m |= VERIFY_REQS;
		if (tm->flags & TRUST_SIGNATURE)
			m |= VERIFY_SIGNATURE;
	}

	if (policy && policy->require_signature && !(m & VERIFY_SIGNATURE))
		return wb_error(e, WB_EVERIFY,
				"artifact '%s' has no minisign signature from a pinned key, "
				"and policy requires one (policy.require: signature)",
				v->name);
	if (!m) {
		if (forbidden)
			return wb_error(e, WB_EVERIFY,
					"artifact '%s' is verified only by a checksum file, "
					"and policy forbids checksum files (policy.checksum_urls: forbid)",
					v->name);
		return wb_error(e, WB_EUSAGE, "artifact '%s' has no verification method",
				v->name);
	}
	needs->methods = m;
	needs->reqs = reqs;
	/* SHA-256 (the cache key) and what a pin or a method checks, nothing
	 * else: the SBOM records only these (issue 19) */
	needs->digest_algs = DIGEST_SHA256 | (v->sha512 ? DIGEST_SHA512 : 0) |
			     (v->sha1 ? DIGEST_SHA1 : 0) | algs;
	return 0;
}

const char *verify_pinned_sha256(const struct trust_spec *v, const char *lock_sha256)
{
	return v->sha256 ? v->sha256 : lock_sha256;
}

static int pin_holds(const struct trust_spec *v, const char *where, const char *what,
		     const char *hex, const unsigned char *actual, size_t len,
		     struct wb_err *e)
{
	unsigned char want[64];
	char ah[129];

	if (digest_unhex(hex, want, len) < 0)
		return wb_error(e, WB_EUSAGE, "artifact '%s': %s '%s' is not a valid digest",
				v->name, what, hex);
	if (!actual)
		return wb_error(e, WB_EIO, "artifact '%s': %s was not computed", v->name,
				len == 64 ? "sha512" : len == 20 ? "sha1" : "sha256");
	if (digest_equal(want, actual, len))
		return 0;
	digest_hex(actual, len, ah);
	return wb_error(e, WB_EVERIFY,
			"artifact '%s' from '%s' did not verify: %s mismatch\n"
			"  expected %s\n  actual   %s", v->name, where, what, hex, ah);
}

/*
 * @where Windows updates (`windows.updates`; docs/updates.md) -- the
 *   Catalog's SHA-1 pin `trust_spec.sha1`
 * @where where pins decide which bytes are used (download, cache ref, cache
 *   digest, lock)
 */
int verify_pins(const struct trust_spec *v, const char *lock_sha256,
		const char *where, const unsigned char sha256[32],
		const unsigned char *sha512, const unsigned char *sha1, struct wb_err *e)
{
	if (lock_sha256 && pin_holds(v, where, "sha256 (pinned in the lock file)",
				     lock_sha256, sha256, 32, e) < 0)
		return -1;
	if (v->sha256 && pin_holds(v, where, "sha256 (pinned in the recipe)", v->sha256,
				   sha256, 32, e) < 0)
		return -1;
	if (v->sha512 && pin_holds(v, where, "sha512 (pinned in the recipe)", v->sha512,
				   sha512, 64, e) < 0)
		return -1;
	/* a Windows update's Catalog file name names its SHA-1 (docs/updates.md) */
	if (v->sha1 && pin_holds(v, where, "sha1 (from the Update Catalog's file name)",
				 v->sha1, sha1, 20, e) < 0)
		return -1;
	return 0;
}

/* "" for an artifact's own requirement; "signature required by FILE:L:C: "
 * for one from a layer above it. */
static void which_of(const struct trust_req *r, char *out, size_t len)
{
	char where[400];

	if (!r->layered) {
		out[0] = '\0';
		return;
	}
	wb_origin_format(&r->origin, where, sizeof(where));
	snprintf(out, len, "%s required by %s: ", r->method->what, where);
}

/*
 * @where the verdict: pins, every requirement by its method, lock pins,
 *   `require: signature`
 */
int verify_artifact(const struct verify_input *in, struct verify_evidence *ev,
		    struct wb_err *e)
{
	const struct trust_spec *v = in->spec;
	unsigned m = in->needs->methods;
	struct trust_subject s;
	int ret = 0;

	memset(ev, 0, sizeof(*ev));
	if (!verify_url_allowed(in->policy, in->url))
		return wb_error(e, WB_EVERIFY,
				"artifact '%s': '%s' is plain http, and policy forbids it "
				"(policy.allow_http: false)", v->name, in->url);
	if ((m & VERIFY_PINNED_SHA512) && !(in->dr->algs & DIGEST_SHA512))
		return wb_error(e, WB_EIO, "artifact '%s': sha512 was not computed", v->name);
	for (size_t i = 0; i < v->nreqs; i++) {
		unsigned need = v->reqs[i].method->digest_algs;

		if ((in->needs->reqs & (1ULL << i)) && (in->dr->algs & need) != need)
			return wb_error(e, WB_EIO, "artifact '%s': the digests %s needs were "
					"not computed", v->name, v->reqs[i].method->name);
	}

	/* the pins, every one of them, whatever else verifies the bytes */
	ret = verify_pins(v, (m & VERIFY_LOCK_PIN) ? in->lock_sha256 : NULL, in->url,
			  in->dr->sha256,
			  (in->dr->algs & DIGEST_SHA512) ? in->dr->sha512 : NULL,
			  (in->dr->algs & DIGEST_SHA1) ? in->dr->sha1 : NULL, e);
	if (ret)
		return -1;
	s.name = v->name;
	s.filename = v->filename;
	s.url = in->url;
	s.data_path = in->data_path;
	s.dr = in->dr;
	s.roots = in->roots;
	s.tlog_threshold = in->policy ? in->policy->tlog_threshold : 0;
	ev->v = xcalloc(v->nreqs ? v->nreqs : 1, sizeof(*ev->v));
	for (size_t i = 0; i < v->nreqs; i++) {
		const struct trust_req *r = &v->reqs[i];
		const struct trust_aux *aux = &in->aux[trust_spec_slot(v, i)];
		struct trust_ev *x = &ev->v[ev->nr];
		char which[512];

		if (!(in->needs->reqs & (1ULL << i)))
			continue;
		which_of(r, which, sizeof(which));
		x->method = r->method;
		x->req = i;
		ev->nr++;
		if (r->method->check(r, &s, aux, which, x, e) < 0) {
			verify_evidence_release(ev);
			return -1;
		}
		x->url = aux->url ? xstrdup(aux->url) : NULL;
		/* every method's file is kept (a cache hit checks it again:
		 * evidence is only ever what was verified in the run) */
		if (aux->text) {
			x->text = xmemdupz(aux->text, aux->len);   /* a NUL too */
			x->len = aux->len;
		}
		/* the further files, unless the check kept its own choice */
		for (size_t k = 1; k < trust_method_naux(r->method); k++) {
			struct trust_evfile *f = &x->more[k - 1];

			if (f->text || !aux[k].text)
				continue;
			free(f->url);
			f->url = aux[k].url ? xstrdup(aux[k].url) : NULL;
			f->text = xmemdupz(aux[k].text, aux[k].len);
			f->len = aux[k].len;
		}
	}
	ev->methods = m;
	return 0;
}

void verify_evidence_release(struct verify_evidence *ev)
{
	for (size_t i = 0; i < ev->nr; i++)
		trust_ev_release(&ev->v[i]);
	free(ev->v);
	memset(ev, 0, sizeof(*ev));
}

/* The first evidence entry of method M in EV, or NULL. */
static const struct trust_ev *first_of(const struct verify_evidence *ev,
				       const struct trust_method *m)
{
	for (size_t i = 0; i < ev->nr; i++)
		if (ev->v[i].method == m)
			return &ev->v[i];
	return NULL;
}

/* The first evidence entry that only names a URL (a checksum file). */
static const struct trust_ev *first_url_only(const struct verify_evidence *ev)
{
	for (size_t i = 0; i < ev->nr; i++)
		if (!ev->v[i].method->url_key)
			return &ev->v[i];
	return NULL;
}

char *verify_evidence_describe(const struct verify_evidence *ev)
{
	struct buf b = BUF_INIT;
	const struct trust_ev *c;
	const char *sep = "";

	for (size_t i = 0; i < ev->nr; i++) {
		const struct trust_ev *x = &ev->v[i];

		if (!(x->method->flags & TRUST_SIGNATURE))
			continue;
		buf_adds(&b, sep);
		if (first_of(ev, x->method) != x)
			buf_adds(&b, "and ");
		x->method->describe_ev(x, &b);
		sep = "; ";
	}
	if ((c = first_url_only(ev))) {
		buf_adds(&b, sep);
		c->method->describe_ev(c, &b);
		sep = "; ";
	}
	if (ev->methods & (VERIFY_PINNED_SHA256 | VERIFY_PINNED_SHA512)) {
		buf_addf(&b, "%spinned %s", sep,
			 ev->methods & VERIFY_PINNED_SHA256 ? "sha256" : "sha512");
		sep = "; ";
	}
	if (ev->methods & VERIFY_LOCK_PIN) {
		buf_addf(&b, "%slock pin", sep);
		sep = "; ";
	}
	if (ev->methods & VERIFY_ACCEPTED_NEW)
		buf_addf(&b, "%saccepted as new (trust on first use)", sep);
	return buf_detach(&b, NULL);
}

/*
 * @where evidence as the lock, the cache ref, `fetch --json` and the SBOM
 *   record it
 */
char *verify_evidence_methods(const struct verify_evidence *ev)
{
	struct buf b = BUF_INIT;

	for (size_t t = 0; trust_methods[t]; t++)
		if (first_of(ev, trust_methods[t]))
			buf_addf(&b, "%s%s", b.len ? ", " : "", trust_methods[t]->shown);
	if (ev->methods & VERIFY_PINNED_SHA256)
		buf_addf(&b, "%spinned sha256", b.len ? ", " : "");
	if (ev->methods & VERIFY_PINNED_SHA512)
		buf_addf(&b, "%spinned sha512", b.len ? ", " : "");
	if (ev->methods & VERIFY_ACCEPTED_NEW)
		buf_addf(&b, "%strusted on first use", b.len ? ", " : "");
	return buf_detach(&b, NULL);
}

const struct trust_ev *verify_evidence_signer(const struct verify_evidence *ev)
{
	for (size_t i = 0; i < ev->nr; i++)
		if (ev->v[i].method->flags & TRUST_SIGNATURE)
			return &ev->v[i];
	return NULL;
}

char *verify_evidence_also(const struct verify_evidence *ev)
{
	const struct trust_ev *first = verify_evidence_signer(ev);
	struct buf b = BUF_INIT;

	for (size_t i = 0; first && i < ev->nr; i++) {
		const struct trust_ev *x = &ev->v[i];

		if (x == first || !(x->method->flags & TRUST_SIGNATURE) || !x->method->signer)
			continue;
		if (b.len)
			buf_adds(&b, "; ");
		x->method->signer(x, &b);
	}
	return b.len ? buf_detach(&b, NULL) : (buf_release(&b), NULL);
}

static json_t *fields_json(const struct trust_ev *x)
{
	json_t *o = json_object();

	for (size_t i = 0; i < x->nfields; i++)
		json_object_set_new(o, x->fields[i].key, json_string(x->fields[i].value));
	return o;
}

/* The lock's record of X's further files: each one's URL under its
 * lock_key, and a TRUST_AUX_LOCK_JSON file itself ("tlog_entry_url" ->
 * "tlog_entry": the Rekor API's JSON). */
static void lock_more(const struct trust_ev *x, json_t *f)
{
	for (size_t k = 1; k < trust_method_naux(x->method); k++) {
		struct trust_aux_def d = trust_method_aux(x->method, k);
		const struct trust_evfile *m = &x->more[k - 1];
		size_t n = d.lock_key ? strlen(d.lock_key) : 0;

		if (!d.lock_key)
			continue;
		if (m->url)
			json_object_set_new(f, d.lock_key, json_string(m->url));
		if ((d.flags & TRUST_AUX_LOCK_JSON) && m->text && n > 4 &&
		    !strcmp(d.lock_key + n - 4, "_url")) {
			json_t *doc = json_loadb(m->text, m->len, 0, NULL);
			char key[64];

			snprintf(key, sizeof(key), "%.*s", (int)(n - 4), d.lock_key);
			if (doc)
				json_object_set_new(f, key, doc);
		}
	}
}

/*
 * @where evidence as the lock, the cache ref, `fetch --json` and the SBOM
 *   record it
 */
json_t *verify_evidence_lock_json(const struct verify_evidence *ev)
{
	json_t *o = json_object(), *pins = json_array();
	const struct trust_ev *c = first_url_only(ev);

	for (size_t t = 0; trust_methods[t]; t++) {
		const struct trust_method *tm = trust_methods[t];
		const struct trust_ev *first = first_of(ev, tm);
		json_t *also = json_array();
		char name[128];

		if (!first || !tm->url_key) {
			json_decref(also);
			continue;
		}
		for (size_t i = 0; i < ev->nr; i++) {
			const struct trust_ev *x = &ev->v[i];
			json_t *f;

			if (x->method != tm)
				continue;
			f = fields_json(x);
			if (x->url)
				json_object_set_new(f, tm->url_key, json_string(x->url));
			lock_more(x, f);
			if (x == first)
				json_object_set_new(o, tm->name, f);
			else
				json_array_append_new(also, f);
		}
		snprintf(name, sizeof(name), "%s_also", tm->name);
		if (json_array_size(also))
			json_object_set_new(o, name, also);
		else
			json_decref(also);
	}
	if (c && c->url)
		json_object_set_new(o, "checksum_url", json_url(c->url));
	if (ev->methods & VERIFY_PINNED_SHA256)
		json_array_append_new(pins, json_string("sha256"));
	if (ev->methods & VERIFY_PINNED_SHA512)
		json_array_append_new(pins, json_string("sha512"));
	if (json_array_size(pins))
		json_object_set_new(o, "pinned", pins);
	else
		json_decref(pins);
	if (ev->methods & VERIFY_LOCK_PIN)
		json_object_set_new(o, "lock_pin", json_true());
	if (ev->methods & VERIFY_ACCEPTED_NEW)
		json_object_set_new(o, "accepted_new", json_true());
	return o;
}

/*
 * @where evidence as the lock, the cache ref, `fetch --json` and the SBOM
 *   record it
 */
json_t *verify_evidence_to_json(const struct verify_evidence *ev)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < ev->nr; i++) {
		const struct trust_ev *x = &ev->v[i];
		json_t *o = json_object();

		json_object_set_new(o, "method", json_string(x->method->name));
		if (x->url)
			json_object_set_new(o, "url", json_url(x->url));
		if (x->text)
			json_object_set_new(o, "text", json_bytes(x->text, x->len));
		if (trust_method_naux(x->method) > 1) {
			json_t *more = json_array();

			for (size_t k = 1; k < trust_method_naux(x->method); k++) {
				const struct trust_evfile *m = &x->more[k - 1];

				json_array_append_new(more, json_pack("{s:o, s:o}",
					"url", m->url ? json_url(m->url) : json_null(),
					"text", m->text ? json_bytes(m->text, m->len) :
							  json_null()));
			}
			json_object_set_new(o, "more", more);
		}
		json_object_set_new(o, "fields", fields_json(x));
		json_array_append_new(arr, o);
	}
	return arr;
}

int verify_evidence_from_json(const struct trust_spec *spec,
			      const struct verify_needs *needs, json_t *arr,
			      struct verify_evidence *ev)
{
	size_t k = 0;

	memset(ev, 0, sizeof(*ev));
	if (!json_is_array(arr))
		return -1;
	ev->v = xcalloc(spec->nreqs ? spec->nreqs : 1, sizeof(*ev->v));
	for (size_t i = 0; i < spec->nreqs; i++) {
		json_t *o, *f, *val;
		struct trust_ev *x;
		const char *key, *name;

		if (!(needs->reqs & (1ULL << i)))
			continue;
		o = json_array_get(arr, k++);
		name = json_string_value(json_object_get(o, "method"));
		if (!name || strcmp(name, spec->reqs[i].method->name))
			goto bad;
		x = &ev->v[ev->nr++];
		x->method = spec->reqs[i].method;
		x->req = i;
		if (json_string_value(json_object_get(o, "url")))
			x->url = xstrdup(json_string_value(json_object_get(o, "url")));
		if ((val = json_object_get(o, "text")))
			x->text = json_bytes_get(val, &x->len);
		for (size_t f_i = 1; f_i < trust_method_naux(x->method); f_i++) {
			json_t *m = json_array_get(json_object_get(o, "more"), f_i - 1);
			struct trust_evfile *mf = &x->more[f_i - 1];

			if (json_string_value(json_object_get(m, "url")))
				mf->url = xstrdup(json_string_value(json_object_get(m, "url")));
			if ((val = json_object_get(m, "text")))
				mf->text = json_bytes_get(val, &mf->len);
		}
		f = json_object_get(o, "fields");
		json_object_foreach(f, key, val)
			if (json_is_string(val))
				trust_ev_set(x, key, json_string_value(val));
	}
	if (k != json_array_size(arr))
		goto bad;
	ev->methods = needs->methods;
	return 0;
bad:
	verify_evidence_release(ev);
	return -1;
}
