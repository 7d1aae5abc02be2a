/*
 * The fetch step's container images (issue 33): after the artifacts, each
 * of the plan's images: pulled by its digest into the cache through the
 * image source seam (fetch/imgsource.h), for the recipe's Windows build.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "cmd/pipeline.h"
#include "fetch/lockfile.h"
#include "fetch/imgsource.h"
#include "lib/fs.h"
#include "lib/platform.h"
#include "trust/sigstore.h"

/* The policy of IM's cosign: (plan.h) in POL, its root in ROOT and key
 * in KEY (the caller releases both). 0 with POL unused when none is
 * required.
 * @where where a container image's cosign signature is checked -- the policy
 *   loaded
 */
int pipe_image_cosign_policy(const char *what, const struct plan_image_cosign *c,
			     struct ocisig_policy *pol, struct sigstore_root *root,
			     struct buf *key, struct wb_err *e)
{
	char data[4096], *path;
	int r;

	memset(pol, 0, sizeof(*pol));
	if (!c->identity && !c->key)
		return 0;
	path = c->trusted_root ? xstrdup(c->trusted_root) :
	       fs_join(cmd_data_dir(data, sizeof(data)), "recipes/trust/sigstore/trusted_root.json");
	r = sigstore_root_load(path, root, e);
	free(path);
	if (r < 0) {
		wb_error_prefix(e, "%s: trusted root", what);
		return -1;
	}
	if (c->key && fs_read_file(c->key, SIGSTORE_INPUT_MAX, WB_EUSAGE, key, e) < 0) {
		wb_error_prefix(e, "%s: key", what);
		return -1;
	}
	pol->root = root;
	pol->identity = c->identity;
	pol->issuer = c->issuer;
	if (c->key) {
		pol->key_pem = key->ptr;
		pol->key_pem_len = key->len;
	}
	return 1;
}

/* lock and lock --matrix: the pins --accept-new made, images and artifacts
 * alike (pipeline.h) */
json_t *pipe_report_pinned(struct wb_run *run, const struct pipe_image *img)
{
	const struct plan *plan = &img->plan;
	const struct fetch_item *items = img->items;
	json_t *pinned = json_array();

	for (size_t i = 0; items && i < plan->nartifacts; i++)
		if (items[i].ev.methods & VERIFY_ACCEPTED_NEW) {
			/* on stderr with --json: stdout holds only the result */
			fprintf(run->json ? stderr : stdout, "pinned %s: sha256 %s, %llu bytes, "
				"from %s (accepted as new: review this before trusting it)\n",
				items[i].art->name, items[i].sha256, items[i].size, items[i].url);
			json_array_append_new(pinned, json_string(items[i].art->name));
		}
	for (size_t i = 0; img->pulled && i < plan->nimages; i++)
		if (img->pulled[i].accepted_new) {
			const struct plan_image *im = &plan->images[i];

			fprintf(run->json ? stderr : stdout, "pinned image %s: %s:%s at %s, "
				"manifest %s for windows/amd64 %s%s (accepted as new: review "
				"this before trusting it)\n", im->key, im->name, im->tag,
				img->pulled[i].pinned, img->pulled[i].manifest_digest,
				img->pulled[i].os_version, img->pulled[i].sig_digest[0] ?
				", cosign signature verified" : "");
			json_array_append_new(pinned, json_sprintf("images.%s", im->key));
		}
	return pinned;
}

int pipe_image_unpinned(const struct plan_image *im, const struct lock_image *li,
			int accept_new, struct wb_err *e)
{
	if (im->digest || li || (accept_new && im->tag))
		return 0;
	wb_origin_error(e, &im->origin, "images.%s: '%s%s%s' is not pinned (needs_pin: %s); "
			"fetch pulls only by digest: set images.%s.digest, or let 'winbuild "
			"lock --accept-new' pin its tag", im->key, im->name, im->tag ? ":" : "",
			im->tag ? im->tag : "", im->needs_pin, im->key);
	return -1;
}

/*
 * @where the registry client (OCI distribution pull by digest, the token
 *   flow, credentials, every manifest and blob verified) -- pulled after the
 *   artifacts (`tests/cli/images.bats`, `tests/registry/push.py`,
 *   `tests/registry/regfront.py`)
 */
int pipe_fetch_images(struct wb_run *run, struct plan *plan, const struct lockfile *lf,
		      int accept_new, struct cache *c, struct registry_image *out,
		      struct wb_err *e)
{
	const struct platform_windows *w = platform_windows_find(plan->windows_version);
	struct trust_policy policy;
	struct fetch_transport t;
	struct registry_opts ro;
	struct creds creds = { NULL, 0 };
	char build[32];
	int ret = -1;

	if (!w)
		return wb_error(e, WB_EUSAGE, "no Windows Server '%s' in the platform table",
				plan->windows_version);
	snprintf(build, sizeof(build), "10.0.%s", w->build);
	/* the hops a registry's answers may take: https, or http where
	 * policy.allow_http (never down from https, fetch/hop.c); the policy's
	 * other knobs are about artifacts and do not apply */
	memset(&policy, 0, sizeof(policy));
	policy.allow_http = plan->policy.allow_http;
	t.policy = &policy;
	t.cacert = run->cacert ? run->cacert : getenv("SSL_CERT_FILE");
	memset(&ro, 0, sizeof(ro));
	ro.t = &t;
	ro.os_version = build;
	ro.offline = run->offline;
	/* the credentials the artifacts' fetch uses (fetch/engine.c), read
	 * once for every image; an --offline run asks no server */
	if (plan->nimages && !run->offline) {
		if (creds_load(&creds, run->credentials, run->netrc_file, e) < 0)
			return -1;
		ro.creds = &creds;
	}
	for (size_t i = 0; i < plan->nimages; i++) {
		struct plan_image *im = &plan->images[i];
		const struct lock_image *li = lockfile_find_image(lf, im->key);
		struct image_ref ref;
		struct registry_image img;
		struct ocisig_policy pol;
		struct sigstore_root root;
		struct buf key = BUF_INIT;
		struct imgsource src;
		int r, want;

		/* the lock settles a needs_pin image, as a lock pin does an
		 * artifact's (--locked checked they agree: check_locked) */
		if (!im->digest && li)
			im->digest = xstrdup(li->digest);
		if (pipe_image_unpinned(im, NULL, accept_new, e))
			goto out;
		/* lock --accept-new: the tag's digest now, pulled (and its
		 * signature checked) as a pin; recorded as accepted_new */
		ro.resolve_tag = !im->digest;
		if (imgsource_ref(im, &ref, e) < 0)
			goto out;
		memset(&root, 0, sizeof(root));
		/* its source: the kind, and for a registry the mirror rule */
		want = imgsource_for(&src, plan, im, &ro, e);
		if (want == 0) {
			char *what = xasprintf("images.%s.cosign", im->key);

			want = pipe_image_cosign_policy(what, &im->cosign, &pol, &root, &key, e);
			free(what);
		}
		pol.tlog_threshold = plan->policy.tlog_threshold;
		src.o.cosign = want > 0 ? &pol : NULL;
		r = want < 0 ? -1 : imgsource_pull(c, &src, &ref, &img, e);
		imgsource_release(&src);
		image_ref_release(&ref);
		sigstore_root_release(&root);
		buf_release(&key);
		if (r < 0)
			goto out;
		if (!im->digest) {
			im->digest = xstrdup(img.pinned);
			img.accepted_new = 1;
		}
		if (run->locked && li && strcmp(li->manifest_digest, img.manifest_digest)) {
			wb_error(e, WB_EVERIFY, "--locked: image '%s' at %s has manifest %s for "
				 "Windows build %s, the lock has %s; run 'winbuild lock'",
				 im->key, im->digest, img.manifest_digest, build,
				 li->manifest_digest);
			registry_image_release(&img);
			goto out;
		}
		if (!run->quiet)
			wb_log(&run->log, WB_LOG_INFO, "fetched image %s (%s@%s: windows/amd64 "
			       "%s, manifest %s, %zu layer%s)", im->key, im->name, im->digest,
			       img.os_version, img.manifest_digest, img.nlayers,
			       img.nlayers == 1 ? "" : "s");
		if (want > 0 && !run->quiet) {
			struct buf d = BUF_INIT;

			ocisig_describe(&img.sig, &d);
			wb_log(&run->log, WB_LOG_INFO, "image %s: cosign signature %s verified: %s",
			       im->key, img.sig_digest, d.ptr);
			buf_release(&d);
		}
		out[i] = img;
	}
	ret = 0;
out:
	creds_release(&creds);
	return ret;
}

/*
 * @where container images in the lock (pin, build manifest, os.version,
 *   cosign evidence)
 */
json_t *pipe_images_lock_json(const struct plan *plan, const struct registry_image *pulled)
{
	json_t *o = json_object();

	for (size_t i = 0; pulled && i < plan->nimages; i++) {
		const struct plan_image *im = &plan->images[i];
		const struct registry_image *img = &pulled[i];
		json_t *v;

		if (!img->pinned[0])
			continue;
		v = json_pack("{s:s, s:o, s:s, s:s, s:s}", "name", im->name,
			      "tag", im->tag ? json_string(im->tag) : json_null(),
			      "digest", img->pinned, "manifest_digest", img->manifest_digest,
			      "os_version", img->os_version);
		if (img->accepted_new)
			json_object_set_new(v, "accepted_new", json_true());
		if (img->sig_digest[0])
			json_object_set_new(v, "cosign", ocisig_evidence_json(&img->sig,
									      img->sig_digest));
		json_object_set_new(o, im->key, v);
	}
	return o;
}
