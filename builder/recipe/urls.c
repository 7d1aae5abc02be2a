/*
 * URLs and names that become paths: the scheme and character checks, the
 * mirror layout check, the image's mirrors: (urls_convert_mirrors), and the
 * mirror rewrite (urls_apply_mirrors: where a URL is rewritten, mirror_only,
 * allow_http).
 * @where where a URL is rewritten (mirrors, `mirror_only`, `allow_http`) --
 *   the mirror rules
 *
 * @where the one validator for names that become paths (artifact keys,
 *   component and image names, mirror URL segments) -- the recipe's checks of
 *   names and URL layouts
 *
 * @where a secret in a recipe or override URL refused at plan time
 */
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/names.h"
#include "lib/redact.h"
#include "lib/text.h"
#include "lib/url.h"
#include "recipe/resolve_int.h"
#include "recipe/schema.h"

int urls_check(struct resolver *r, const char *url, const struct wb_origin *o,
	      const char *what)
{
	struct wb_url u;
	char sc[16];

	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return err_at(r, o, "'%s' holds a space or control character: '%s'",
				      what, url);
	/* read by libcurl's URL API (lib/url.h), as the request and the
	 * origin rule will read it: a URL libcurl refuses ("https://u:p@ss@h/"
	 * has a second '@') is refused here, at its place in the recipe,
	 * rather than failing as a transfer after the plan accepted it */
	wb_url_scheme(url, sc);
	if (*sc && strcmp(sc, "https") && strcmp(sc, "http") && strcmp(sc, "file"))
		return err_at(r, o, "'%s' must be an https, http or file URL, not '%s'",
			      what, url);
	/* libcurl reads HTTPS:// as https://, but mirror rules (a prefix),
	 * policy.allow_http and the mirror layout compare URLs as written */
	if (*sc && strncmp(url, sc, strlen(sc)))
		return err_at(r, o, "'%s': write the scheme in lowercase ('%s://'), as "
			      "mirror rules and policy compare URLs as written: '%s'",
			      what, sc, url);
	memset(&u, 0, sizeof(u));
	if (!*sc || (strcmp(sc, "file") && wb_url_parse(url, &u) < 0))
		return err_at(r, o, "'%s' is not a URL libcurl reads (an https, http or file "
			      "URL; a host, a port from 1 to 65535, no second '@'): '%s'",
			      what, url);
	wb_url_release(&u);
	/* A recipe or override file is committed and shared: a secret in one
	 * of its URLs would be everyone's (issue 31). --set and WINBUILD_SET
	 * are the user's own, and what they carry is redacted wherever the
	 * URL is recorded or shown (lib/redact.h). */
	if (o->file && strcmp(o->file, "--set") && strcmp(o->file, "env WINBUILD_SET") &&
	    redact_url_needed(url))
		return err_at(r, o, "'%s' carries a secret (a user:password@ or a signed "
			      "query such as sig=, X-Amz-Signature=, token=): a recipe is shared, "
			      "so give the credential in the credentials file or netrc "
			      "(docs/recipes.md, \"Credentials\"), or the signed URL with --set",
			      what);
	return 0;
}

/* NAME becomes a path (prep/<artifact>/, OUT/<name>/, components/<name>.yaml,
 * ...): refused here, at its place in the recipe, unless lib/names.h
 * passes it. */
int urls_name_check(struct resolver *r, const struct wb_origin *o,
	       const char *what, const char *name)
{
	const char *why = NULL;
	char *shown;
	int ret;

	if (names_check(name, &why))
		return 0;
	shown = text_printable(name);
	ret = err_at(r, o, "bad %s '%s': %s", what, shown, why);
	free(shown);
	return ret;
}

/* An http(s) URL's host and path segments become directories of a mirror
 * (`winbuild mirror`, <host>/<path>): each must be a safe name. */
int urls_layout_check(struct resolver *r, const char *url,
		     const struct wb_origin *o, const char *what)
{
	const char *why = NULL;
	char *rel;

	if (strncmp(url, "https://", 8) && strncmp(url, "http://", 7))
		return 0;
	if (!(rel = names_url_path(url, &why)))
		return err_at(r, o, "'%s' does not map to a safe mirror path (%s): '%s'",
			      what, why, url);
	free(rel);
	return 0;
}

char *urls_filename(const char *url)
{
	size_t n = strcspn(url, "?#");
	const char *end = url + n, *s = end;

	while (s > url && s[-1] != '/')
		s--;
	return xstrndup(s, (size_t)(end - s));
}

/*
 * The mirror rewrite: every rule whose `from` prefixes URL yields
 * `to` + rest, in rule order; URL itself comes last unless mirror_only
 * forbids it. mirror_only forbids only UPSTREAM URLs: a URL an override's
 * `replace` supplied is the site's own location, not upstream.
 */
int urls_apply_mirrors(struct resolver *r, const char *url,
		  const struct wb_origin *o, const char *what,
		  int upstream, struct wb_strlist *out)
{
	const struct plan *p = r->plan;

	for (size_t i = 0; i < p->nmirrors; i++) {
		size_t n = strlen(p->mirrors[i].from);
		if (!strncmp(url, p->mirrors[i].from, n)) {
			char *m = xasprintf("%s%s", p->mirrors[i].to, url + n);
			wb_strlist_push_unique(out, m);
			free(m);
		}
	}
	if (!p->mirror_only || !upstream) {
		wb_strlist_push_unique(out, url);
	} else if (!out->nr) {
		char where[512];
		wb_origin_format(&p->mirror_only_origin, where, sizeof(where));
		return err_at(r, o, "no mirror rule covers %s '%s' and mirror_only is set (%s)",
			      what, url, where);
	}
	if (!p->policy.allow_http) {
		for (size_t i = 0; i < out->nr; i++) {
			if (strncmp(out->v[i], "http://", 7))
				continue;
			char where[512];
			wb_origin_format(&p->policy.allow_http_origin, where, sizeof(where));
			return err_at(r, o, "%s '%s' is plain http and policy.allow_http is false (%s)",
				      what, out->v[i], where);
		}
	}
	return 0;
}

/* "file://${override_dir}/REST" (what `winbuild mirror` writes into the
 * export's override): the directory of the file that says it, absolute,
 * so the export works wherever it is moved; NULL for any other URL. */
char *urls_override_dir(const char *to, const struct wb_origin *o)
{
	static const char pre[] = "file://${override_dir}";
	char *dir, *abs, *ret;

	if (strncmp(to, pre, sizeof(pre) - 1) || !o->file || o->file[0] == '-' ||
	    !strncmp(o->file, "env ", 4))
		return NULL;
	dir = fs_dirname(o->file);
	abs = realpath(dir, NULL);
	ret = abs ? xasprintf("file://%s%s", abs, to + sizeof(pre) - 1) : NULL;
	free(dir);
	free(abs);
	return ret;
}

/* mirror_only and mirrors: of the image (TOP): each mirror's from and to
 * expanded with the image's vars, to first as file://${override_dir}/. */
int urls_convert_mirrors(struct resolver *r, const struct rnode *top)
{
	struct plan *p = r->plan;
	const struct rnode *n;
	struct vars *image_vars = &r->image_vars;

	if ((n = rnode_get(top, "mirror_only"))) {
		p->mirror_only = schema_bool(n) == 1;
		p->mirror_only_origin = n->origin;
	}
	if ((n = rnode_get(top, "mirrors"))) {
		p->mirrors = xcalloc(n->nr ? n->nr : 1, sizeof(*p->mirrors));
		for (size_t i = 0; i < n->nr; i++) {
			const struct rnode *m = n->items[i];
			/* file://${override_dir}/ first: the one name that is not
			 * a variable; then the image's vars */
			char *from = vars_expand(r, image_vars, rnode_get(m, "from"), "mirrors.from");
			char *to = urls_override_dir(rs_scalar(m, "to"), &rnode_get(m, "to")->origin);

			if (!to && from)
				to = vars_expand(r, image_vars, rnode_get(m, "to"), "mirrors.to");
			if (!from || !to || urls_check(r, from, &rnode_get(m, "from")->origin, "mirrors.from") ||
			    urls_check(r, to, &rnode_get(m, "to")->origin, "mirrors.to")) {
				free(from);
				free(to);
				return -1;
			}
			p->mirrors[i].from = from;
			p->mirrors[i].to = to;
			p->mirrors[i].origin = m->origin;
			p->nmirrors++;
		}
	}
	return 0;
}
