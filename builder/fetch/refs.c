/*
 * Cache refs (refs/<key>: which verified bytes answer an artifact's
 * question, and the files that verified them) and cache hits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "fetch/engine.h"
#include "lib/redact.h"

/* ---- ref spec and refs ------------------------------------------------ */

static void spec_list(struct buf *b, const char *what, const struct wb_strlist *l)
{
	/* The ref keys on the redacted URLs (issue 31): the secret is no
	 * part of what the bytes are, a presigned URL signed again or a SAS
	 * token renewed finds the same ref, and the spec never holds it. */
	for (size_t i = 0; i < l->nr; i++) {
		char *r = redact_url(l->v[i]);

		buf_addf(b, "%s %s\n", what, r);
		free(r);
	}
}

static void spec_keys(struct buf *b, const struct trust_key *keys, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char pk[65];
		digest_hex(keys[i].pk.pk, 32, pk);
		buf_addf(b, "key %s %s legacy=%d file_check=%d\n", keys[i].keyid_hex,
			 pk, keys[i].pk.allow_legacy, keys[i].pk.file_check);
	}
}

char *fetch_ref_spec(const struct plan *plan, const struct fetch_item *it)
{
	const struct plan_artifact *a = it->art;
	const struct trust_spec *v = &a->verify;
	struct buf b = BUF_INIT;

	buf_addf(&b, "winbuild-ref 3\nartifact %s\nfilename %s\n", a->name, a->filename);
	spec_list(&b, "url", &a->urls);
	buf_addf(&b, "sha256 %s\nsha512 %s\nneeds_pin %s\n", v->sha256 ? v->sha256 : "-",
		 v->sha512 ? v->sha512 : "-", v->needs_pin ? "yes" : "no");
	if (v->sha1)
		buf_addf(&b, "sha1 %s\n", v->sha1);
	for (size_t i = 0; i < v->nreqs; i++) {
		const struct trust_req *q = &v->reqs[i];

		buf_addf(&b, "req %zu %s layered=%d\n", i + 1, q->method->name, q->layered);
		for (size_t k = 0; k < trust_method_naux(q->method); k++)
			spec_list(&b, k ? "aux_url_more" : "aux_url", trust_req_urls(q, k));
		spec_list(&b, "lookup", &q->lookup);
		spec_keys(&b, q->keys, q->nkeys);
		for (size_t k = 0; k < q->nparams; k++)
			buf_addf(&b, "param %s %s\n", q->params[k].key, q->params[k].value);
	}
	buf_addf(&b, "policy require_signature=%d allow_http=%d forbid_checksum_urls=%d\n",
		 plan->policy.require_signature, plan->policy.allow_http,
		 plan->policy.forbid_checksum_urls);
	/* No lock pin: `lock` writes the refs a later `--locked` run must
	 * find (README, "Everyday use"). A ref never decides which bytes are
	 * used: a pinned artifact is looked up by its pin, and every hit
	 * passes verify_pins() with the lock's pin too (refs_try_cache). */
	return buf_detach(&b, NULL);
}

static void ref_key(const struct engine *en, const struct fetch_item *it, char key[65])
{
	char *spec = fetch_ref_spec(en->plan, it);

	cache_ref_key(spec, key);
	free(spec);
}

/*
 * @where the signature file that verified an artifact, kept byte-exact for
 *   `mirror` -- the evidence's `text`, all its bytes
 */
int refs_write(struct engine *en, struct fetch_item *it, struct wb_err *e)
{
	struct cache_ref ref;
	char key[65];
	int ret;

	memset(&ref, 0, sizeof(ref));
	ref.artifact = it->art->name;
	memcpy(ref.sha256, it->sha256, 65);
	memcpy(ref.sha512, it->sha512, 129);
	memcpy(ref.blake2b512, it->blake2b512, 129);
	ref.size = it->size;
	ref.url = it->url;
	ref.methods = it->ev.methods;
	ref.evidence = verify_evidence_to_json(&it->ev);
	ref_key(en, it, key);
	ret = cache_ref_store(en->c, key, &ref, e);
	json_decref(ref.evidence);
	return ret;
}

/* Whether URL may name file K of requirement Q in a ref: one of the
 * plan's URLs for it, or (the file a lookup fills) one below a lookup
 * service's URL. A ref's URLs reach the lock and the SBOM. */
static int kept_url_ok(const struct trust_req *q, size_t k, const char *url,
		       const char *text)
{
	const struct wb_strlist *l = trust_req_urls(q, k);

	if (!url)
		return !text;
	for (size_t i = 0; i < l->nr; i++)
		if (redact_same_url(l->v[i], url))
			return 1;
	for (size_t i = 0; q->method->lookup_step && k == q->method->lookup_aux &&
	     i < q->lookup.nr; i++) {
		size_t n = strlen(q->lookup.v[i]);

		while (n && q->lookup.v[i][n - 1] == '/')
			n--;
		if (!strncmp(url, q->lookup.v[i], n) && (url[n] == '/' || !url[n]))
			return 1;
	}
	return 0;
}

/*
 * Every requirement of J's plan checked again on the entry's bytes (DR,
 * open as FD) from the files the ref kept (KEPT: the checksum file, the
 * signature, the bundle...), with the plan's keys and settings. A ref is
 * only a hint written by whoever could write the cache: what it says
 * verified the bytes counts for nothing; *EV, what verified them now, is
 * what the lock, the SBOM and `fetch --json` record.
 */
static int ref_reverify(struct engine *en, struct job *j,
			const struct verify_evidence *kept, const char *entry, int fd,
			const struct digest_result *dr, struct verify_evidence *ev,
			struct wb_err *e)
{
	const struct trust_spec *v = &j->it->art->verify;
	struct trust_aux *aux = xcalloc(j->nslots + 1, sizeof(*aux));
	struct verify_needs needs;
	struct verify_input in;
	char data[64];
	int ret;

	memset(&needs, 0, sizeof(needs));
	for (size_t i = 0; i < kept->nr; i++) {
		const struct trust_ev *x = &kept->v[i];
		size_t s0 = trust_spec_slot(v, x->req), naux = trust_method_naux(x->method);

		needs.reqs |= 1ULL << x->req;
		for (size_t k = 0; k < naux; k++)
			if (!kept_url_ok(&v->reqs[x->req], k, k ? x->more[k - 1].url : x->url,
					 k ? x->more[k - 1].text : x->text)) {
				free(aux);
				return wb_error(e, WB_EVERIFY, "artifact '%s': the cache ref "
						"names a %s URL the plan does not",
						v->name, job_target_what(j, s0 + k));
			}
		aux[s0].url = x->url ? x->url : x->text ? "(kept in the cache ref)" : NULL;
		aux[s0].text = x->text;
		aux[s0].len = x->len;
		for (size_t k = 1; k < naux; k++) {
			aux[s0 + k].url = x->more[k - 1].url ? x->more[k - 1].url :
				"(kept in the cache ref)";
			aux[s0 + k].text = x->more[k - 1].text;
			aux[s0 + k].len = x->more[k - 1].len;
		}
		/* a file the plan names URLs for was kept (an embedded
		 * signature has none: trust/m_authenticode.c) */
		if (!x->text && trust_req_urls(&v->reqs[x->req], 0)->nr) {
			free(aux);
			return wb_error(e, WB_EVERIFY, "artifact '%s': the cache ref keeps "
					"no %s", v->name, job_target_what(j, s0));
		}
	}
	needs.methods = j->needs.methods & (VERIFY_REQS | VERIFY_SIGNATURE);
	needs.digest_algs = dr->algs;
	memset(&in, 0, sizeof(in));
	in.spec = v;
	in.policy = &en->plan->policy;
	in.needs = &needs;
	in.dr = dr;
	in.url = entry;
	/* the bytes as a file, for a check that reads them (a legacy
	 * signature): the very file that was hashed, not the entry's name */
	snprintf(data, sizeof(data), "/proc/self/fd/%d", fd);
	in.data_path = fd >= 0 ? data : entry;
	in.aux = aux;
	in.roots = &en->roots;
	ret = verify_artifact(&in, ev, e);
	free(aux);
	return ret;
}

/*
 * IT's SHA-512 and BLAKE2b-512, for the ref and the SBOM: those of WANT (the
 * ones a pin or method checks; never an extra pass for them) that DR
 * computed. Never from a ref: its digests are whatever its writer put there.
 */
void refs_record_digests(struct fetch_item *it, const struct digest_result *dr,
			   unsigned want)
{
	it->sha512[0] = it->blake2b512[0] = '\0';
	if ((want & DIGEST_SHA512) && (dr->algs & DIGEST_SHA512))
		digest_hex(dr->sha512, 64, it->sha512);
	if ((want & DIGEST_BLAKE2B512) && (dr->algs & DIGEST_BLAKE2B512))
		digest_hex(dr->blake2b512, 64, it->blake2b512);
}

/* Whether URL is one of IT's plan URLs (a ref's "url" is only believed
 * then: it reaches the manifest, the lock and the SBOM). */
static int plan_url(const struct fetch_item *it, const char *url)
{
	for (size_t i = 0; url && i < it->art->urls.nr; i++)
		if (redact_same_url(it->art->urls.v[i], url))
			return 1;
	return 0;
}

/*
 * 1 on a verified cache hit, 0 on a miss, -1 on error.
 *
 * Which entry: the artifact's sha256 pin (the recipe's, else the lock's)
 * when it has one, else the digest its ref recorded. A ref is only a hint:
 * a ref that names other bytes than the pin, or keeps files for other
 * requirements than the plan's, is ignored, and whatever entry is chosen
 * must satisfy every pin (verify_pins, the same check a download passes)
 * and every requirement of the plan, checked again from the files the ref
 * kept (ref_reverify), pinned or not. Without a ref, the pins must be the
 * artifact's only methods. The entry is opened once, without following a
 * link; the item keeps that descriptor (it->fd), so its consumer reads
 * what was checked here, hashing it when this did not (defer_rehash).
 * @where where pins decide which bytes are used (download, cache ref, cache
 *   digest, lock) -- which cache entry satisfies an artifact: by its pin,
 *   every requirement checked again from the files it kept
 */
int refs_try_cache(struct engine *en, struct job *j, struct wb_err *e)
{
	struct fetch_item *it = j->it;
	const char *pin = verify_pinned_sha256(&it->art->verify, it->lock_sha256);
	char key[65], *entry = NULL;
	const char *sha = NULL;
	unsigned char raw256[32];
	struct digest_result dr;
	struct cache_ref ref;
	struct verify_evidence kept, ev;
	int r, fd = -1, have_ref = 0, reverify, hash_now;
	unsigned algs = j->needs.digest_algs | DIGEST_SHA256;

	/* lock --accept-new is about to make a pin (trust on first use): the
	 * pin is of bytes this run downloaded and verified, never of an entry
	 * a ref names. A cache writer may only cause a download
	 * (docs/hardening.md); a planted ref naming an older release signed
	 * by the same key would otherwise become the lock's pin. Every cache
	 * hit, the dl-lock waiter's too (fetch/dlock.c), passes here. */
	if (j->needs.methods & VERIFY_ACCEPTED_NEW)
		return 0;
	memset(&kept, 0, sizeof(kept));
	memset(&ev, 0, sizeof(ev));
	ref_key(en, it, key);
	r = cache_ref_load(en->c, key, &ref, e);
	if (r < 0)
		return -1;
	if (r) {
		sha = ref.sha256;
		if ((pin && strcasecmp(sha, pin)) ||
		    verify_evidence_from_json(&it->art->verify, &j->needs, ref.evidence,
					      &kept) < 0) {
			if (pin && strcasecmp(sha, pin))
				engine_log(en, WB_LOG_WARN,
				     "artifact '%s': ignoring a cache ref that names sha256 %.64s, "
				     "not the pinned %s", it->art->name, sha, pin);
			cache_ref_release(&ref);
			sha = NULL;
		} else {
			have_ref = 1;
		}
	}
	if (!sha) {
		/* No usable ref: a pin alone is enough to trust an entry. */
		if ((j->needs.methods & VERIFY_REQS) || !pin)
			goto miss;
		sha = pin;
	}
	reverify = have_ref && (j->needs.methods & VERIFY_REQS);
	/* hashed here unless the caller hashes every byte it reads and
	 * SHA-256 (the entry's name, which that read checks) is all the pins
	 * and requirements need */
	hash_now = !en->o->defer_rehash || (algs & ~(unsigned)DIGEST_SHA256);
	memset(&dr, 0, sizeof(dr));
	if (!hash_now) {
		r = cache_entry_open(en->c, sha, &dr.size, &fd, &it->quarantined, e);
		if (r > 0) {
			digest_unhex(sha, dr.sha256, 32);
			dr.algs = DIGEST_SHA256;
		}
	} else {
		r = cache_lookup_digests(en->c, sha, algs, &dr, &it->quarantined, &fd, e);
	}
	if (r <= 0) {
		if (it->quarantined)
			engine_log(en, WB_LOG_WARN,
			     "cache entry for '%s' was corrupt (sha256 %s); moved to '%s', fetching again",
			     it->art->name, sha, it->quarantined);
		goto out;
	}
	/* every pin, on the bytes of the entry chosen */
	digest_unhex(sha, raw256, 32);
	entry = cache_entry_path(en->c, sha);
	r = verify_pins(&it->art->verify, it->lock_sha256, entry, raw256,
			(dr.algs & DIGEST_SHA512) ? dr.sha512 : NULL,
			(dr.algs & DIGEST_SHA1) ? dr.sha1 : NULL, e);
	if (!r && reverify)
		r = ref_reverify(en, j, &kept, entry, fd, &dr, &ev, e);
	if (r < 0) {
		if (have_ref && (e->code == WB_EVERIFY || e->code == WB_EUSAGE)) {
			/* a ref is a hint, and this one was wrong: fetch again */
			engine_log(en, WB_LOG_WARN, "ignoring a cache ref: %s", e->msg);
			j->cache_refused = 1;
			wb_err_clear(e);
			r = 0;
			goto out;
		}
		/* a pin names bytes that another pin refuses */
		if (it->lock_sha256 && e->code == WB_EVERIFY)
			wb_error_prefix(e, "the lock file pins sha256 %s, but", it->lock_sha256);
		goto out;
	}
	memcpy(it->sha256, sha, 65);
	it->size = dr.size;
	it->from_cache = 1;
	it->unverified_hit = !hash_now;
	free(it->path);
	it->path = entry;
	entry = NULL;
	it->fd = fd;
	it->has_fd = 1;
	{
		struct stat st;

		/* hashed here, and only winbuild's user could change it since
		 * (whoever has that user can change the tree as well) */
		it->hashed = hash_now && fstat(fd, &st) == 0 &&
			st.st_uid == geteuid() && !(st.st_mode & 0222) &&
			st.st_nlink == 1;
	}
	fd = -1;
	refs_record_digests(it, &dr, j->needs.digest_algs);
	verify_evidence_release(&it->ev);
	it->ev = ev;
	memset(&ev, 0, sizeof(ev));
	it->ev.methods = j->needs.methods;
	free(it->url);
	it->url = redact_url(have_ref && plan_url(it, ref.url) ? ref.url :
			     it->art->urls.nr ? it->art->urls.v[0] : "");
	r = 1;
out:
	if (fd >= 0)
		close(fd);
	free(entry);
	verify_evidence_release(&kept);
	verify_evidence_release(&ev);
	if (have_ref)
		cache_ref_release(&ref);
	return r;
miss:
	return 0;
}
