/*
 * winbuild mirror RECIPE DIR [--sign KEYFILE]: fetch and verify every
 * artifact (the shared fetch driver), then write DIR/<host>/<path> with
 * checksum files, signatures and DIR/index.json (emit/mirror.h). With
 * --sign, every artifact is signed anew with an unencrypted minisign secret
 * key (minisign -G -W), so a site serves its own signed mirror and trusts
 * only its key (policy.require: signature, signatures.keys).
 *
 * @where `winbuild mirror` (the `<host>/<path>` layout, checksum files,
 *   signatures, `index.json`)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include <jansson.h>

#include "cmd/pipeline.h"
#include "fetch/registry.h"
#include "emit/mirror.h"
#include "fetch/cache.h"
#include "fetch/fetch.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "recipe/plan.h"
#include "trust/method.h"

#define MIRROR_USAGE "mirror RECIPE DIR [--sign KEYFILE] [-O FILE]... [--set K=V]... " \
	"[-j N] [--offline] [--locked] [--lock FILE] [--cache DIR] [--cacert FILE] [-q]"

static int load_seckey(const char *path, struct minisign_seckey *sk)
{
	struct buf b = BUF_INIT;
	struct wb_err e = WB_ERR_INIT;
	int ret = 0;

	if (fs_read_file(path, 4096, WB_EUSAGE, &b, &e) < 0 ||
	    minisign_seckey_parse(b.ptr, b.len, sk, &e) < 0) {
		cmd_errorf("--sign %s: %s", path, e.msg);
		ret = e.code ? e.code : WB_EUSAGE;
	}
	if (b.ptr)
		OPENSSL_cleanse(b.ptr, b.len);
	buf_release(&b);
	return ret;
}

/* "scheme://host[:port]/" of URL in FROM, "host[_port]" (the export's
 * directory) in DIR; 0 when URL has no host part. */
static int url_root(const char *url, struct buf *from, struct buf *dir)
{
	const char *h = strstr(url, "://"), *end;

	if (!h || !strncmp(url, "file:", 5))
		return 0;
	h += 3;
	end = h + strcspn(h, "/?#");
	if (end == h)
		return 0;
	buf_reset(from);
	buf_reset(dir);
	buf_add(from, url, (size_t)(end - url));
	buf_addc(from, '/');
	for (const char *p = h; p < end; p++)
		buf_addc(dir, *p == ':' ? '_' : *p);
	return 1;
}

/* A trusted root FILE copied into DIR/trust/ (once per content): its path
 * relative to DIR, NULL (and *E) on error. */
static char *copy_trust(const char *dir, const char *file, struct wb_strlist *copied,
			struct wb_err *e)
{
	struct buf b = BUF_INIT, old = BUF_INIT;
	const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	char *tdir = fs_join(dir, "trust"), *rel = NULL, *path = NULL;

	if (fs_read_file(file, 16u << 20, WB_EUSAGE, &b, e) < 0 || fs_mkdir_p(tdir, 0755, e))
		goto out;
	for (int n = 0; n < 100 && !rel; n++) {
		free(path);
		path = n ? xasprintf("%s/%d-%s", tdir, n, base) : fs_join(tdir, base);
		buf_reset(&old);
		if (!fs_exists(path) || (fs_read_file(path, 16u << 20, WB_EUSAGE, &old, e) == 0 &&
		    old.len == b.len && !memcmp(old.ptr, b.ptr, b.len)))
			rel = n ? xasprintf("trust/%d-%s", n, base) : xasprintf("trust/%s", base);
	}
	if (rel && !wb_strlist_has(copied, rel)) {
		if (fs_write_atomic(path, b.ptr, b.len, 0644, e)) {
			free(rel);
			rel = NULL;
		} else {
			wb_strlist_push(copied, rel);
		}
	}
out:
	buf_release(&b);
	buf_release(&old);
	free(tdir);
	free(path);
	return rel;
}

/* R asks a transparency log at fetch time (not an entry of its own) */
static int req_lookup(const struct trust_req *r)
{
	const struct trust_method *m = r->method;

	return m->lookup_param && r->lookup.nr && !trust_req_urls(r, m->lookup_aux)->nr;
}

/* Component COMP's lookups can all be switched by its one line
 * `tlog_source: exported`: it has one, and no replaced artifact of it has
 * one (a replacement keeps its own URLs and its own lookup, its entry is
 * not in the export; the other artifacts then get a stanza each). */
static int component_lookups(const struct plan *p, const char *comp)
{
	int any = 0;

	for (size_t i = 0; i < p->nartifacts; i++) {
		const struct plan_artifact *a = &p->artifacts[i];

		if (strcmp(a->component, comp))
			continue;
		for (size_t q = 0; q < a->verify.nreqs; q++) {
			if (a->verify.reqs[q].layered || !req_lookup(&a->verify.reqs[q]))
				continue;
			if (a->replaced)
				return 0;
			any = 1;
		}
	}
	return any;
}

/*
 * DIR/winbuild-override.yaml: what an air-gapped build needs besides the
 * recipe, relative to wherever DIR is moved: every upstream host mirrored
 * to DIR (mirror_only), each online transparency-log lookup replaced by the
 * exported entry beside the artifact (one `tlog_source: exported` line per
 * component, else tlog_entry per artifact), each trusted root read
 * from the copy in DIR/trust/. Replaced artifacts keep their own URLs.
 */
static int write_override(const struct plan *p, const struct registry_image *pulled,
			  const char *dir, struct wb_err *e)
{
	struct buf out = BUF_INIT, from = BUF_INIT, hdir = BUF_INIT;
	struct wb_strlist seen = WB_STRLIST_INIT, copied = WB_STRLIST_INIT;
	char *path = fs_join(dir, "winbuild-override.yaml");
	int ret = -1;

	buf_addf(&out, "# Written by 'winbuild mirror' for image %s: the override of this\n"
		 "# export, wherever the directory is moved (no server needed):\n"
		 "#   winbuild build %s -O %s\n"
		 "kind: override\nmirror_only: true\nmirrors:\n", p->name, p->name, path);
	for (size_t i = 0; i < p->nartifacts; i++) {
		const struct plan_artifact *a = &p->artifacts[i];

		for (size_t q = 0; q <= a->verify.nreqs; q++) {
			const struct trust_req *r = q ? &a->verify.reqs[q - 1] : NULL;
			size_t naux = r ? trust_method_naux(r->method) : 1;

			for (size_t k = 0; k < naux; k++) {
				const struct wb_strlist *l = r ? trust_req_urls(r, k) : NULL;
				size_t nl = r ? l->nr : 1;

				for (size_t u = 0; u < nl; u++) {
					const char *url = r ? l->v[u] : a->upstream_url;
					char *in_dir;
					int there;

					if (!url_root(url, &from, &hdir) || wb_strlist_has(&seen, from.ptr))
						continue;
					/* a host the export holds (not a mirror the
					 * export was fetched through) */
					in_dir = fs_join(dir, hdir.ptr);
					there = fs_exists(in_dir);
					free(in_dir);
					if (!there)
						continue;
					wb_strlist_push(&seen, from.ptr);
					buf_addf(&out, "  - {from: \"%s\", to: \"file://${override_dir}/%s/\"}\n",
						 from.ptr, hdir.ptr);
				}
			}
		}
	}
	/* issue 42: each image from its OCI layout in the export
	 * (emit/mirror_images.c put_layout), by the pin the fetch verified: no
	 * registry, no server (a file:// registry mirror is refused) */
	for (size_t i = 0, any = 0; pulled && i < p->nimages; i++)
		if (pulled[i].pinned[0])
			buf_addf(&out, "%s  %s: {layout: \"images/%s\", digest: \"%s\"}\n",
				 any++ ? "" : "images:\n", p->images[i].key, p->images[i].key,
				 pulled[i].pinned);
	buf_adds(&out, "components:\n");
	for (size_t c = 0; c < p->ncomponents; c++) {
		int head = 0, one_line = component_lookups(p, p->components[c].name);

		/* the one line that switches every lookup of the component */
		if (one_line) {
			buf_addf(&out, "  %s:\n    tlog_source: exported\n", p->components[c].name);
			head = 1;
		}
		for (size_t i = 0; i < p->nartifacts; i++) {
			const struct plan_artifact *a = &p->artifacts[i];
			int ahead = 0;

			if (a->replaced || strcmp(a->component, p->components[c].name))
				continue;
			for (size_t q = 0; q < a->verify.nreqs; q++) {
				const struct trust_req *r = &a->verify.reqs[q];
				const struct trust_method *m = r->method;
				const char *root = trust_req_param(r, "trusted_root", NULL);
				char *rel = NULL;
				int lookup = !one_line && req_lookup(r);

				if (r->layered || (!lookup && !root))
					continue;
				/* only the first requirement of a method is its map */
				for (size_t k = 0; k < q; k++)
					if (a->verify.reqs[k].method == m)
						lookup = 0, root = NULL;
				if (!lookup && !root)
					continue;
				if (root && !(rel = copy_trust(dir, root, &copied, e)))
					goto out;
				if (!head)
					buf_addf(&out, "  %s:\n", p->components[c].name);
				if (head < 2)
					buf_adds(&out, "    artifacts:\n");
				if (!ahead)
					buf_addf(&out, "      %s:\n        verify:\n", a->name);
				head = 2;
				ahead = 1;
				buf_addf(&out, "          %s:\n", m->name);
				if (lookup)   /* the entry instead of the log (null: unset) */
					buf_addf(&out, "            %s: ~\n            %s: \"${url}%s\"\n",
						 m->lookup_param,
						 trust_method_aux(m, m->lookup_aux).param,
						 trust_method_aux(m, m->lookup_aux).suffix);
				if (rel)
					buf_addf(&out, "            trusted_root: \"%s\"\n", rel);
				free(rel);
			}
		}
	}
	if (!strcmp(out.ptr + out.len - 12, "components:\n"))
		buf_adds(&out, "  {}\n");
	ret = fs_write_atomic(path, out.ptr, out.len, 0644, e);
out:
	buf_release(&out);
	buf_release(&from);
	buf_release(&hdir);
	wb_strlist_release(&seen);
	wb_strlist_release(&copied);
	free(path);
	return ret;
}

/* The images the fetch pulled into DIR/registry/ and DIR/images/<key>/
 * (emit/mirror.h). The static tree of the distribution API: a web server
 * makes it a registry mirror as it is, which the next winbuild, containerd
 * and skopeo pull from by a mirror rule. The OCI layout: what the export's
 * own override reads, with no server (issue 42). */
static int write_images(struct wb_run *run, struct pipe_image *img, const char *dir,
			size_t *n, struct wb_err *e)
{
	struct cache c = CACHE_INIT;
	char *cdir;
	int ret;

	*n = 0;
	if (!img->plan.nimages)
		return 0;
	cdir = cache_default_dir(run->cache_dir, e);
	if (!cdir || cache_open(&c, cdir, 0, e) < 0) {
		free(cdir);
		return -1;
	}
	free(cdir);
	ret = mirror_write_images(&c, &img->plan, img->pulled, dir, n, e);
	cache_close(&c);
	return ret;
}

int cmd_mirror(int argc, char **argv, struct wb_run *run)
{
	const char *sign = NULL;
	const struct cmd_opt own[] = {
		{ 0, "--sign", NULL, "KEYFILE", "sign every artifact anew with this minisign secret\n"
		  "key (unencrypted: minisign -G -W); trust it with\n"
		  "signatures.keys and policy.require: signature", &sign, NULL, NULL },
		{ 0 },
	};
	const struct cmd_optset set = { OPTS_FETCH | OPT_JSON, own, 0, MIRROR_USAGE };
	struct wb_err e = WB_ERR_INIT;
	struct pipeline p;
	struct pipe_image *img;
	const struct plan *plan;
	const struct fetch_item *items;
	struct mirror_artifact *ma = NULL;
	struct minisign_seckey sk;
	struct mirror_opts o;
	struct mirror_stats st;
	size_t nimg = 0;
	int ret;

	if ((ret = cmd_parse_options(argc, argv, &set, run)))
		return ret;
	if (run->positional.nr != 2)
		return cmd_usage("%s", MIRROR_USAGE);
	memset(&o, 0, sizeof(o));
	/* the trusted comments' timestamp: the one parser, which refuses what
	 * it cannot read, before anything is fetched */
	if (cmd_source_date_epoch(time(NULL), &o.epoch, &e) < 0)
		return cmd_fail(&e);
	memset(&sk, 0, sizeof(sk));
	if (sign && (ret = load_seckey(sign, &sk)))
		return ret;
	cmd_json_set(run, "dir", json_string(run->positional.v[1]));
	pipe_init(&p, run, PIPE_FETCH);
	img = &p.images[0];
	plan = &img->plan;
	if (pipe_resolve(&p, img, &e) < 0) {
		ret = cmd_fail(&e);
		goto out;
	}
	ret = pipe_fetch(&p, img, &e);
	items = img->items;
	cmd_json_fetch(run, plan, items);
	if (ret < 0) {
		ret = pipe_fetch_failed(&p, img, &e);
		goto out;
	}
	ma = xcalloc(plan->nartifacts + 1, sizeof(*ma));
	for (size_t i = 0; i < plan->nartifacts; i++) {
		const struct verify_evidence *ev = &items[i].ev;

		ma[i].art = items[i].art;
		ma[i].path = items[i].path;
		ma[i].fd = items[i].has_fd ? items[i].fd : -1;
		ma[i].sha256 = items[i].sha256;
		ma[i].ev = ev;
	}
	o.dir = run->positional.v[1];
	o.sign = sign ? &sk : NULL;
	if (mirror_write(plan, ma, plan->nartifacts, &o, &st, &e) < 0 ||
	    write_override(plan, img->pulled, o.dir, &e) < 0 || write_images(run, img, o.dir, &nimg, &e) < 0) {
		ret = cmd_fail(&e);
		goto out;
	}
	cmd_json_set(run, "override", json_pack("s++", o.dir, "/", "winbuild-override.yaml"));
	cmd_json_set(run, "index", json_pack("s++", o.dir, "/", "index.json"));
	cmd_json_set(run, "written", json_pack("{s:I,s:I,s:I}", "artifacts",
		     (json_int_t)st.artifacts, "signatures", (json_int_t)st.signatures,
		     "unsigned", (json_int_t)st.unsigned_));
	cmd_json_set(run, "resigned", json_boolean(sign != NULL));
	cmd_json_set(run, "images", json_integer((json_int_t)nimg));
	if (!run->quiet && !run->json) {
		printf("%s: %zu artifacts, %zu signatures%s, index.json\n", o.dir,
		       st.artifacts, st.signatures, sign ? " (re-signed)" : "");
		printf("air gap: winbuild build %s -O %s/winbuild-override.yaml\n",
		       plan->name, o.dir);
		if (nimg)
			printf("%zu container image%s in %s/registry/<host>/: serve each as a "
			       "registry mirror (with its nginx-locations.conf)\n", nimg,
			       nimg == 1 ? "" : "s", o.dir);
		if (st.unsigned_ && !sign)
			printf("%zu artifacts carry no signature (verified by digest); "
			       "--sign KEYFILE signs every artifact\n", st.unsigned_);
	}
	ret = WB_OK;
out:
	OPENSSL_cleanse(&sk, sizeof(sk));
	free(ma);
	pipe_release(&p);
	return ret;
}
