/*
 * The fetch step's container images (issue 33): after the artifacts, each
 * of the plan's images: pulled by its digest into the cache through the
 * registry client (fetch/registry.h), for the recipe's Windows build.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/pipeline.h"
#include "fetch/registry.h"
#include "lib/fs.h"
#include "lib/platform.h"
#include "trust/sigstore.h"

/* The policy of IM's cosign: (plan.h) in POL, its root in ROOT and key
 * in KEY (the caller releases both). 0 with POL unused when none is
 * required. */
static int cosign_policy(const struct plan_image *im, struct ocisig_policy *pol,
			 struct sigstore_root *root, struct buf *key, struct wb_err *e)
{
	const struct plan_image_cosign *c = &im->cosign;
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
		wb_error_prefix(e, "images.%s.cosign: trusted root", im->key);
		return -1;
	}
	if (c->key && fs_read_file(c->key, SIGSTORE_INPUT_MAX, WB_EUSAGE, key, e) < 0) {
		wb_error_prefix(e, "images.%s.cosign.key", im->key);
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

int pipe_fetch_images(struct wb_run *run, const struct plan *plan, struct cache *c,
		      struct registry_image *out, struct wb_err *e)
{
	const struct platform_windows *w = platform_windows_find(plan->windows_version);
	struct trust_policy policy;
	struct fetch_transport t;
	struct registry_opts ro;
	char build[32];

	if (!w)
		return wb_error(e, WB_EUSAGE, "no Windows Server '%s' in the platform table",
				plan->windows_version);
	snprintf(build, sizeof(build), "10.0.%s", w->build);
	/* a registry is https only, whatever policy.allow_http allows for
	 * downloads: the policy's other knobs do not apply to it */
	memset(&policy, 0, sizeof(policy));
	t.policy = &policy;
	t.cacert = run->cacert ? run->cacert : getenv("SSL_CERT_FILE");
	memset(&ro, 0, sizeof(ro));
	ro.t = &t;
	ro.os_version = build;
	ro.offline = run->offline;
	for (size_t i = 0; i < plan->nimages; i++) {
		const struct plan_image *im = &plan->images[i];
		struct image_ref ref;
		struct registry_image img;
		struct ocisig_policy pol;
		struct sigstore_root root;
		struct buf key = BUF_INIT;
		char *s;
		int r, want;

		if (!im->digest)
			return wb_origin_error(e, &im->origin, "images.%s: '%s%s%s' is not "
					       "pinned (needs_pin: %s); fetch pulls only by "
					       "digest: set images.%s.digest", im->key,
					       im->name, im->tag ? ":" : "",
					       im->tag ? im->tag : "", im->needs_pin, im->key);
		s = xasprintf("%s%s%s@%s", im->name, im->tag ? ":" : "", im->tag ? im->tag : "",
			      im->digest);
		r = image_ref_parse(s, &ref, e);
		free(s);
		if (r < 0)
			return -1;
		ro.allow_foreign = im->allow_foreign_layers;
		memset(&root, 0, sizeof(root));
		want = cosign_policy(im, &pol, &root, &key, e);
		ro.cosign = want > 0 ? &pol : NULL;
		r = want < 0 ? -1 : registry_pull(c, &ref, &ro, &img, e);
		image_ref_release(&ref);
		sigstore_root_release(&root);
		buf_release(&key);
		if (r < 0)
			return -1;
		if (!run->quiet)
			wb_log(&run->log, WB_LOG_INFO, "fetched image %s (%s@%s: windows/amd64 "
			       "%s, manifest %s, %zu layer%s)", im->key, im->name, im->digest,
			       img.os_version, img.manifest_digest, img.nlayers,
			       img.nlayers == 1 ? "" : "s");
		if (ro.cosign && !run->quiet)
			wb_log(&run->log, WB_LOG_INFO, "image %s: cosign signature %s verified: "
			       "%s%s%s%s, log index %lld, integrated time %lld", im->key,
			       img.sig_digest, img.sig.identity ? img.sig.identity : "key sha256:",
			       img.sig.identity ? " (" : img.sig.key_sha256,
			       img.sig.issuer ? img.sig.issuer : "", img.sig.identity ? ")" : "",
			       img.sig.log_index, img.sig.integrated_time);
		if (out)
			out[i] = img;
		else
			registry_image_release(&img);
	}
	return 0;
}
