/* The site's Authenticode signature on selected staged files (sitesign.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "stage/sitesign.h"
#include "trust/authenticode.h"
#include "trust/digest.h"

int sitesign_check(const struct plan *plan, const struct sign_opts *so,
		   int require_use, struct wb_err *e)
{
	const struct plan_sitesign *s = &plan->site_signing;

	if (s->set && !so) {
		char at[512];

		wb_origin_format(&s->origin, at, sizeof(at));
		return wb_error(e, WB_EUSAGE, "%s: 'site_signing' needs the site's code-signing "
				"key: give --sign-key with --sign-cert, --sign-pkcs12 or "
				"--sign-pkcs11-uri (docs/authenticode.md, \"Site signing\")", at);
	}
	if (!s->set && so && require_use)
		return wb_error(e, WB_EUSAGE, "the --sign-* options sign nothing here: the "
				"recipe has no 'site_signing' (docs/authenticode.md)");
	return so && s->set ? sign_check_opts(so, e) : 0;
}

int sitesign_artifact(const struct plan *plan, const struct plan_artifact *a)
{
	const struct plan_sitesign *s = &plan->site_signing;

	return s->set && wb_strlist_has(&s->components, a->component);
}

/* Sign F (at FULL) and check the result; fills F on success. */
static int sign_one(struct tree_file *f, const char *full, const struct plan *plan,
		    const struct sign_opts *so, time_t epoch, struct wb_err *e)
{
	const struct plan_sitesign *s = &plan->site_signing;
	const struct plan_component *c = plan_find_component(plan, f->component);
	struct authenticode_policy pol;
	struct authenticode_result *r;
	struct digest_result d;
	char hex[65];

	/* the upstream check comes first, on the upstream bytes: a component
	 * with an Authenticode policy has its result here already */
	if (c && c->authenticode.set && !f->authenticode)
		return wb_error(e, WB_EVERIFY, "'%s': its upstream Authenticode signature "
				"was not checked before site signing", f->path);
	/* sign exactly the bytes that were verified */
	if (digest_file(full, DIGEST_SHA256, &d, e) < 0)
		return -1;
	digest_hex(d.sha256, 32, hex);
	if (strcmp(hex, f->sha256))
		return wb_error(e, WB_EVERIFY, "'%s' changed after it was verified (expected "
				"sha256 %s, got %s); nothing signed", f->path, f->sha256, hex);
	if (sign_file(so, full, (long long)epoch, e) < 0)
		return -1;
	if (digest_file(full, DIGEST_SHA256, &d, e) < 0)
		return -1;
	memset(&pol, 0, sizeof(pol));
	pol.require = 1;
	pol.roots = s->roots;
	pol.publishers = (const char *const *)s->publishers.v;
	pol.npublishers = s->publishers.nr;
	r = xcalloc(1, sizeof(*r));
	if (authenticode_verify_path(full, f->path, &pol, r, e) < 0) {
		authenticode_result_release(r);
		free(r);
		if (e->code != WB_EIO)
			e->code = WB_EVERIFY;
		wb_error_prefix(e, "the site-signed file does not verify with "
				"site_signing.roots and publishers");
		return -1;
	}
	memcpy(f->upstream_sha256, f->sha256, sizeof(f->upstream_sha256));
	digest_hex(d.sha256, 32, f->sha256);
	f->size = d.size;
	f->site_signature = r;
	return 0;
}

/*
 * @where where the site signs staged executables (`site_signing`) -- after
 *   the upstream checks, on the run's private copies
 */
int sitesign_tree(struct tree *t, const struct plan *plan,
		  const struct sign_opts *so, time_t epoch, struct wb_err *e)
{
	if (!plan->site_signing.set)
		return 0;
	if (!so)
		return sitesign_check(plan, so, 0, e);
	for (size_t i = 0; i < t->nfiles; i++) {
		struct tree_file *f = &t->files[i];
		char *full;
		int ret;

		if (!f->artifact ||
		    !plan_sitesign_selects(&plan->site_signing, f->component, f->path))
			continue;
		full = fs_join(t->root, f->path);
		ret = sign_one(f, full, plan, so, epoch, e);
		free(full);
		if (ret < 0) {
			wb_error_prefix(e, "site signing: artifact '%s'", f->artifact);
			return -1;
		}
	}
	return 0;
}

int sitesign_check_locked_set(const struct lock_signed *now, size_t n,
			      const struct lockfile *lf, const char *lock_path,
			      struct wb_err *e)
{
	for (size_t i = 0; i < n; i++) {
		const struct lock_signed *f = &now[i];
		const struct lock_signed *ls = lockfile_find_signed(lf, f->path);

		if (!ls)
			return wb_error(e, WB_EVERIFY, "--locked: the site-signed file '%s' "
					"(artifact '%s') is not in the lock file '%s'; stage "
					"once without --locked to record it, and review the "
					"lock file's diff", f->path, f->artifact, lock_path);
		if (strcmp(ls->upstream_sha256, f->upstream_sha256))
			return wb_error(e, WB_EVERIFY, "--locked: '%s' (artifact '%s'): the "
					"lock file '%s' recorded upstream sha256 %s before site "
					"signing, these bytes are %s", f->path, f->artifact,
					lock_path, ls->upstream_sha256, f->upstream_sha256);
		if (strcmp(ls->signer_sha256, f->signer_sha256))
			return wb_error(e, WB_EVERIFY, "--locked: '%s' (artifact '%s') is "
					"signed by certificate %s ('%s'); the lock file '%s' "
					"recorded %s ('%s'): the site's signing certificate "
					"changed", f->path, f->artifact, f->signer_sha256,
					f->signer ? f->signer : "", lock_path,
					ls->signer_sha256, ls->signer);
		if (!ls->timestamped && strcmp(ls->sha256, f->sha256))
			return wb_error(e, WB_EVERIFY, "--locked: the site-signed '%s' "
					"(artifact '%s') is sha256 %s; the lock file '%s' "
					"recorded %s: the same key, certificate and "
					"SOURCE_DATE_EPOCH sign to the same bytes, so one of "
					"them (or osslsigncode) changed", f->path, f->artifact,
					f->sha256, lock_path, ls->sha256);
	}
	if (n != lf->nsigned)
		for (size_t i = 0; i < lf->nsigned; i++) {
			size_t j = 0;

			while (j < n && strcmp(now[j].path, lf->sv[i].path))
				j++;
			if (j == n)
				return wb_error(e, WB_EVERIFY, "--locked: the lock file '%s' "
						"records the site-signed file '%s' (artifact "
						"'%s'), which this stage did not sign", lock_path,
						lf->sv[i].path, lf->sv[i].artifact);
		}
	return 0;
}

int sitesign_check_locked(const struct tree *t, const struct lockfile *lf,
			  const char *lock_path, struct wb_err *e)
{
	size_t n;
	struct lock_signed *now = sitesign_lock_entries(t, 0, &n);
	int ret = sitesign_check_locked_set(now, n, lf, lock_path, e);

	free(now);
	return ret;
}

struct lock_signed *sitesign_manifest_entries(const struct staged_manifest *m, size_t *n)
{
	struct lock_signed *v = xcalloc(m->nfiles + 1, sizeof(*v));

	*n = 0;
	for (size_t i = 0; i < m->nfiles; i++) {
		const struct staged_file *f = &m->files[i];
		struct lock_signed *ls;

		if (!f->site_signed)
			continue;
		ls = &v[(*n)++];
		ls->path = f->tree_path;
		ls->artifact = f->artifact;
		ls->signer = f->site_signer;
		snprintf(ls->signer_sha256, sizeof(ls->signer_sha256), "%s", f->site_thumbprint);
		memcpy(ls->upstream_sha256, f->upstream_sha256, 65);
		memcpy(ls->sha256, f->sha256, 65);
	}
	return v;
}

struct lock_signed *sitesign_lock_entries(const struct tree *t, int timestamped,
					  size_t *n)
{
	struct lock_signed *v = xcalloc(t->nfiles + 1, sizeof(*v));

	*n = 0;
	for (size_t i = 0; i < t->nfiles; i++) {
		const struct tree_file *f = &t->files[i];
		struct lock_signed *ls;

		if (!f->site_signature)
			continue;
		ls = &v[(*n)++];
		ls->path = f->path;
		ls->artifact = (char *)f->artifact;
		ls->signer = f->site_signature->subject;   /* NULL: "" (lockfile.c) */
		memcpy(ls->signer_sha256, f->site_signature->thumbprint, 65);
		memcpy(ls->upstream_sha256, f->upstream_sha256, 65);
		memcpy(ls->sha256, f->sha256, 65);
		ls->timestamped = timestamped;
	}
	return v;
}
