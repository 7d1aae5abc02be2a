/* @where image-builder var file (names, mirror URLs, lock digests) */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "emit/imagebuilder.h"
#include "lib/json.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/names.h"
#include "lib/text.h"

char *imagebuilder_mirror_url(const char *mirror, const char *up)
{
	const char *why = NULL;
	char *rel = names_url_path(up, &why), *url;
	size_t mlen = strlen(mirror);

	if (!rel)
		return NULL;
	while (mlen && mirror[mlen - 1] == '/')
		mlen--;
	url = xasprintf("%.*s/%s", (int)mlen, mirror, rel);
	free(rel);
	return url;
}

static int locked(const struct lockfile *lf, const char *name,
		  const struct lock_entry **out, struct wb_err *e)
{
	*out = lockfile_find(lf, name);
	if (!*out)
		return wb_error(e, WB_EUSAGE, "artifact '%s' is not in the lock: run "
				"'winbuild lock' first", name);
	return 0;
}

static void set_str(json_t *o, const char *k, const char *v)
{
	json_object_set_new(o, k, json_string(v));
}

int imagebuilder_write(const char *path, const struct plan *p,
		       const struct lockfile *lf, const char *mirror,
		       struct wb_strlist *warnings, struct wb_err *e)
{
	const struct plan_artifact *a;
	const struct lock_entry *le;
	json_t *root = json_object();
	char *s = NULL, *dir = NULL, *url = NULL;
	int ret = -1;

	/* every value below is a JSON string: a --mirror-url that is not
	 * UTF-8 would make json_string() fail and the key vanish */
	if (!text_utf8_valid(mirror, strlen(mirror))) {
		wb_error(e, WB_EUSAGE, "--mirror-url is not valid UTF-8");
		goto out;
	}
	if (strncmp(mirror, "http://", 7) && strncmp(mirror, "https://", 8) &&
	    strncmp(mirror, "file://", 7)) {
		wb_error(e, WB_EUSAGE, "--mirror-url '%s' is not an http(s) or file URL", mirror);
		goto out;
	}

	if ((a = plan_find_artifact(p, "containerd"))) {
		if (locked(lf, a->name, &le, e))
			goto out;
		url = imagebuilder_mirror_url(mirror, a->upstream_url);
		set_str(root, "containerd_url", url);
		set_str(root, "containerd_sha256_windows", le->sha256);
		set_str(root, "containerd_version", a->version);
		free(url);
		url = NULL;
	} else {
		wb_strlist_push(warnings, "no containerd artifact: containerd_url left out");
	}

	if ((a = plan_find_artifact(p, "kubelet"))) {
		char *slash;

		if (locked(lf, a->name, &le, e))
			goto out;
		url = imagebuilder_mirror_url(mirror, a->upstream_url);
		slash = url ? strrchr(url, '/') : NULL;
		if (slash)
			*slash = '\0';   /* kubernetes_base_url is the directory */
		set_str(root, "kubernetes_base_url", url);
		s = xasprintf("v%s", a->version);
		set_str(root, "kubernetes_semver", s);
		free(s);
		s = NULL;
		set_str(root, "kubernetes_install_path", "c:\\k");
		free(url);
		url = NULL;
		/* image-builder downloads the other binaries from the same base */
		for (size_t i = 0; i < p->nartifacts; i++)
			if (!strcmp(p->artifacts[i].component, a->component) &&
			    !lockfile_find(lf, p->artifacts[i].name)) {
				wb_error(e, WB_EUSAGE, "artifact '%s' is not in the lock: run "
					 "'winbuild lock' first", p->artifacts[i].name);
				goto out;
			}
	} else {
		wb_strlist_push(warnings, "no kubelet artifact: kubernetes_base_url left out");
	}

	if ((a = plan_find_artifact(p, "cloudbase-init"))) {
		if (locked(lf, a->name, &le, e))
			goto out;
		url = imagebuilder_mirror_url(mirror, a->upstream_url);
		set_str(root, "cloudbase_init_url", url);
		set_str(root, "cloudbase_init_version", a->version);
		free(url);
		url = NULL;
	}

	if ((a = plan_find_artifact(p, "nssm"))) {
		size_t n = strlen(a->upstream_url);

		if (locked(lf, a->name, &le, e))
			goto out;
		if (n > 4 && !strcmp(a->upstream_url + n - 4, ".exe")) {
			url = imagebuilder_mirror_url(mirror, a->upstream_url);
			set_str(root, "nssm_url", url);
			free(url);
			url = NULL;
		} else {
			wb_strlist_push(warnings, "nssm_url left out: image-builder downloads "
					"nssm.exe itself, the recipe's nssm artifact is an archive");
		}
	}

	set_str(root, "pause_image", p->pause_image);
	set_str(root, "runtime", "containerd");
	set_str(root, "windows_service_manager",
		!strcmp(p->service_manager, "nssm") ? "nssm" : "windows_service");

	dir = fs_dirname(path);
	if (fs_mkdir_p(dir, 0755, e))
		goto out;
	ret = json_write_file(path, root, JSON_INDENT(2) | JSON_SORT_KEYS, e);
out:
	json_decref(root);
	free(s);
	free(dir);
	free(url);
	return ret;
}
