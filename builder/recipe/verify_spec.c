/*
 * An artifact's `verify:` map and every layer's top-level `signatures:`
 * into its trust spec (trust/spec.h): pins, checksum URLs, minisign keys,
 * each method of the table by its declared settings, `since`, and the
 * exported transparency-log entry.
 *
 * @where what the shipped recipes verify per component (Kubernetes: cosign +
 *   `.sha256`; containerd: attestation + `.sha256sum`) -- `verify:` in
 *   `recipes/components/kubernetes.yaml` and
 *   `recipes/components/containerd.yaml` (provenance comments at their top)
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/hex.h"
#include "recipe/resolve_int.h"
#include "recipe/schema.h"
#include "trust/method.h"

static int load_key(struct resolver *r, const struct rnode *km, const char *name,
		    struct trust_key *k)
{
	const struct rnode *kt = rnode_get(km, "key"), *kf = rnode_get(km, "key_file");
	const struct rnode *al = rnode_get(km, "allow_legacy"), *fc = rnode_get(km, "file_check");
	struct buf text = BUF_INIT;
	struct wb_err ke = WB_ERR_INIT;

	memset(k, 0, sizeof(*k));
	k->origin = km->origin;
	k->name = name ? xstrdup(name) : NULL;
	if ((kt && kf) || (!kt && !kf))
		return err_at(r, &km->origin, "a minisign key needs exactly one of 'key' or 'key_file'");
	if (kt) {
		buf_adds(&text, kt->scalar);
		k->origin = kt->origin;
	} else {
		k->key_file = rs_relative_to(kf->origin.file, kf->scalar);
		k->origin = kf->origin;
		if (fs_read_file(k->key_file, 4096, WB_EUSAGE, &text, &ke)) {
			buf_release(&text);
			return err_at(r, &kf->origin, "key_file: %s", ke.msg);
		}
	}
	if (minisign_pubkey_parse(text.ptr, text.len, &k->pk, &ke)) {
		buf_release(&text);
		return err_at(r, &k->origin, "bad minisign public key%s%s%s: %s",
			      name ? " '" : "", name ? name : "", name ? "'" : "", ke.msg);
	}
	/* keep the bare base64 line */
	{
		char *s = text.ptr, *line = NULL;
		for (char *t = strtok(s, "\r\n"); t; t = strtok(NULL, "\r\n"))
			if (strncmp(t, "untrusted comment:", 18))
				line = t;
		k->text = xstrdup(line ? line : "");
		while (*k->text && isspace((unsigned char)k->text[strlen(k->text) - 1]))
			k->text[strlen(k->text) - 1] = '\0';
	}
	buf_release(&text);
	k->pk.allow_legacy = al ? schema_bool(al) : 0;
	k->pk.file_check = fc ? schema_bool(fc) : 1;
	minisign_keyid_hex(k->pk.keyid, k->keyid_hex);
	return 0;
}

/* The key named NAME as layer UPTO saw it: that layer's `keys:` or an
 * earlier one's (so a later layer cannot swap the key behind a name an
 * override relies on); UPTO == r->nlayers: the merged `keys:`. */
static const struct rnode *named_key(const struct resolver *r, const char *name,
				     size_t upto)
{
	if (upto >= r->nlayers)
		return rnode_get(rnode_get(r->top, "keys"), name);
	for (size_t i = upto + 1; i-- > 0; ) {
		const struct rnode *km = rnode_get(r->layers[i].keys, name);
		if (km)
			return km;
	}
	return NULL;
}

/* Append the keys of LIST to KEYS (names resolved as layer UPTO saw them). */
static int add_keys(struct resolver *r, const struct rnode *list, size_t upto,
		    struct trust_key **keys, size_t *nkeys, size_t *alloc_keys)
{
	for (size_t i = 0; list && i < list->nr; i++) {
		const struct rnode *it = list->items[i];
		struct trust_key k;

		if (it->type == RNODE_SCALAR) {
			const struct rnode *km = named_key(r, it->scalar, upto);
			if (!km)
				return err_at(r, &it->origin,
					      "unknown key name '%s' (define it under 'keys:')",
					      it->scalar);
			if (load_key(r, km, it->scalar, &k))
				return -1;
			k.origin = it->origin;
		} else if (load_key(r, it, NULL, &k)) {
			return -1;
		}
		for (size_t j = 0; j < *nkeys; j++) {
			if (strcmp((*keys)[j].keyid_hex, k.keyid_hex))
				continue;
			int differ = strcmp((*keys)[j].text, k.text) != 0;

			if (differ)
				err_at(r, &it->origin,
				       "two different minisign keys share the key id %s",
				       k.keyid_hex);
			free(k.name);
			free(k.text);
			free(k.key_file);
			if (differ)
				return -1;
			k.text = NULL;
			break;
		}
		if (!k.text)
			continue;
		ALLOC_GROW(*keys, *nkeys + 1, *alloc_keys);
		(*keys)[(*nkeys)++] = k;
	}
	return 0;
}

/* The auxiliary file URLs of A from map N (`verify.minisign`,
 * `signatures`, `verify.<method>`): UN, default DEF ("${url}.minisig"),
 * expanded and mirrored. */
static int aux_urls(struct resolver *r, const struct rnode *n,
		    const struct rnode *un, const char *deftmpl, const struct vars *vs,
		    struct plan_artifact *a, const char *what, const char *noun,
		    struct wb_strlist *out)
{
	struct rnode *def = NULL;
	const struct wb_origin *o = &n->origin;
	char *u;
	int ret;

	if (!un && !deftmpl)
		return err_at(r, &n->origin, "'%s' is required", what);
	if (!un)
		un = def = rnode_new_scalar(deftmpl, &n->origin);
	u = vars_expand(r, vs, un, what);
	rnode_free(def);
	if (!u)
		return -1;
	ret = urls_check(r, u, o, what) ||
	      urls_layout_check(r, u, o, what) ||
	      urls_apply_mirrors(r, u, o, noun, !a->replaced, out) ? -1 : 0;
	free(u);
	return ret;
}

static int signature_urls(struct resolver *r, const struct rnode *n,
			  const struct rnode *un, const struct vars *vs,
			  struct plan_artifact *a, const char *what,
			  struct wb_strlist *out)
{
	return aux_urls(r, n, un, trust_m_minisign.default_url, vs, a, what,
			"signature URL", out);
}

/* `verify.<method>.since` of a requirement at ORIGIN: kept on A until the
 * versions are final (versions_since_met).
 * @where containerd 1.x, which publishes no build provenance: a plan-time
 *   error (a requirement's `since`) -- `verify.attestation.since` in
 *   `recipes/components/containerd.yaml`; the error names
 *   `overrides/containerd-1.7.yaml`
 */
static int convert_since(struct resolver *r, const struct rnode *n, const struct vars *vs,
			 struct plan_artifact *a, const struct trust_method *m,
			 const struct wb_origin *origin, const char *ctx)
{
	static const char *const keys[] = { "version", "missing", "instead" };
	char *v[3] = { NULL, NULL, NULL }, what[256];
	struct plan_since *ps;
	long maj, min;

	for (size_t i = 0; i < 3; i++) {
		const struct rnode *kn = rnode_get(n, keys[i]);

		snprintf(what, sizeof(what), "%s.verify.%s.since.%s", ctx, m->name, keys[i]);
		if (kn && !(v[i] = vars_expand(r, vs, kn, what)))
			goto fail;
		if (!i && versions_major_minor(v[0], &maj, &min)) {
			err_at(r, &kn->origin, "%s: '%s' is not a version (MAJOR.MINOR...)",
			       what, v[0]);
			goto fail;
		}
	}
	ALLOC_GROW(a->since, a->nsince + 1, a->alloc_since);
	ps = &a->since[a->nsince++];
	ps->method = m->name;
	ps->version = v[0];
	ps->missing = v[1];
	ps->instead = v[2];
	ps->req_origin = *origin;
	return 0;
fail:
	for (size_t i = 0; i < 3; i++)
		free(v[i]);
	return -1;
}

/* `verify.<name>` of a method of the table that declares its recipe
 * settings (trust/method.h): its file's URLs and its params. */
/*
 * `components.<n>.tlog_source: exported` (one line in any layer): each
 * transparency-log lookup of the component's artifacts (cosign's `rekor`)
 * is replaced by the entry `winbuild mirror` exported beside the artifact
 * (the method's aux file "${url}<suffix>", mirror rules applied), whatever
 * the artifact's own map says about the log's URL. The entry is checked
 * exactly as a lookup's answer is, so the switch never loosens trust. An
 * artifact that names its own entry keeps it; one that asks no log
 * (cosign's `tlog: none`) is left alone.
 */
static int exported_entry(struct resolver *r, const struct rnode *n,
			  const struct trust_method *m, struct trust_req *q,
			  const struct vars *vs, struct plan_artifact *a, const char *ctx)
{
	struct trust_aux_def d;
	char tmpl[64], what[256];

	if (!r->tlog_exported || !m->lookup_param || trust_req_urls(q, m->lookup_aux)->nr ||
	    (m->lookup_wanted && !m->lookup_wanted(q)))
		return 0;
	d = trust_method_aux(m, m->lookup_aux);
	snprintf(tmpl, sizeof(tmpl), "${url}%s", d.suffix);
	snprintf(what, sizeof(what), "%s.verify.%s.%s (tlog_source: exported)", ctx, m->name,
		 d.param);
	return aux_urls(r, n, NULL, tmpl, vs, a, what, "signature URL",
			trust_req_urls_mut(q, m->lookup_aux));
}

static int convert_method(struct resolver *r, const struct trust_method *m,
			  const struct rnode *n, const struct vars *vs,
			  struct plan_artifact *a, const char *ctx)
{
	struct trust_req *q = trust_spec_add(&a->verify, m, &n->origin);
	struct wb_err me = WB_ERR_INIT;
	char what[256], noun[64];
	const struct rnode *ln;
	int preferred = 0;

	/* a file that, once named, is the requirement's only one (cosign's
	 * bundle): the others are neither fetched nor looked up */
	for (size_t k = 0; k < trust_method_naux(m); k++)
		if ((trust_method_aux(m, k).flags & TRUST_AUX_PREFERRED) &&
		    rnode_get(n, trust_method_aux(m, k).param))
			preferred = 1;
	for (size_t k = 0; k < trust_method_naux(m); k++) {
		struct trust_aux_def d = trust_method_aux(m, k);
		const struct rnode *un = d.param ? rnode_get(n, d.param) : NULL;

		if (preferred && !(d.flags & TRUST_AUX_PREFERRED))
			continue;
		/* an optional file without a URL (an embedded signature's slot
		 * has no recipe key at all: trust/m_authenticode.c) */
		if (!un && !d.default_url && (d.flags & TRUST_AUX_OPTIONAL))
			continue;
		snprintf(what, sizeof(what), "%s.verify.%s.%s", ctx, m->name, d.param);
		if (aux_urls(r, n, un, d.default_url, vs, a, what, "signature URL",
			     trust_req_urls_mut(q, k)))
			return -1;
	}
	for (size_t i = 0; m->params[i].name; i++) {
		const struct rnode *pn = rnode_get(n, m->params[i].name);
		char *v;

		if (!pn)
			continue;
		snprintf(what, sizeof(what), "%s.verify.%s.%s", ctx, m->name, m->params[i].name);
		if (!(v = vars_expand(r, vs, pn, what)))
			return -1;
		if (m->params[i].file) {
			char *path = rs_relative_to(pn->origin.file, v);
			free(v);
			v = path;
			if (!fs_exists(v)) {
				err_at(r, &pn->origin, "%s: file '%s' does not exist", what, v);
				free(v);
				return -1;
			}
		}
		trust_req_set_param(q, m->params[i].name, v, m->params[i].file, &pn->origin);
		free(v);
	}
	if ((ln = rnode_get(n, "since")) && convert_since(r, ln, vs, a, m, &n->origin, ctx))
		return -1;
	if (exported_entry(r, n, m, q, vs, a, ctx))
		return -1;
	if (m->validate && m->validate(q, &me) < 0)
		return err_at(r, &n->origin, "%s.verify.%s: %s", ctx, m->name, me.msg);
	if (m->warning && m->warning(q))
		rs_warn_at(r->plan, &n->origin, "%s.verify.%s: %s", ctx, m->name, m->warning(q));
	if (!m->lookup_param || preferred)
		return 0;
	/* the lookup after the download (a Rekor search): its base URL obeys
	 * the mirror rules like any URL, so mirror_only without a rule for it
	 * is an error here, never a connection to the internet at fetch time */
	ln = r->tlog_exported ? NULL : rnode_get(n, m->lookup_param);
	if (ln && trust_req_urls(q, m->lookup_aux)->nr)
		return err_at(r, &ln->origin, "%s.verify.%s: give either '%s' or '%s', not both",
			      ctx, m->name, m->lookup_param,
			      trust_method_aux(m, m->lookup_aux).param);
	if (m->lookup_wanted && !m->lookup_wanted(q)) {
		if (ln)
			return err_at(r, &ln->origin, "%s.verify.%s: '%s' is never asked with "
				      "this setting (no transparency log)", ctx, m->name,
				      m->lookup_param);
		return 0;
	}
	if (trust_req_urls(q, m->lookup_aux)->nr)
		return 0;
	snprintf(what, sizeof(what), "%s.verify.%s.%s", ctx, m->name, m->lookup_param);
	snprintf(noun, sizeof(noun), "%s URL", m->lookup_param);   /* "rekor URL" */
	return aux_urls(r, n, ln, m->lookup_default, vs, a, what, noun, &q->lookup);
}

int verify_spec_convert(struct resolver *r, const struct rnode *vn,
		   const struct vars *vs, struct plan_artifact *a,
		   const char *ctx)
{
	struct trust_spec *v = &a->verify;
	const struct rnode *n;
	char what[256];

	v->origin = vn->origin;
	if ((n = rnode_get(vn, "sha256"))) {
		v->sha256 = rs_lower(xstrdup(n->scalar));
		v->sha256_origin = n->origin;
		if (!hex_is(v->sha256, 64, HEX_ANY_CASE))
			return err_at(r, &n->origin, "'%s.verify.sha256' must be 64 hex digits", ctx);
	}
	if ((n = rnode_get(vn, "sha512"))) {
		v->sha512 = rs_lower(xstrdup(n->scalar));
		v->sha512_origin = n->origin;
		if (!hex_is(v->sha512, 128, HEX_ANY_CASE))
			return err_at(r, &n->origin, "'%s.verify.sha512' must be 128 hex digits", ctx);
	}
	if ((n = rnode_get(vn, "source")))
		v->source = xstrdup(n->scalar);
	if ((n = rnode_get(vn, "needs_pin")))
		v->needs_pin = xstrdup(n->scalar);
	for (int alg = 0; alg < 2; alg++) {
		const char *key = alg ? "sha512_url" : "sha256_url";
		struct trust_req *q;
		char *u;

		if (!(n = rnode_get(vn, key)))
			continue;
		snprintf(what, sizeof(what), "%s.verify.%s", ctx, key);
		if (!(u = vars_expand(r, vs, n, what)))
			return -1;
		q = trust_spec_add(v, trust_method_find(key), &n->origin);
		if (urls_check(r, u, &n->origin, what) ||
		    urls_layout_check(r, u, &n->origin, what) ||
		    urls_apply_mirrors(r, u, &n->origin, "checksum URL", !a->replaced, &q->urls)) {
			free(u);
			return -1;
		}
		free(u);
	}
	if ((n = rnode_get(vn, "minisign"))) {
		struct trust_req *q = trust_spec_add(v, &trust_m_minisign, &n->origin);

		snprintf(what, sizeof(what), "%s.verify.minisign.url", ctx);
		if (signature_urls(r, n, rnode_get(n, "url"), vs, a, what, &q->urls) ||
		    add_keys(r, rnode_get(n, "keys"), r->nlayers, &q->keys,
			     &q->nkeys, &q->alloc_keys))
			return -1;
	}
	for (size_t t = 0; trust_methods[t]; t++)
		if (trust_methods[t]->params && (n = rnode_get(vn, trust_methods[t]->name)) &&
		    convert_method(r, trust_methods[t], n, vs, a, ctx))
			return -1;
	return 0;
}

/* The artifact's first requirement of method M, or NULL. */
static struct trust_req *first_req(struct trust_spec *v, const struct trust_method *m)
{
	for (size_t i = 0; i < v->nreqs; i++)
		if (v->reqs[i].method == m)
			return &v->reqs[i];
	return NULL;
}

/*
 * The top-level `signatures: {url, keys}` of every layer (image recipe,
 * override, --set) is a requirement of its own, ANDed with the artifact's
 * `verify.minisign` and with every other layer's: policy only tightens, so
 * a higher layer's keys are never added to a list that the component's own
 * key could satisfy. A layer's url defaults to the merged `signatures.url`,
 * then to "${url}.minisig". The first requirement fills the artifact's own
 * slot when it has no minisign of its own.
 */
int verify_spec_signatures(struct resolver *r, const struct vars *vs,
		       struct plan_artifact *a, const char *ctx)
{
	struct trust_spec *v = &a->verify;
	const struct rnode *merged_url = rnode_get(rnode_get(r->top, "signatures"), "url");
	char what[256];

	snprintf(what, sizeof(what), "signatures.url for %s", ctx);
	for (size_t i = 0; i < r->nlayers; i++) {
		const struct rnode *sg = r->layers[i].sigs, *un;
		struct trust_req q, *own = first_req(v, &trust_m_minisign);
		int dup = 0;

		if (!sg || !rnode_get(sg, "keys"))
			continue;
		memset(&q, 0, sizeof(q));
		q.method = &trust_m_minisign;
		q.origin = sg->origin;
		/* the first requirement fills the artifact's own slot */
		q.layered = own != NULL;
		un = rnode_get(sg, "url");
		if (signature_urls(r, sg, un ? un : merged_url, vs, a, what, &q.urls) ||
		    add_keys(r, rnode_get(sg, "keys"), i, &q.keys, &q.nkeys,
			     &q.alloc_keys)) {
			trust_req_release(&q);
			return -1;
		}
		if (!q.nkeys) {
			trust_req_release(&q);
			return err_at(r, &sg->origin, "'signatures.keys' is empty");
		}
		for (size_t k = 0; !dup && k < v->nreqs; k++)
			dup = trust_req_same(&q, &v->reqs[k]);
		if (dup) {
			trust_req_release(&q);
			continue;
		}
		*trust_spec_add(v, q.method, NULL) = q;
	}
	return 0;
}
