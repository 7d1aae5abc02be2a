/*
 * The one URL parser and origin rule: see url.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "lib/url.h"

static void lower_into(char *dst, size_t n, const char *src)
{
	size_t i = 0;

	for (; src[i] && i + 1 < n; i++)
		dst[i] = (char)(src[i] >= 'A' && src[i] <= 'Z' ? src[i] - 'A' + 'a' : src[i]);
	dst[i] = '\0';
}

/* Whether part P of H is set (curl_url_get answers CURLUE_NO_*). */
static int has_part(CURLU *h, CURLUPart p)
{
	char *v = NULL;
	int r = curl_url_get(h, p, &v, 0) == CURLUE_OK;

	curl_free(v);
	return r;
}

/*
 * @where the one URL parser and origin rule (scheme, host, port; the default
 *   port explicit) -- on libcurl's `curl_url()`
 */
int wb_url_parse(const char *url, struct wb_url *u)
{
	CURLU *h;
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
	int ret = -1;

	memset(u, 0, sizeof(*u));
	if (!url || !strstr(url, "://"))
		return -1;       /* never a guessed scheme (CURLU_GUESS_SCHEME off) */
	h = curl_url();
	if (!h)
		return -1;
	/* CURLU_NON_SUPPORT_SCHEME: parse s3:// or oci:// too; only the
	 * caller knows which it takes. No CURLU_URLENCODE: the path stays
	 * as written, as the request will send it. */
	if (curl_url_set(h, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_PATH, &path, 0) != CURLUE_OK ||
	    strlen(scheme) >= sizeof(u->scheme) || strlen(host) >= sizeof(u->host) || !*host)
		goto out;
	lower_into(u->scheme, sizeof(u->scheme), scheme);
	lower_into(u->host, sizeof(u->host), host);
	u->port = strtol(port, NULL, 10);
	if (u->port <= 0 || u->port > 65535)
		goto out;
	u->path = strdup(*path ? path : "/");
	if (!u->path)
		goto out;
	u->has_user = has_part(h, CURLUPART_USER) || has_part(h, CURLUPART_PASSWORD);
	u->has_query = has_part(h, CURLUPART_QUERY);
	u->has_fragment = has_part(h, CURLUPART_FRAGMENT);
	ret = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_url_cleanup(h);
	if (ret < 0)
		memset(u, 0, sizeof(*u));
	return ret;
}

void wb_url_scheme(const char *url, char out[16])
{
	CURLU *h = url ? curl_url() : NULL;
	char *scheme = NULL;

	out[0] = '\0';
	if (h && curl_url_set(h, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK &&
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK)
		lower_into(out, 16, scheme);
	curl_free(scheme);
	curl_url_cleanup(h);
}

void wb_url_release(struct wb_url *u)
{
	free(u->path);
	memset(u, 0, sizeof(*u));
}

/*
 * @where the one URL parser and origin rule (scheme, host, port; the default
 *   port explicit)
 */
int wb_url_same_origin(const char *a, const char *b)
{
	struct wb_url ua, ub;
	int same;

	if (wb_url_parse(a, &ua) < 0)
		return 0;
	if (wb_url_parse(b, &ub) < 0) {
		wb_url_release(&ua);
		return 0;
	}
	same = !strcmp(ua.scheme, ub.scheme) && !strcmp(ua.host, ub.host) && ua.port == ub.port;
	wb_url_release(&ua);
	wb_url_release(&ub);
	return same;
}

void wb_url_origin_text(const char *url, char *out, size_t n)
{
	struct wb_url u;

	if (wb_url_parse(url, &u) < 0) {
		snprintf(out, n, "?");
		return;
	}
	snprintf(out, n, "%s://%s:%ld", u.scheme, u.host, u.port);
	wb_url_release(&u);
}
