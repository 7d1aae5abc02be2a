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
#include "lib/platform.h"

int pipe_fetch_images(struct wb_run *run, const struct plan *plan, struct cache *c,
		      struct wb_err *e)
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
	ro.t = &t;
	ro.os_version = build;
	ro.offline = run->offline;
	for (size_t i = 0; i < plan->nimages; i++) {
		const struct plan_image *im = &plan->images[i];
		struct image_ref ref;
		struct registry_image img;
		char *s;
		int r;

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
		r = registry_pull(c, &ref, &ro, &img, e);
		image_ref_release(&ref);
		if (r < 0)
			return -1;
		if (!run->quiet)
			wb_log(&run->log, WB_LOG_INFO, "fetched image %s (%s@%s: windows/amd64 "
			       "%s, manifest %s, %zu layer%s)", im->key, im->name, im->digest,
			       img.os_version, img.manifest_digest, img.nlayers,
			       img.nlayers == 1 ? "" : "s");
		registry_image_release(&img);
	}
	return 0;
}
