/*
 * The registry client's requests (registry_int.h): one GET at a time,
 * judged by request_judge() like fetch_request's, redirects one hop at a
 * time, distribution's token flow, and the credentials of the run
 * (fetch/creds.h) for a registry or token realm that asks for them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "fetch/registry_int.h"
#include "lib/fs.h"
#include "lib/redact.h"
#include "lib/url.h"

/* ---- one request ------------------------------------------------------- */

static size_t reg_on_header(char *data, size_t sz, size_t nmemb, void *ud)
{
	struct reg_sink *s = ud;
	size_t n = sz * nmemb;
	static const char name[] = "www-authenticate:";

	if (n > 5 && !strncmp(data, "HTTP/", 5))
		buf_reset(&s->www_auth);   /* a new answer (a 100, a hop) */
	if (n > sizeof(name) - 1 && !strncasecmp(data, name, sizeof(name) - 1) &&
	    n < REG_HEADER_MAX) {
		buf_reset(&s->www_auth);
		buf_add(&s->www_auth, data + sizeof(name) - 1, n - (sizeof(name) - 1));
	}
	return n;
}

static int sink_restart(struct reg_sink *s, struct wb_err *e)
{
	s->have = 0;
	s->too_big = 0;
	if (s->b) {
		buf_reset(s->b);
		return 0;
	}
	if (ftruncate(s->fd, 0) < 0 || lseek(s->fd, 0, SEEK_SET) < 0)
		return wb_error(e, WB_EIO, "cannot reset a temp file: %s", strerror(errno));
	if (s->dc_live)
		digest_release(&s->dc);
	s->dc_live = 0;
	memset(&s->dc, 0, sizeof(s->dc));
	if (digest_init(&s->dc, DIGEST_SHA256, e) < 0)
		return -1;
	s->dc_live = 1;
	return 0;
}

static size_t reg_on_write(char *data, size_t sz, size_t nmemb, void *ud)
{
	struct reg_sink *s = ud;
	size_t n = sz * nmemb;

	if (s->code != 200)
		return n;   /* an error body or a redirect's: never the answer */
	if (s->have + n > s->max) {
		s->too_big = 1;
		return 0;
	}
	s->have += n;
	if (s->b) {
		buf_add(s->b, data, n);
		return n;
	}
	digest_update(&s->dc, data, n);
	if (fs_write_all(s->fd, data, n) < 0) {
		s->io_error = errno;
		return 0;
	}
	return n;
}


/* Whether URL is on ORIGIN (lib/url.h: scheme, host and port). */
static int same_origin(const char *url, const char *origin)
{
	return wb_url_same_origin(url, origin);
}

/* One reg_get: the request_run() hooks' state. */
struct reg_try {
	struct reg_client *rc;
	const char *accept;
	struct reg_sink *s;
	CURL *h;                     /* the try's handle, for the status */
	int authed;                  /* a token was fetched for this GET */
	const char *url;             /* the URL asked (before any hop): the
				      * credentials are the ones for its origin */
	int creds;                   /* send them on this GET (a Basic retry,
				      * a token realm) */
	const struct creds_entry *sent, *held;   /* on the last try (hop_creds) */
};

/*
 * The credentials of this try of T on H for URL (a hop of T->url), after
 * the headers in *HDR: those creds_for() gives for T->url's origin, when
 * URL is still on it (hop_creds: never across hosts), and only when the
 * server asked for them (T->creds, the registry's creds_on) or they are a
 * client certificate (set from the start, as the fetch does: a TLS
 * handshake cannot be asked again). 0, or -1 with E.
 * @where the registry client (OCI distribution pull by digest, the token
 *   flow, credentials, every manifest and blob verified) -- which credential
 *   entry, never over http (`tests/cli/images_creds.bats`)
 */
static int reg_creds(struct reg_try *t, CURL *h, const char *url, struct curl_slist **hdr,
		     struct wb_err *e)
{
	struct reg_client *rc = t->rc;
	const struct creds_entry *ce;
	char sc[16], *shown;
	int want;

	t->sent = t->held = NULL;
	ce = rc->o->creds ? creds_for(rc->o->creds, t->url, NULL) : NULL;
	/* the registry's own token wins on its origin: credentials were
	 * for getting it */
	want = t->creds || (rc->creds_on && same_origin(url, rc->origin) && !rc->token);
	if (!ce || (!want && ce->kind != CREDS_CERT))
		return 0;
	/* hop_creds: only on T->url's origin, never across hosts */
	free(hop_creds(rc->o->creds, h, t->url, url, NULL, &t->sent, &t->held, hdr));
	if (!t->sent)
		return 0;
	shown = xfer_shown_url(url);
	/* SigV4 signs a request for one AWS service (an S3 bucket); ECR's
	 * registry API takes Basic with a token from GetAuthorizationToken
	 * instead. A query (an Azure SAS) is for blob storage. A registry's
	 * auth is its challenge's (distribution's docs/spec/auth/token.md):
	 * neither means anything to it, so it is refused, not sent. */
	if (ce->kind == CREDS_SIGV4 || ce->kind == CREDS_QUERY) {
		wb_error(e, WB_EUSAGE, "'%s': the credentials for it (%s) are %s, which "
			 "a registry does not take: give it a basic (user and password or "
			 "access token), bearer or client-cert entry", shown, ce->where,
			 ce->kind == CREDS_SIGV4 ? "sigv4" : "query");
		free(shown);
		return -1;
	}
	wb_url_scheme(url, sc);
	if (strcmp(sc, "https")) {
		/* as the token (reg_ended): a secret over plain http goes to
		 * whoever answers on the wire */
		wb_error(e, WB_EVERIFY, "'%s': winbuild sends no credentials over plain "
			 "http (those for it: %s): serve it over https, or anonymously",
			 shown, ce->where);
		free(shown);
		return -1;
	}
	free(shown);
	return 0;
}

static size_t reg_on_header_status(char *data, size_t sz, size_t nmemb, void *ud)
{
	struct reg_try *t = ud;

	curl_easy_getinfo(t->h, CURLINFO_RESPONSE_CODE, &t->s->code);
	return reg_on_header(data, sz, nmemb, t->s);
}

static int reg_setup(CURL *h, const char *url, char *errbuf, struct curl_slist **hdr,
		     void *ud, struct wb_err *e)
{
	struct reg_try *t = ud;
	struct reg_client *rc = t->rc;

	if (sink_restart(t->s, e) < 0)
		return -1;
	t->h = h;
	t->s->code = 0;
	buf_reset(&t->s->www_auth);
	hop_transport_setopts(h, rc->conf.policy, rc->conf.cacert, rc->ua,
			      rc->conf.connect_timeout, url);
	curl_easy_setopt(h, CURLOPT_FAILONERROR, 0L);
	if (t->accept)
		*hdr = curl_slist_append(*hdr, t->accept);
	/* the registry's token on its own origin only: a blob store a
	 * redirect leads to (registry.k8s.io's archeio sends blobs to other
	 * hosts) never sees it; libcurl copies the header, so the line is
	 * wiped at once */
	if (rc->token && same_origin(url, rc->origin)) {
		char *auth = xasprintf("Authorization: Bearer %s", rc->token);

		*hdr = curl_slist_append(*hdr, auth);
		memset(auth, 0, strlen(auth));
		free(auth);
	}
	if (reg_creds(t, h, url, hdr, e) < 0)
		return -1;
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdr);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, reg_on_header_status);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, t);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, reg_on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, t->s);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, rc->conf.low_speed_limit);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, rc->conf.low_speed_time);
	return 0;
}

/*
 * @where the one URL parser and origin rule (scheme, host, port; the default
 *   port explicit) -- the token realm: elsewhere only when its credentials
 *   entry names the registry; https only
 */
static int reg_get_token(struct reg_client *rc, const char *challenge, const char *url,
			 struct wb_err *e);

static int is_basic(const char *challenge)
{
	while (*challenge == ' ' || *challenge == '\t')
		challenge++;
	return !strncasecmp(challenge, "Basic", 5) &&
	       (!challenge[5] || strchr(" \t\r\n,", challenge[5]));
}

/* A 401 with a Basic challenge at END->url: 1 to ask again with the
 * credentials, or -1 with E saying what was sent and how to give them.
 * @where the registry client (OCI distribution pull by digest, the token
 *   flow, credentials, every manifest and blob verified) -- the Basic retry
 *   and its messages
 */
static int reg_basic(struct reg_try *t, const struct request_end *end, struct wb_err *e)
{
	const struct creds_entry *ce;
	char host[300], *shown;

	ce = t->rc->o->creds ? creds_for(t->rc->o->creds, t->url, NULL) : NULL;
	if (!t->sent && !t->held && !t->creds && ce && creds_match_origin(ce, end->url)) {
		t->creds = 1;
		if (same_origin(end->url, t->rc->origin))
			t->rc->creds_on = 1;   /* every later request of the pull */
		return 1;
	}
	shown = xfer_shown_url(end->url);
	creds_origin_text(end->url, host, sizeof(host));
	if (t->sent)
		wb_error(e, WB_ENET, "'%s': HTTP 401: %s refused the credentials winbuild "
			 "sent, from %s (%s): check that they are current and may pull this "
			 "repository", shown, host, creds_from_name(t->sent->from), t->sent->where);
	else if (t->held || ce)
		wb_error(e, WB_ENET, "'%s': the registry wants credentials (HTTP 401), and "
			 "none were sent: those from %s (%s) are for %s://%s only, and winbuild "
			 "never sends them to another host (a redirect); give %s an entry of "
			 "its own in the credentials file or netrc", shown,
			 creds_from_name((t->held ? t->held : ce)->from),
			 (t->held ? t->held : ce)->where,
			 (t->held ? t->held : ce)->scheme ? (t->held ? t->held : ce)->scheme :
			 "http(s)", (t->held ? t->held : ce)->host, host);
	else
		wb_error(e, WB_ENET, "'%s': the registry wants credentials (HTTP 401), and the "
			 "credentials file and netrc have none for %s: add one (docs/recipes.md, "
			 "\"Credentials\": --credentials FILE or --netrc-file FILE), or mirror the "
			 "image where the build host can read it", shown, host);
	free(shown);
	return -1;
}

/*
 * @where the registry client (OCI distribution pull by digest, the token
 *   flow, credentials, every manifest and blob verified) -- no token over
 *   plain http
 */
static int reg_ended(struct request_end *end, void *ud, struct wb_err *e)
{
	struct reg_try *t = ud;
	struct reg_sink *s = t->s;
	int basic = s->www_auth.len && is_basic(s->www_auth.ptr);

	t->h = NULL;
	if (s->io_error)
		return wb_error(e, WB_EIO, "cannot write a temp file of the cache: %s",
				strerror(s->io_error));
	if (end->rc == CURLE_OK && end->code == 401 && s->www_auth.len &&
	    !strncasecmp(end->url, "http://", 7)) {
		/* a registry (a mirror) or realm over plain http gets no token
		 * and no credentials: either would travel in the clear, to
		 * whoever answers on the wire. Its content is pinned and
		 * signed, so an anonymous http mirror is safe; one wanting
		 * credentials is not */
		char *shown = xfer_shown_url(end->url);

		wb_error(e, WB_EVERIFY, "'%s': the registry wants %s (HTTP 401), and "
			 "winbuild sends none over plain http: serve the mirror anonymously, "
			 "or over https", shown, basic ? "credentials" : "a token");
		free(shown);
		return -1;
	}
	if (end->rc == CURLE_OK && end->code == 401 && basic)
		return reg_basic(t, end, e);
	if (end->rc == CURLE_OK && end->code == 401 && !t->authed && s->www_auth.len &&
	    same_origin(end->url, t->rc->origin)) {
		/* distribution's token flow: the challenge names where a
		 * token for this repository's pull scope is */
		t->authed = 1;
		return reg_get_token(t->rc, s->www_auth.ptr, end->url, e) < 0 ? -1 : 1;
	}
	end->too_big = s->too_big;
	end->max = (size_t)s->max;
	return 0;
}

/* reg_get; REALM: URL is a token realm (credentials from the first
 * request, no token flow of its own) */
static int reg_get_as(struct reg_client *rc, const char *url, const char *accept,
		      struct reg_sink *s, int realm, struct wb_err *e)
{
	struct reg_try t = { rc, accept, s, NULL, realm, url, realm, NULL, NULL };
	const struct request_hooks hk = { reg_setup, reg_ended, &t };
	char *final = NULL;
	long status;

	if (request_run(&rc->conf, rc->lim.backoff_ms, url, 0, &hk, &status, &final, e) < 0)
		return -1;
	if (status == 404) {
		char *shown = xfer_shown_url(final);

		wb_error(e, WB_ENET, "'%s': not found (HTTP 404)", shown);
		free(shown);
		free(final);
		return -1;
	}
	free(s->final);
	s->final = final;
	return 0;
}

static int reader_write(void *sink, const void *p, size_t n)
{
	return reg_on_write((char *)p, 1, n, sink) == n ? 0 : -1;
}

/* reg_get answered by registry_opts.reader: URL is BASE/v2/REPO/PATH, the
 * sink filled as from a 200 (or the reader's 404)
 * @where the one seam where an image's source plugs in (registry, OCI layout)
 *   -- a kind on disk answers the pull's requests, so every check and the
 *   cache are the registry's
 */
static int reg_read(struct reg_client *rc, const char *url, struct reg_sink *s,
		    struct wb_err *e)
{
	char *pre = xasprintf("%s/v2/%s/", rc->base, rc->ref->repo);
	size_t n = strlen(pre);
	int r;

	free(s->final);
	s->final = xstrdup(url);
	s->code = 200;
	r = strncmp(url, pre, n) ? wb_error(e, WB_ENET, "'%s': not in the image's source",
					    url) : sink_restart(s, e);
	free(pre);
	if (r < 0)
		return -1;
	r = rc->o->reader->get(rc->o->reader->ctx, url + n, reader_write, s, e);
	if (r == 0) {
		/* what a registry would answer 404: the source, on disk, does
		 * not hold what the pin (or its signature) needs */
		s->code = 404;
		return wb_error(e, WB_EVERIFY, "'%s': not in the image's source", url);
	}
	if (r < 0 && (s->too_big || s->io_error))
		return wb_error(e, s->too_big ? WB_EVERIFY : WB_EIO, "'%s': %s", url,
				s->too_big ? "longer than the pull may take" :
				strerror(s->io_error));
	return r < 0 ? -1 : 0;
}

/* registry_int.h
 * @where the registry client (OCI distribution pull by digest, the token
 *   flow, credentials, every manifest and blob verified) -- one request,
 *   through `request_run()`
 */
int reg_get(struct reg_client *rc, const char *url, const char *accept,
	    struct reg_sink *s, struct wb_err *e)
{
	if (rc->o->reader)
		return reg_read(rc, url, s, e);
	return reg_get_as(rc, url, accept, s, 0, e);
}

/* ---- the token flow ---------------------------------------------------- */

/* The value of KEY in a Bearer challenge's comma-separated key="value"
 * list, or NULL. New string. */
static char *challenge_param(const char *c, const char *key)
{
	size_t klen = strlen(key);

	while (*c) {
		while (*c == ' ' || *c == '\t' || *c == ',')
			c++;
		if (!strncasecmp(c, key, klen) && c[klen] == '=') {
			const char *v = c + klen + 1, *end;

			if (*v == '"') {
				v++;
				end = strchr(v, '"');
				if (!end)
					return NULL;
			} else {
				end = v + strcspn(v, ", \t\r\n");
			}
			return xstrndup(v, (size_t)(end - v));
		}
		/* skip this pair (a quoted value may hold commas) */
		while (*c && *c != '=' && *c != ',')
			c++;
		if (*c == '=') {
			c++;
			if (*c == '"') {
				const char *q = strchr(c + 1, '"');
				c = q ? q + 1 : c + strlen(c);
			} else {
				c += strcspn(c, ",");
			}
		}
	}
	return NULL;
}

static void add_query(struct buf *u, const char *key, const char *val, int *first)
{
	char *esc = curl_easy_escape(NULL, val, 0);

	buf_addf(u, "%c%s=%s", *first ? (strchr(u->ptr, '?') ? '&' : '?') : '&', key,
		 esc ? esc : "");
	*first = 0;
	curl_free(esc);
}

static int reg_get_token(struct reg_client *rc, const char *challenge, const char *url,
			 struct wb_err *e)
{
	const char *c = challenge;
	char *realm = NULL, *service = NULL, *scope = NULL, *shown;
	struct buf u = BUF_INIT, body = BUF_INIT;
	struct reg_sink s;
	json_t *root = NULL, *tok;
	json_error_t je;
	int first = 1, ret = -1;
	char sc[16];

	while (*c == ' ')
		c++;
	if (strncasecmp(c, "Bearer ", 7)) {
		shown = xfer_shown_url(url);
		wb_error(e, WB_ENET, "'%s': the registry wants credentials (HTTP 401) by a "
			 "challenge that is neither Bearer (a token) nor Basic, which winbuild "
			 "does not answer: mirror the image where the build host can read it",
			 shown);
		free(shown);
		return -1;
	}
	realm = challenge_param(c + 7, "realm");
	service = challenge_param(c + 7, "service");
	scope = challenge_param(c + 7, "scope");
	if (!realm) {
		shown = xfer_shown_url(url);
		wb_error(e, WB_ENET, "'%s': a Bearer challenge without a realm", shown);
		free(shown);
		goto out;
	}
	/* A token realm is https, always (docs/recipes.md, "Registries":
	 * exit 1): the token it answers is a secret, and policy.allow_http
	 * admits plain http for pinned bytes, never for a secret. */
	wb_url_scheme(realm, sc);
	if (strcmp(sc, "https")) {
		shown = xfer_shown_url(realm);
		wb_error(e, WB_EVERIFY, "the token realm '%s' of the registry %s is refused: "
			 "a token realm is https only (a token over plain http goes to whoever "
			 "answers on the wire)", shown, rc->origin);
		free(shown);
		goto out;
	}
	/* The realm is the registry's to name, and so a hostile registry
	 * (or mirror) can name the site's own token service: Docker's flow
	 * (distribution's docs/spec/auth/token.md) would log in there and
	 * hand the registry a token for the scope it chose. winbuild
	 * sends credentials to a realm only on the registry's own origin,
	 * or when the realm's credentials entry names that registry
	 * (`registry = https://HOST[:PORT]`); a realm elsewhere that holds
	 * an entry not naming it is refused. A realm with no entry at all
	 * gets no credentials: an anonymous token (Docker Hub's
	 * auth.docker.io) holds no secret of the user's. */
	if (!same_origin(realm, rc->origin) && rc->o->creds) {
		const struct creds_entry *ce = creds_for(rc->o->creds, realm, NULL);

		if (ce && !creds_names_registry(ce, rc->origin)) {
			shown = xfer_shown_url(realm);
			wb_error(e, WB_EVERIFY, "the registry %s names the token realm '%s', "
				 "on another origin, whose credentials (%s) do not name that "
				 "registry: winbuild sends a token service's credentials only "
				 "for the registries its entry lists ('registry = %s')",
				 rc->origin, shown, ce->where, rc->origin);
			free(shown);
			goto out;
		}
	}
	buf_adds(&u, realm);
	if (service)
		add_query(&u, "service", service, &first);
	if (!scope)
		scope = xasprintf("repository:%s:pull", rc->ref->repo);
	add_query(&u, "scope", scope, &first);
	memset(&s, 0, sizeof(s));
	s.b = &body;
	s.max = REG_TOKEN_MAX;
	s.fd = -1;
	/* Docker's token flow sends the realm Basic credentials; winbuild
	 * sends those given for the realm's own origin (creds_for(REALM)),
	 * never the registry's to another host: a site names its token
	 * service in the credentials file */
	ret = reg_get_as(rc, u.ptr, "Accept: application/json", &s, 1, e);
	buf_release(&s.www_auth);
	free(s.final);
	if (ret < 0)
		goto out;
	ret = -1;
	root = json_loadb(body.ptr, body.len, 0, &je);
	tok = root ? json_object_get(root, "token") : NULL;
	if (!json_is_string(tok) || !*json_string_value(tok))
		tok = root ? json_object_get(root, "access_token") : NULL;
	if (!json_is_string(tok) || !*json_string_value(tok) ||
	    strpbrk(json_string_value(tok), "\r\n")) {
		shown = xfer_shown_url(realm);
		wb_error(e, WB_ENET, "'%s': the token answer has no usable token", shown);
		free(shown);
		goto out;
	}
	free(rc->token);
	rc->token = xstrdup(json_string_value(tok));
	redact_add_secret(rc->token);   /* lib/redact.h: never shown */
	ret = 0;
out:
	json_decref(root);
	if (body.len)
		memset(body.ptr, 0, body.len);
	buf_release(&body);
	buf_release(&u);
	free(realm);
	free(service);
	free(scope);
	return ret;
}

