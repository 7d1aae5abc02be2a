/*
 * The transport policy on every request and every redirect hop.
 */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "fetch/engine.h"
#include "lib/buf.h"
#include "lib/url.h"

/* ---- transport policy on every hop ------------------------------------ */

/*
 * Whether a redirect from FROM to TO breaks the transport policy: the
 * reason, or NULL when the hop is allowed. Every hop obeys what the URL
 * the plan named obeys: only http and https (never file, ftp, ...), no
 * http at all unless policy.allow_http, and never down from https to
 * http (the https in a recipe or mirror is a promise a server must not
 * take back).
 * @where the one URL parser and origin rule (scheme, host, port; the default
 *   port explicit) -- scheme decisions
 */
static const char *hop_refused(const struct trust_policy *policy, const char *from,
			      const char *to)
{
	char fs[16], ts[16];

	wb_url_scheme(from, fs);
	wb_url_scheme(to, ts);
	if (strcmp(ts, "https") && strcmp(ts, "http"))
		return "a redirect may lead only to http or https";
	if (!strcmp(ts, "http") && !verify_url_allowed(policy, to))
		return "plain http, and policy forbids it (policy.allow_http: false)";
	if (!strcmp(ts, "http") && strcmp(fs, "http"))
		return "a redirect from https never leads to plain http";
	return NULL;
}

/*
 * The hop policy, for every client that follows redirects (the engine's
 * transfers, a request outside it, the size probe): see engine.h. The
 * order of the checks decides the message when several apply: a request
 * that takes no redirect at all, then a missing Location, then the
 * transport policy (hop_refused), then the count.
 * @where where a redirect hop is checked (followed by winbuild, never by
 *   libcurl) -- the one hop policy: scheme, `allow_http`, no https to http,
 *   at most 10, a Location, never for the Rekor API
 */
enum hop_verdict hop_judge(const struct trust_policy *policy, int no_redirect,
			   const char *from, const char *to, int hops, const char **why)
{
	const char *r;

	if (why)
		*why = NULL;
	if (no_redirect)
		return HOP_NEVER;
	if (!to)
		return HOP_NO_LOCATION;
	if ((r = hop_refused(policy, from, to))) {
		if (why)
			*why = r;
		return HOP_REFUSED;
	}
	if (hops >= FETCH_MAX_REDIRS)
		return HOP_TOO_MANY;
	return HOP_FOLLOW;
}

/* The protocols libcurl may use for URL (and, were it to follow one, for
 * a redirect from it): the same rule as hop_refused, enforced twice. */
static const char *hop_protocols(const struct trust_policy *policy, const char *url)
{
	char sc[16];

	wb_url_scheme(url, sc);
	if (!strcmp(sc, "file"))
		return "file";
	if (!strcmp(sc, "https") || !verify_url_allowed(policy, "http://"))
		return "https";
	return "http,https";
}

/* Whether the query pair P[0..N) is one of those QUERY (a query
 * credential, "a=1&b=2") holds, by name. */
static int pair_in(const char *p, size_t n, const char *query)
{
	size_t pn = strcspn(p, "=&");

	if (pn > n)
		pn = n;
	while (*query) {
		size_t len = strcspn(query, "&"), qn = strcspn(query, "=&");

		if (qn == pn && !strncmp(query, p, pn))
			return 1;
		query += len;
		query += *query == '&';
	}
	return 0;
}

/* URL without the query pairs CE (a query credential) adds, a new string:
 * a redirect that keeps the query string (nginx's rewrite without '?',
 * a CDN's 302 echoing the request) would otherwise carry the secret to
 * whatever origin it names. */
static char *strip_query_creds(const struct creds_entry *ce, const char *url)
{
	const char *secret = ce->secret + (*ce->secret == '?');
	CURLU *u = curl_url();
	char *q = NULL, *out = NULL, *ret;
	struct buf b = BUF_INIT;

	if (!u || curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_QUERY, &q, 0) != CURLUE_OK) {
		curl_url_cleanup(u);
		return xstrdup(url);
	}
	for (const char *p = q; *p;) {
		size_t n = strcspn(p, "&");

		if (!pair_in(p, n, secret)) {
			if (b.len)
				buf_addc(&b, '&');
			buf_add(&b, p, n);
		}
		p += n;
		p += *p == '&';
	}
	curl_url_set(u, CURLUPART_QUERY, b.len ? b.ptr : NULL, 0);
	ret = curl_url_get(u, CURLUPART_URL, &out, 0) == CURLUE_OK ? xstrdup(out) : xstrdup(url);
	curl_free(out);
	curl_free(q);
	buf_release(&b);
	curl_url_cleanup(u);
	return ret;
}

/*
 * @where where a credential is allowed on a request (only the origin it was
 *   given for) -- never a redirect hop or mirror on another host; libcurl's
 *   netrc never enabled
 */
char *hop_creds(const struct creds *c, CURL *h, const char *plan_url, const char *url,
		const char *name, const struct creds_entry **sent,
		const struct creds_entry **held, struct curl_slist **hdr)
{
	const struct creds_entry *ce = creds_for(c, plan_url, name);

	*sent = *held = NULL;
	/* Credentials go to the origin they were given for and nowhere
	 * else: not to a redirect's other host, not to another port or
	 * scheme of it (lib/url.h: one origin rule). curl itself drops
	 * them on a cross-host redirect unless CURLOPT_UNRESTRICTED_AUTH,
	 * comparing the host only (lib/transfer.c, curl 7.88.1); winbuild
	 * follows every hop itself on a fresh handle
	 * (hop_transport_setopts), so this is that rule, and stricter: a
	 * netrc entry names a host, and is bound to the port of the URL it
	 * was picked for. */
	if (ce && (!wb_url_same_origin(plan_url, url) || !creds_match_origin(ce, url))) {
		*held = ce;
		ce = NULL;
	}
	if (!ce)
		return *held && (*held)->kind == CREDS_QUERY ? strip_query_creds(*held, url) :
			xstrdup(url);
	*sent = ce;
	return creds_setopt(h, ce, url, hdr);
}

void hop_reset(struct job *j)
{
	free(j->hop_url);
	j->hop_url = NULL;
	j->hops = 0;
}

/* What every request for URL on H obeys: the transport policy (no
 * redirect followed by libcurl: transfer_done, probe_sizes and
 * fetch_request follow them, one hop_judge'd hop at a time), TLS
 * verification, the User-Agent. */
void hop_transport_setopts(CURL *h, const struct trust_policy *policy, const char *cacert,
			      const char *user_agent, long connect_timeout, const char *url)
{
	const char *protos = hop_protocols(policy, url);

	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 0L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, protos);
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, protos);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	if (cacert && *cacert)
		curl_easy_setopt(h, CURLOPT_CAINFO, cacert);
	curl_easy_setopt(h, CURLOPT_USERAGENT, user_agent);
	/* never libcurl's own netrc lookup: it would answer for whatever host
	 * a request goes to; netrc is read by fetch/creds.c and obeys
	 * hop_creds like every other source */
	curl_easy_setopt(h, CURLOPT_NETRC, (long)CURL_NETRC_IGNORED);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, connect_timeout);
}

void hop_transport_opts(struct engine *en, CURL *h, const char *url, void *priv)
{
	hop_transport_setopts(h, &en->plan->policy, en->o->cacert, en->user_agent,
			  en->connect_timeout, url);
	curl_easy_setopt(h, CURLOPT_PRIVATE, priv);
}
