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

/*
 * The small files (checksum files, signatures) one export wrote, by mirror
 * path. Two artifacts may name one upstream file: a SHA256SUMS listing
 * both. That file is written holding each artifact's line (a second write
 * never clobbers the first); any other file two artifacts name must be the
 * same bytes, or the export is refused.
 */
struct small_files {
	struct wb_strlist rel;
	struct buf *text;          /* what REL.v[i] holds */
	size_t alloc;
};

static void small_files_release(struct small_files *f)
{
	for (size_t i = 0; i < f->rel.nr; i++)
		buf_release(&f->text[i]);
	free(f->text);
	wb_strlist_release(&f->rel);
}

/* Whether the checksum file SUMS already has a line for LINE's file name
 * (LINE is "<hex>  <name>\n"): 1 the same line, -1 another digest, 0 none. */
static int sums_has(const struct buf *sums, const char *line)
{
	const char *name = strstr(line, "  ");
	size_t nl = strlen(name);

	for (const char *p = sums->ptr; p && *p; ) {
		const char *end = strchr(p, '\n');
		size_t n = end ? (size_t)(end + 1 - p) : strlen(p);
		const char *pn = memmem(p, n, "  ", 2);

		if (pn && (size_t)(p + n - pn) == nl && !memcmp(pn, name, nl))
			return n == strlen(line) && !memcmp(p, line, n) ? 1 : -1;
		p += n;
	}
	return 0;
}

/* The content REL is to hold when TEXT[0..LEN) is written there by one
 * more artifact (SUMS: TEXT is one sha256sum line): 0 when it must be
 * (re)written, 1 when it already holds it, -1 with WB_EUSAGE.
 * @where `winbuild mirror` (the `<host>/<path>` layout, checksum files,
 *   signatures, `index.json`) -- a checksum file two artifacts share holds
 *   both lines
 */
static int small_merge(struct small_files *f, const char *rel, const char *text,
		       size_t len, int sums, struct buf **out, struct wb_err *e)
{
	size_t i;
	int r;

	for (i = 0; i < f->rel.nr && strcmp(f->rel.v[i], rel); i++)
		;
	if (i == f->rel.nr) {
		wb_strlist_push(&f->rel, rel);
		ALLOC_GROW(f->text, f->rel.nr, f->alloc);
		buf_init(&f->text[i]);
		buf_add(&f->text[i], text, len);
		*out = &f->text[i];
		return 0;
	}
	*out = &f->text[i];
	if (!sums)
		return f->text[i].len == len && !memcmp(f->text[i].ptr, text, len) ? 1 :
			wb_error(e, WB_EUSAGE, "mirror path '%s' would hold two different "
				 "files (two artifacts' requirements name one URL)", rel);
	r = sums_has(&f->text[i], text);
	if (r < 0)
		return wb_error(e, WB_EUSAGE, "mirror path '%s' would list two different "
				"digests for one file name", rel);
	if (r > 0)
		return 1;
	buf_add(&f->text[i], text, len);
	return 0;
}

/* Write TEXT (LEN bytes) at DIR/REL and at the mirror path of every URL in
 * EXTRA (checksum or signature URLs the recipe uses); record REL in LIST.
 * SUMS: TEXT is a sha256sum line, merged into a checksum file other
 * artifacts share (small_merge). */
static int put_small(const char *dir, const char *rel, const char *text, size_t len,
		     int sums, const struct wb_strlist *extra, json_t *list,
		     struct small_files *done, struct wb_err *e)
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
		struct buf *now;
		size_t k;
		json_t *v;
		int m;

		json_array_foreach(list, k, v)
			if (!strcmp(json_string_value(v), rels.v[i]))
				break;
		if (k < json_array_size(list)) {
			ret = wb_error(e, WB_EUSAGE, "mirror path '%s' would hold two "
				       "different files (two requirements name one URL)",
				       rels.v[i]);
			break;
		}
		m = small_merge(done, rels.v[i], text, len, sums, &now, e);
		if (m < 0) {
			ret = -1;
			break;
		}
		p = fs_join(dir, rels.v[i]);
		d = fs_dirname(p);
		if (!m)
			ret = fs_mkdir_p(d, 0755, e) ||
				fs_write_atomic(p, now->ptr, now->len, 0644, e) ? -1 : 0;
		if (!ret)
			json_array_append_new(list, json_string(rels.v[i]));
		free(p);
		free(d);
	}
	wb_strlist_release(&rels);
	return ret;
}

/* The upstream URLs of LIST, each once, into OUT: the recipe's own, and
 * a mirror rule's rewrite taken back to the URL it rewrote (its `from` and
 * the rest). Under mirror_only a plan holds only rewrites; they were once
 * left out, so an export written through the corporate mirror lacked every
 * file not named <artifact><suffix> (containerd's .intoto.jsonl, a
 * SHA256SUMS): issue 42, mirror.bats. The first rule whose `to` matches
 * is the one that rewrote it (recipe/urls.c applies the first match). */
static void upstream_urls(const struct plan *p, const struct wb_strlist *list,
			  struct wb_strlist *out)
{
	for (size_t i = 0; i < list->nr; i++) {
		const char *u = list->v[i];
		size_t k;

		for (k = 0; k < p->nmirrors; k++)
			if (!strncmp(u, p->mirrors[k].to, strlen(p->mirrors[k].to)))
				break;
		if (k == p->nmirrors) {
			wb_strlist_push_unique(out, u);
		} else {
			char *up = xasprintf("%s%s", p->mirrors[k].from,
					     u + strlen(p->mirrors[k].to));

			wb_strlist_push_unique(out, up);
			free(up);
		}
	}
}

static int one(const struct plan *plan, const struct mirror_artifact *m,
	       const struct mirror_opts *o, json_t *arts, struct mirror_stats *st,
	       struct small_files *done, struct wb_err *e)
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
		if (put_small(o->dir, srel, text, strlen(text), 1, k ? &u512 : &u256, sums,
			      done, e))
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
		if (!text || put_small(o->dir, srel, text, strlen(text), 0, &usig, sigs,
					   done, e)) {
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
		if (put_small(o->dir, srel, own->text, own->len, 0, &usig, sigs, done, e))
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
		int bad = 0, kept = x->text != NULL;

		/* a file of the method kept (cosign's bundle stands alone: no
		 * .sig beside it, trust/m_cosign.c) */
		for (size_t k = 1; k < trust_method_naux(x->method); k++)
			kept |= x->more[k - 1].text != NULL;
		if (x == own || !(x->method->flags & TRUST_SIGNATURE) || !kept)
			continue;
		for (size_t k = 0; k < trust_method_naux(x->method) && !bad; k++) {
			struct trust_aux_def d = trust_method_aux(x->method, k);
			const char *t = k ? x->more[k - 1].text : x->text;
			size_t tlen = k ? x->more[k - 1].len : x->len;
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
				bad = !qrel || put_small(o->dir, qrel, t, tlen, 0, &ureq, sigs,
							 done, e);
			if (!bad && qrel && x->method != &trust_m_minisign && unsigned_) {
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

/*
 * @where `winbuild mirror` (the `<host>/<path>` layout, checksum files,
 *   signatures, `index.json`)
 */
int mirror_write(const struct plan *plan, const struct mirror_artifact *arts,
		 size_t n, const struct mirror_opts *o, struct mirror_stats *st,
		 struct wb_err *e)
{
	json_t *root = json_object(), *list = json_array();
	char *text = NULL, *ipath = fs_join(o->dir, "index.json");
	struct small_files done = { WB_STRLIST_INIT, NULL, 0 };
	int ret = -1;

	memset(st, 0, sizeof(*st));
	if (fs_mkdir_p(o->dir, 0755, e))
		goto out;
	for (size_t i = 0; i < n; i++)
		if (one(plan, &arts[i], o, list, st, &done, e))
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
	small_files_release(&done);
	free(text);
	free(ipath);
	json_decref(list);
	json_decref(root);
	return ret;
}
