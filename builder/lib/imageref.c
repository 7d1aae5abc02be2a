/*
 * Container image references (lib/imageref.h): parsed strictly, the
 * registry host always written out.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/hex.h"
#include "lib/imageref.h"
#include "lib/url.h"

int imageref_digest_ok(const char *d)
{
	return !strncmp(d, "sha256:", 7) && hex_is(d + 7, 64, HEX_LOWER);
}

void image_ref_release(struct image_ref *r)
{
	free(r->host);
	free(r->repo);
	free(r->tag);
	memset(r, 0, sizeof(*r));
}

static int repo_ok(const char *s)
{
	/* distribution's path components: [a-z0-9]+ separated by '.', '_',
	 * '__', '-'+ and '/' (reference/regexp.go); checked a little looser
	 * (no run rules), never anything a URL path would change */
	if (!*s || *s == '/' || s[strlen(s) - 1] == '/' || strstr(s, "//"))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
		      *s == '.' || *s == '_' || *s == '-' || *s == '/'))
			return 0;
	return 1;
}

static int tag_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 128 || *s == '.' || *s == '-')
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
			return 0;
	return 1;
}

/*
 * HOST, an image reference's domain. An image reference is not a URL and
 * is not parsed as one: it follows distribution/reference's grammar
 * (github.com/distribution/reference, reference.go's grammar: reference := name [":" tag] ["@" digest];
 * name := [domain "/"] remote-name; domain := host [":" port-number];
 * host := domain-name | IPv4address | "[" IPv6address "]"), here with the
 * domain required. But the registry is then asked at "https://" HOST
 * (fetch/registry.c), so HOST must also be what libcurl reads as exactly
 * a host and a port (lib/url.c, the one URL parser): a port out of range
 * or a stray ']' is refused here, not left to fail as a transfer, and the
 * origin credentials are bound to is the one libcurl connects to.
 * @where the one URL parser and origin rule (scheme, host, port; the default
 *   port explicit) -- an image reference's registry host
 */
static int host_ok(const char *s)
{
	struct wb_url u;
	char *url;
	int ok;

	if (!*s)
		return 0;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == ':' ||
		      *p == '[' || *p == ']'))
			return 0;
	url = xasprintf("https://%s/", s);
	ok = wb_url_parse(url, &u) == 0 && !u.has_user && !strcmp(u.path, "/");
	wb_url_release(&u);
	free(url);
	return ok;
}

/*
 * @where the registry client (OCI distribution pull by digest, the token
 *   flow, credentials, every manifest and blob verified) -- the one reference
 *   parser
 */
int image_ref_parse(const char *s, struct image_ref *r, struct wb_err *e)
{
	const char *slash = strchr(s, '/'), *at = strchr(s, '@'), *colon;
	char *rest = NULL;

	memset(r, 0, sizeof(*r));
	if (!slash)
		return wb_error(e, WB_EUSAGE, "image '%s': no registry host (write it "
				"in full, e.g. registry.k8s.io/pause:3.10@sha256:...)", s);
	r->host = xstrndup(s, (size_t)(slash - s));
	/* containerd's reference/docker/normalize.go takes a first component
	 * with no '.' or ':' (and not "localhost") for a Docker Hub path; a
	 * recipe names its registry, so that guess is refused, not made */
	if (!host_ok(r->host) || (!strchr(r->host, '.') && !strchr(r->host, ':') &&
				  strcmp(r->host, "localhost"))) {
		wb_error(e, WB_EUSAGE, "image '%s': '%s' is not a registry host (write "
			 "the registry in full, e.g. registry.k8s.io/pause)", s, r->host);
		goto fail;
	}
	if (at) {
		if (at < slash || !imageref_digest_ok(at + 1)) {
			wb_error(e, WB_EUSAGE, "image '%s': the digest must be sha256: "
				 "and 64 lowercase hex digits", s);
			goto fail;
		}
		memcpy(r->digest, at + 1, IMAGEREF_DIGEST_LEN + 1);
		rest = xstrndup(slash + 1, (size_t)(at - slash - 1));
	} else {
		rest = xstrdup(slash + 1);
	}
	colon = strrchr(rest, ':');
	if (colon) {
		r->tag = xstrdup(colon + 1);
		rest[colon - rest] = '\0';
		if (!tag_ok(r->tag)) {
			wb_error(e, WB_EUSAGE, "image '%s': '%s' is not a valid tag", s, r->tag);
			goto fail;
		}
	}
	if (!repo_ok(rest)) {
		wb_error(e, WB_EUSAGE, "image '%s': '%s' is not a valid repository name",
			 s, rest);
		goto fail;
	}
	r->repo = rest;
	return 0;
fail:
	free(rest);
	image_ref_release(r);
	return -1;
}
