/*
 * lib/url.h: the one URL parser and the one origin rule (issue 41 item 3).
 *
 * Every module that decides where a secret may go (fetch/creds.c,
 * fetch/hop.c, fetch/registry_http.c) asks this one, built on libcurl's
 * URL API (curl_url(3)), the same parser libcurl uses for the request
 * itself, so "the host winbuild checked" and "the host curl connects to"
 * cannot disagree.
 *
 * An origin is (scheme, host, port), as RFC 6454 section 4 defines it,
 * with the scheme's default port made explicit (CURLU_DEFAULT_PORT):
 * "https://h/" and "https://h:443/" are one origin, "https://h:8443/" is
 * another. libcurl's own rule for sending credentials on after a
 * redirect compares host only (lib/transfer.c, Curl_follow:
 * data->state.this_is_a_follow && !strcasecompare(host, first_host),
 * curl 7.88.1) and netrc names a host without a port; winbuild binds a
 * secret to the whole origin instead, so another port of the same host
 * (another service, perhaps another user's) never gets it.
 */
#ifndef WB_LIB_URL_H
#define WB_LIB_URL_H

#include <stddef.h>

struct wb_url {
	char scheme[16];            /* lowercase */
	char host[256];             /* lowercase; an IPv6 address in [] */
	long port;                  /* explicit, or the scheme's default */
	char *path;                 /* "/..." (never empty), new string */
	int has_user, has_query, has_fragment;
};

/* Parse URL (scheme://host[:port]...) into U: 0, or -1 when it is not
 * an absolute URL with a host and a known port. wb_url_release after. */
int wb_url_parse(const char *url, struct wb_url *u);
void wb_url_release(struct wb_url *u);

/* URL's scheme as libcurl reads it (curl_url(3), CURLU_NON_SUPPORT_SCHEME),
 * lowercased, in OUT; "" when libcurl reads no URL there (the only answer
 * for "https://user:p@ss@host/": libcurl takes the first '@', lib/urlapi.c
 * parse_hostname_login, and refuses "ss@host" as a host). A file:// URL
 * has a scheme and no host. */
void wb_url_scheme(const char *url, char out[16]);

/* Whether A and B are URLs of one origin (scheme, host, port). Either
 * unparsable: 0. */
int wb_url_same_origin(const char *a, const char *b);

/* URL's origin as "scheme://host:port" in OUT ("?" when it has none). */
void wb_url_origin_text(const char *url, char *out, size_t n);

#endif
