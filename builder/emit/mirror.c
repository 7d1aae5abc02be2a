/* The mirror layout writer (emit/mirror.h). */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit/mirror.h"
#include "lib/json.h"
#include "lib/buf.h"
#include "lib/bulk.h"
#include "lib/fs.h"
#include "lib/names.h"
#include "lib/text.h"
#include "trust/digest.h"

char *mirror_rel_path(const char *url, struct wb_err *e)
{
	const char *why = NULL;
	char *rel = names_url_path(url, &why), *shown;

	if (rel)
		return rel;
	shown = text_printable(url);
	wb_error(e, WB_EUSAGE, "mirror: URL '%s' does not map to a safe path: %s",
		 shown, why);
	free(shown);
	return NULL;
}

/* Copy SRC to DST (temp file + rename), digesting every byte; the SHA-256
 * must be WANT. */
static int copy_verified(const char *name, int src_fd, const char *src, const char *dst,
			 const char *want, struct digest_result *r, struct wb_err *e)
{
	char *tmp = xasprintf("%s.tmp.%ld", dst, (long)getpid()), hex[65];
	int in = fs_open_verified(src_fd, src), out = -1, ret = -1, writing;
	struct digest_ctx d;

	memset(&d, 0, sizeof(d));
	if (in < 0) {
		wb_error(e, WB_EIO, "cannot open '%s': %s", src, strerror(errno));
		goto out;
	}
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		wb_error(e, WB_EIO, "cannot create '%s': %s", tmp, strerror(errno));
		goto out;
	}
	if (digest_init(&d, DIGEST_SHA512 | DIGEST_BLAKE2B512, e))
		goto out;
	/* the one copy loop (lib/bulk.h), hashing what it reads */
	if (bulk_copy(in, out, digest_update_cb, &d, &writing) < 0) {
		wb_error(e, WB_EIO, "cannot %s '%s': %s", writing ? "write" : "read",
			 writing ? tmp : src, strerror(errno));
		goto out;
	}
	digest_final(&d, r);
	memset(&d, 0, sizeof(d));
	digest_hex(r->sha256, 32, hex);
	if (strcmp(hex, want)) {
		wb_error(e, WB_EVERIFY, "the cache entry of '%s' (%s) no longer hashes to %s "
			 "(got %s); nothing written for it", name, src, want, hex);
		goto out;
	}
	if (fsync(out) < 0 || close(out) < 0) {
		out = -1;
		wb_error(e, WB_EIO, "cannot write '%s': %s", tmp, strerror(errno));
		goto out;
	}
	out = -1;
	if (rename(tmp, dst) < 0) {
		wb_error(e, WB_EIO, "cannot rename '%s': %s", tmp, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	digest_release(&d);
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	if (ret)
		unlink(tmp);
	free(tmp);
	return ret;
}

/* Write TEXT at DIR/REL and at the mirror path of every URL in EXTRA
 * (checksum or signature URLs the recipe uses); record REL in LIST. */
static int put_small(const char *dir, const char *rel, const char *text,
		     const struct wb_strlist *extra, json_t *list, struct wb_err *e)
{
	struct wb_strlist rels = WB_STRLIST_INIT;
	int ret = 0;

	wb_strlist_push(&rels, rel);
	for (size_t i = 0; extra && i < extra->nr; i++) {
		char *r = mirror_rel_path(extra->v[i], e);

		if (!r) {
			wb_strlist_release(&rels);
			return -1;
		}
		wb_strlist_push_unique(&rels, r);
		free(r);
	}
	for (size_t i = 0; !ret && i < rels.nr; i++) {
		char *p, *d;
		size_t k;
		json_t *v;

		json_array_foreach(list, k, v)
			if (!strcmp(json_string_value(v), rels.v[i]))
				break;
		if (k < json_array_size(list)) {
			ret = wb_error(e, WB_EUSAGE, "mirror path '%s' would hold two "
				       "different files (two requirements name one URL)",
				       rels.v[i]);
			break;
		}
		p = fs_join(dir, rels.v[i]);
		d = fs_dirname(p);

		ret = fs_mkdir_p(d, 0755, e) || fs_write_atomic(p, text, strlen(text), 0644, e) ? -1 : 0;
		if (!ret)
			json_array_append_new(list, json_string(rels.v[i]));
		free(p);
		free(d);
	}
	wb_strlist_release(&rels);
	return ret;
}

/* The URLs of LIST that are not a mirror rule's rewrite (the recipe's own
 * upstream URLs), into OUT. */
static void upstream_urls(const struct plan *p, const struct wb_strlist *list,
			  struct wb_strlist *out)
{
	for (size_t i = 0; i < list->nr; i++) {
		int mirrored = 0;

		for (size_t k = 0; k < p->nmirrors; k++)
			mirrored |= !strncmp(list->v[i], p->mirrors[k].to,
					     strlen(p->mirrors[k].to));
		if (!mirrored)
			wb_strlist_push(out, list->v[i]);
	}
}

static int one(const struct plan *plan, const struct mirror_artifact *m,
	       const struct mirror_opts *o, json_t *arts, struct mirror_stats *st,
	       struct wb_err *e)
{
	const struct plan_artifact *a = m->art;
	char *rel = mirror_rel_path(a->upstream_url, e), *dst = NULL, *pdir = NULL;
	char *text = NULL, *srel = NULL, s256[65], s512[129];
	json_t *o_ = json_object(), *sums = json_array(), *sigs = json_array();
	struct digest_result r;
	struct wb_strlist u256 = WB_STRLIST_INIT, u512 = WB_STRLIST_INIT;
	struct wb_strlist usig = WB_STRLIST_INIT;
	const struct trust_ev *own = NULL;
	int ret = -1, unsigned_ = 0;

	for (size_t i = 0; i < a->verify.nreqs; i++) {
		const struct trust_req *q = &a->verify.reqs[i];

		if (q->method == &trust_m_sha256_url)
			upstream_urls(plan, &q->urls, &u256);
		else if (q->method == &trust_m_sha512_url)
			upstream_urls(plan, &q->urls, &u512);
	}
	/* the artifact's own minisign signature, which --sign replaces */
	for (size_t i = 0; m->ev && i < m->ev->nr && !own; i++)
		if (m->ev->v[i].method == &trust_m_minisign)
			own = &m->ev->v[i];
	if (own)
		upstream_urls(plan, &a->verify.reqs[own->req].urls, &usig);
	else
		for (size_t i = 0; i < a->verify.nreqs && !usig.nr; i++)
			if (a->verify.reqs[i].method == &trust_m_minisign)
				upstream_urls(plan, &a->verify.reqs[i].urls, &usig);
	if (!rel)
		goto out;
	dst = fs_join(o->dir, rel);
	pdir = fs_dirname(dst);
	if (fs_mkdir_p(pdir, 0755, e) ||
	    copy_verified(a->name, m->fd, m->path, dst, m->sha256, &r, e))
		goto out;
	digest_hex(r.sha256, 32, s256);
	digest_hex(r.sha512, 64, s512);
	/* checksum files in sha256sum format, at .sha256/.sha512 and the URLs
	 * the recipe fetches them from */
	for (int k = 0; k < 2; k++) {
		free(text);
		free(srel);
		text = xasprintf("%s  %s\n", k ? s512 : s256, a->filename);
		srel = xasprintf("%s.sha%s", rel, k ? "512" : "256");
		if (put_small(o->dir, srel, text, k ? &u512 : &u256, sums, e))
			goto out;
	}
	free(text);
	text = NULL;
	json_object_set_new(o_, "name", json_string(a->name));
	json_object_set_new(o_, "component", json_string(a->component));
	json_object_set_new(o_, "version", json_string(a->version));
	json_object_set_new(o_, "upstream_url", json_url(a->upstream_url));
	json_object_set_new(o_, "path", json_string(rel));
	json_object_set_new(o_, "size", json_integer((json_int_t)r.size));
	json_object_set_new(o_, "sha256", json_string(s256));
	json_object_set_new(o_, "sha512", json_string(s512));
	free(srel);
	srel = xasprintf("%s.minisig", rel);
	if (o->sign) {
		char *tc = xasprintf("timestamp:%lld\tfile:%s\thashed", (long long)o->epoch,
				     a->filename);
		char kid[17];

		minisign_keyid_hex(o->sign->keyid, kid);
		text = minisign_sign_prehashed(o->sign, r.blake2b512, tc,
					       "signature from winbuild mirror --sign", e);
		if (!text || put_small(o->dir, srel, text, &usig, sigs, e)) {
			free(tc);
			goto out;
		}
		json_object_set_new(o_, "key_id", json_string(kid));
		json_object_set_new(o_, "trusted_comment", json_string(tc));
		json_object_set_new(o_, "resigned", json_true());
		free(tc);
		st->signatures++;
		st->resigned++;
	} else if (own && own->text) {
		if (put_small(o->dir, srel, own->text, &usig, sigs, e))
			goto out;
		for (size_t i = 0; i < own->nfields; i++)
			json_object_set_new(o_, own->fields[i].key,
					    json_string(own->fields[i].value));
		st->signatures++;
	} else {
		unsigned_ = 1;
	}
	/* every other signature (a further requirement's, another method's),
	 * each of its method's files as it verified (cosign: .sig, .cert and
	 * the Rekor entry): beside the artifact as its method names it
	 * (trust_aux_def.suffix), and at its upstream URLs */
	for (size_t i = 0; m->ev && i < m->ev->nr; i++) {
		const struct trust_ev *x = &m->ev->v[i];
		const struct trust_req *q = &a->verify.reqs[x->req];
		int bad = 0;

		if (x == own || !(x->method->flags & TRUST_SIGNATURE) || !x->text)
			continue;
		for (size_t k = 0; k < trust_method_naux(x->method) && !bad; k++) {
			struct trust_aux_def d = trust_method_aux(x->method, k);
			const char *t = k ? x->more[k - 1].text : x->text;
			struct wb_strlist ureq = WB_STRLIST_INIT;
			char *qrel = NULL;

			if (!t)
				continue;
			upstream_urls(plan, trust_req_urls(q, k), &ureq);
			if (x->method != &trust_m_minisign && d.suffix)
				qrel = xasprintf("%s%s", rel, d.suffix);
			else if (ureq.nr)
				qrel = mirror_rel_path(ureq.v[0], e);
			if (qrel || ureq.nr)
				bad = !qrel || put_small(o->dir, qrel, t, &ureq, sigs, e);
			if (!bad && !k && qrel && x->method != &trust_m_minisign && unsigned_) {
				/* signed after all, by another method */
				unsigned_ = 0;
				st->signatures++;
			}
			free(qrel);
			wb_strlist_release(&ureq);
		}
		if (bad)
			goto out;
	}
	if (unsigned_)
		st->unsigned_++;
	json_object_set_new(o_, "checksums", sums);
	json_object_set_new(o_, "signatures", sigs);
	sums = sigs = NULL;
	json_array_append(arts, o_);
	st->artifacts++;
	ret = 0;
out:
	wb_strlist_release(&u256);
	wb_strlist_release(&u512);
	wb_strlist_release(&usig);
	json_decref(o_);
	json_decref(sums);
	json_decref(sigs);
	free(text);
	free(srel);
	free(rel);
	free(dst);
	free(pdir);
	return ret;
}

int mirror_write(const struct plan *plan, const struct mirror_artifact *arts,
		 size_t n, const struct mirror_opts *o, struct mirror_stats *st,
		 struct wb_err *e)
{
	json_t *root = json_object(), *list = json_array();
	char *text = NULL, *ipath = fs_join(o->dir, "index.json");
	int ret = -1;

	memset(st, 0, sizeof(*st));
	if (fs_mkdir_p(o->dir, 0755, e))
		goto out;
	for (size_t i = 0; i < n; i++)
		if (one(plan, &arts[i], o, list, st, e))
			goto out;
	json_object_set_new(root, "schema", json_integer(1));
	json_object_set_new(root, "image", json_string(plan->name));
	json_object_set_new(root, "layout", json_string("<upstream host>/<upstream path>"));
	if (o->sign) {
		char kid[17];

		minisign_keyid_hex(o->sign->keyid, kid);
		json_object_set_new(root, "signed_by", json_string(kid));
	} else {
		json_object_set_new(root, "signed_by", json_null());
	}
	json_object_set(root, "artifacts", list);
	ret = json_write_file(ipath, root, JSON_INDENT(2) | JSON_PRESERVE_ORDER, e);
out:
	free(text);
	free(ipath);
	json_decref(list);
	json_decref(root);
	return ret;
}
