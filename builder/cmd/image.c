/*
 * winbuild image pull: one container image, pinned by digest, pulled from
 * its registry into the cache and verified (fetch/registry.h), by hand, as
 * a recipe's images: will be (issue 33).
 *
 * @where the registry client (OCI distribution pull by digest, the token
 *   flow, credentials, every manifest and blob verified) -- by hand:
 *   `winbuild image pull`
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "cmd/pipeline.h"
#include "fetch/imgsource.h"
#include "lib/platform.h"
#include "stage/oci.h"
#include "trust/sigstore.h"

#define IMAGE_USAGE "image pull HOST/REPO[:TAG]@sha256:DIGEST --windows VERSION " \
	"[--allow-foreign-layers] [--cosign-identity ID --cosign-issuer URL | --cosign-key FILE] " \
	"[--trusted-root FILE] [--oci-archive FILE] [--offline] [--cache DIR] [--cacert FILE] " \
	"[--credentials FILE] [--netrc-file FILE] [--json]"

/* --windows: a Windows Server version of the platform table or a build
 * "10.0.N". The build prefix in OUT. */
static int windows_build(const char *v, char *out, size_t len)
{
	const struct platform_windows *w = platform_windows_find(v);

	if (w) {
		snprintf(out, len, "10.0.%s", w->build);
		return 0;
	}
	if (!strncmp(v, "10.0.", 5) && v[5] && strspn(v + 5, "0123456789") == strlen(v + 5) &&
	    strlen(v) < len) {
		snprintf(out, len, "%s", v);
		return 0;
	}
	return -1;
}

/* The pulled image as an OCI image-layout tar at PATH, written beside it
 * and renamed into place once complete (stage/oci.h). */
static int write_archive(struct cache *c, const struct registry_image *img,
			 const struct image_ref *ref, const char *path, struct wb_err *e)
{
	char *tmp = xasprintf("%s.tmp.XXXXXX", path), *name;
	time_t epoch;
	int fd, ret = -1;

	if (cmd_source_date_epoch(315532800, &epoch, e) < 0) {
		free(tmp);
		return -1;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		wb_error(e, WB_EIO, "cannot create '%s': %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	name = xasprintf("%s/%s%s%s", ref->host, ref->repo, ref->tag ? ":" : "",
			 ref->tag ? ref->tag : "");
	if (oci_archive_write(c, img, name, ref->tag, fd, epoch, NULL, e) < 0)
		goto out;
	if (fchmod(fd, 0644) < 0 || fsync(fd) < 0 || close(fd) < 0) {
		fd = -1;
		wb_error(e, WB_EIO, "cannot write '%s': %s", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		wb_error(e, WB_EIO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	if (ret < 0)
		unlink(tmp);
	free(tmp);
	free(name);
	return ret;
}

static json_t *blob_json(const struct registry_blob *b)
{
	json_t *o = json_object();

	json_object_set_new(o, "digest", json_string(b->digest));
	json_object_set_new(o, "size", json_integer((json_int_t)b->size));
	json_object_set_new(o, "media_type", json_string(b->media_type));
	if (b->foreign)
		json_object_set_new(o, "foreign", json_true());
	return o;
}

int cmd_image(int argc, char **argv, struct wb_run *run)
{
	const char *windows = NULL, *archive = NULL;
	const char *cid = NULL, *ciss = NULL, *ckey = NULL, *croot = NULL;
	int allow_foreign = 0;
	const struct cmd_opt opts[] = {
		{ 0, "--windows", NULL, "VERSION", "the Windows the image must run on: a\n"
		  "windows.version of the platform table or a build 10.0.N (required)",
		  &windows, NULL, NULL },
		{ 0, "--allow-foreign-layers", NULL, NULL, "fetch foreign (non-distributable)\n"
		  "layers from their urls instead of refusing the image", NULL, NULL,
		  &allow_foreign },
		{ 0, "--oci-archive", NULL, "FILE", "also write the image as an OCI image-layout\n"
		  "tar (what ctr images import takes)", &archive, NULL, NULL },
		{ 0, "--cosign-identity", NULL, "ID", "require a keyless cosign signature of the\n"
		  "pin by this signer (with --cosign-issuer)", &cid,
		  NULL, NULL },
		{ 0, "--cosign-issuer", NULL, "URL", "the signer's OIDC issuer",
		  &ciss, NULL, NULL },
		{ 0, "--cosign-key", NULL, "FILE", "require a cosign signature by this PEM\n"
		  "public key instead", &ckey, NULL, NULL },
		{ 0, "--trusted-root", NULL, "FILE", "the Sigstore trusted root (default: the\n"
		  "shipped one)", &croot, NULL, NULL },
		{ 0 },
	};
	const struct cmd_optset set = {
		OPT_CACHE | OPT_CACERT | OPT_CREDS | OPT_NETRC | OPT_OFFLINE | OPT_JSON | OPT_QUIET,
		opts, 0, IMAGE_USAGE
	};
	struct wb_err e = WB_ERR_INIT;
	struct cache c = CACHE_INIT;
	struct image_ref ref;
	struct registry_image img;
	struct imgsource src;
	struct registry_opts *ro = &src.o;
	struct creds creds = { NULL, 0 };
	struct trust_policy policy;
	struct fetch_transport t;
	struct plan_image_cosign cos;
	struct ocisig_policy pol;
	struct sigstore_root root;
	struct buf key = BUF_INIT;
	char build[32], versions[256];
	char *dir;
	int ret, want, r;

	if ((ret = cmd_parse_options(argc, argv, &set, run)))
		return ret;
	if (run->positional.nr != 2 || strcmp(run->positional.v[0], "pull")) {
		if (run->positional.nr && strcmp(run->positional.v[0], "pull"))
			cmd_errorf("unknown image command '%s'", run->positional.v[0]);
		return cmd_usage("%s", IMAGE_USAGE);
	}
	platform_set_join(PLATFORM_SET_VERSIONS, ", ", versions, sizeof(versions));
	if (!windows) {
		cmd_errorf("image pull: --windows VERSION is required (%s or a build 10.0.N)",
			   versions);
		return cmd_usage("%s", IMAGE_USAGE);
	}
	if (windows_build(windows, build, sizeof(build)) < 0) {
		cmd_errorf("image pull: --windows '%s' is not %s or a build 10.0.N", windows,
			   versions);
		return WB_EUSAGE;
	}
	if (image_ref_parse(run->positional.v[1], &ref, &e) < 0)
		return cmd_fail(&e);
	if (!ref.digest[0]) {
		cmd_errorf("image '%s': no digest; winbuild pulls only by digest "
			   "(HOST/REPO:TAG@sha256:...)", run->positional.v[1]);
		image_ref_release(&ref);
		return WB_EUSAGE;
	}
	if ((ckey && (cid || ciss)) || !cid != !ciss || (croot && !cid && !ckey)) {
		cmd_errorf("image pull: --cosign-identity and --cosign-issuer (keyless), or "
			   "--cosign-key, with --trusted-root only beside them");
		image_ref_release(&ref);
		return WB_EUSAGE;
	}
	memset(&cos, 0, sizeof(cos));
	cos.identity = (char *)cid;
	cos.issuer = (char *)ciss;
	cos.key = (char *)ckey;
	cos.trusted_root = (char *)croot;
	memset(&root, 0, sizeof(root));
	want = pipe_image_cosign_policy("image pull --cosign", &cos, &pol, &root, &key, &e);
	if (want < 0) {
		sigstore_root_release(&root);
		buf_release(&key);
		image_ref_release(&ref);
		return cmd_fail(&e);
	}
	dir = cache_default_dir(run->cache_dir, &e);
	if (!dir || cache_open(&c, dir, 0, &e) < 0) {
		free(dir);
		image_ref_release(&ref);
		return cmd_fail(&e);
	}
	free(dir);
	/* a registry is https only: no plain http hop, whatever a recipe's
	 * policy would allow for downloads */
	memset(&policy, 0, sizeof(policy));
	t.policy = &policy;
	t.cacert = run->cacert ? run->cacert : getenv("SSL_CERT_FILE");
	memset(&src, 0, sizeof(src));
	src.kind = IMGSOURCE_REGISTRY;
	ro->t = &t;
	ro->os_version = build;
	ro->allow_foreign = allow_foreign;
	ro->offline = run->offline;
	ro->cosign = want > 0 ? &pol : NULL;
	/* the registry's credentials, as a recipe's images get them
	 * (pipe_fetch_images); --offline asks no server */
	r = run->offline ? 0 : creds_load(&creds, run->credentials, run->netrc_file, &e);
	ro->creds = run->offline ? NULL : &creds;
	if (r == 0)
		r = imgsource_pull(&c, &src, &ref, &img, &e);
	creds_release(&creds);
	sigstore_root_release(&root);
	buf_release(&key);
	if (r < 0) {
		cache_close(&c);
		image_ref_release(&ref);
		return cmd_fail(&e);
	}
	if (archive && write_archive(&c, &img, &ref, archive, &e) < 0) {
		registry_image_release(&img);
		cache_close(&c);
		image_ref_release(&ref);
		return cmd_fail(&e);
	}
	if (run->json) {
		json_t *layers = json_array();

		for (size_t i = 0; i < img.nlayers; i++)
			json_array_append_new(layers, blob_json(&img.layers[i]));
		cmd_json_set(run, "image", json_string(run->positional.v[1]));
		if (img.list_digest[0])
			cmd_json_set(run, "index_digest", json_string(img.list_digest));
		cmd_json_set(run, "manifest_digest", json_string(img.manifest_digest));
		cmd_json_set(run, "os_version", json_string(img.os_version));
		cmd_json_set(run, "config", blob_json(&img.config));
		cmd_json_set(run, "layers", layers);
		cmd_json_set(run, "bytes_downloaded",
			     json_integer((json_int_t)img.bytes_downloaded));
		if (img.sig_digest[0])
			cmd_json_set(run, "cosign", ocisig_evidence_json(&img.sig, img.sig_digest));
	} else if (!run->quiet) {
		unsigned long long total = img.config.size;

		for (size_t i = 0; i < img.nlayers; i++)
			total += img.layers[i].size;
		printf("pulled %s: manifest %s (windows/amd64 %s), config and %zu layer%s, "
		       "%llu bytes (%llu downloaded), verified and cached\n",
		       run->positional.v[1], img.manifest_digest, img.os_version, img.nlayers,
		       img.nlayers == 1 ? "" : "s", total, img.bytes_downloaded);
		if (img.sig_digest[0]) {
			struct buf d = BUF_INIT;

			ocisig_describe(&img.sig, &d);
			printf("cosign signature %s verified: %s\n", img.sig_digest, d.ptr);
			buf_release(&d);
		}
	}
	registry_image_release(&img);
	image_ref_release(&ref);
	cache_close(&c);
	return WB_OK;
}
