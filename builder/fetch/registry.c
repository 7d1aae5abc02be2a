/*
 * The registry client (registry.h): the OCI distribution API's pull by
 * digest, as rounds of requests (the pinned manifest, the selected image
 * manifest, then its config and layers), each judged by request_judge()
 * like fetch_request's, each answer verified by its digest.
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

#include "fetch/engine.h"
#include "fetch/registry.h"
#include "lib/envlimits.h"
#include "lib/hex.h"
#include "lib/imageref.h"
#include "trust/digest.h"

#define REG_MANIFEST_MAX (4u << 20)   /* a manifest or index: distribution's
				       * own limit is 4 MiB */
#define REG_TOKEN_MAX (64u << 10)
#define REG_HEADER_MAX 4096

static const char reg_accept[] =
	"Accept: application/vnd.oci.image.index.v1+json, "
	"application/vnd.docker.distribution.manifest.list.v2+json, "
	"application/vnd.oci.image.manifest.v1+json, "
	"application/vnd.docker.distribution.manifest.v2+json";

/* ---- one request ------------------------------------------------------- */

struct reg_client {
	const struct registry_opts *o;
	const struct image_ref *ref;
	struct request_conf conf;
	struct env_limits lim;
	char ua[64];
	char *origin;                /* "https://HOST" of the registry */
	char *token;                 /* the bearer token, or NULL */
	char *name;                  /* HOST/REPO@DIGEST, for messages */
};

/* Where one answer's body goes: a capped buffer, or a file with its
 * SHA-256 computed as it is written (capped at the descriptor's size). */
struct reg_sink {
	struct buf *b;               /* or NULL: FD */
	int fd;
	struct digest_ctx dc;
	int dc_live;
	unsigned long long have, max;
	int too_big, io_error;
	long code;                   /* the status of the answer being read */
	struct buf www_auth;         /* its WWW-Authenticate */
	char *final;                 /* the URL that answered (after the hops);
				      * the caller frees it */
};

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
	size_t n = sz * nmemb, off = 0;

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
	while (off < n) {
		ssize_t w = write(s->fd, data + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			s->io_error = errno;
			return 0;
		}
		off += (size_t)w;
	}
	return n;
}

/* The status as soon as the headers are in (reg_on_write needs it). */
static size_t reg_on_header_status(char *data, size_t sz, size_t nmemb, void *ud);

static void origin_of(const char *url, char *out, size_t len)
{
	const char *p = strstr(url, "://");
	size_t n;

	if (!p) {
		snprintf(out, len, "%s", url);
		return;
	}
	p += 3;
	n = strcspn(p, "/?#");
	snprintf(out, len, "%.*s", (int)((size_t)(p - url) + n), url);
	for (char *c = out; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
}

static int same_origin(const char *url, const char *origin)
{
	char o[512];

	origin_of(url, o, sizeof(o));
	return !strcmp(o, origin);
}

struct hdr_ud {
	struct reg_sink *s;
	CURL *h;
};

static size_t reg_on_header_status(char *data, size_t sz, size_t nmemb, void *ud)
{
	struct hdr_ud *u = ud;

	curl_easy_getinfo(u->h, CURLINFO_RESPONSE_CODE, &u->s->code);
	return reg_on_header(data, sz, nmemb, u->s);
}

static void reg_sleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);   /* a signal ends it early: fine */
}

static int reg_get_token(struct reg_client *rc, const char *challenge, const char *url,
			 struct wb_err *e);

/*
 * GET URL into S. ACCEPT: an Accept header line, or NULL. The registry's
 * token goes along while a hop stays on its origin; a 401 with a Bearer
 * challenge gets a token and one more try. 0 with a 200 answer in S, or
 * -1 (E names the URL).
 */
static int reg_get(struct reg_client *rc, const char *url, const char *accept,
		   struct reg_sink *s, struct wb_err *e)
{
	char errbuf[CURL_ERROR_SIZE], *cur = xstrdup(url);
	int hops = 0, tries = 0, authed = 0, ret = -1;

	for (;;) {
		struct curl_slist *hdr = NULL;
		struct request_end end;
		struct hdr_ud hu;
		CURL *h = curl_easy_init();
		char *to = NULL, *auth = NULL;
		enum request_next next;

		if (!h) {
			wb_error(e, WB_EIO, "cannot create a curl handle");
			break;
		}
		if (sink_restart(s, e) < 0) {
			curl_easy_cleanup(h);
			break;
		}
		s->code = 0;
		buf_reset(&s->www_auth);
		errbuf[0] = '\0';
		hop_transport_setopts(h, rc->conf.policy, rc->conf.cacert, rc->ua,
				      rc->conf.connect_timeout, cur);
		curl_easy_setopt(h, CURLOPT_FAILONERROR, 0L);
		if (accept)
			hdr = curl_slist_append(hdr, accept);
		/* the registry's token on its own origin only: a blob store a
		 * redirect leads to (registry.k8s.io's archeio sends blobs to
		 * other hosts) never sees it */
		if (rc->token && same_origin(cur, rc->origin)) {
			auth = xasprintf("Authorization: Bearer %s", rc->token);
			hdr = curl_slist_append(hdr, auth);
		}
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
		hu.s = s;
		hu.h = h;
		curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, reg_on_header_status);
		curl_easy_setopt(h, CURLOPT_HEADERDATA, &hu);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, reg_on_write);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, rc->conf.low_speed_limit);
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, rc->conf.low_speed_time);
		memset(&end, 0, sizeof(end));
		end.rc = curl_easy_perform(h);
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &end.code);
		curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &to);
		to = to ? xstrdup(to) : NULL;
		curl_slist_free_all(hdr);
		if (auth) {
			memset(auth, 0, strlen(auth));
			free(auth);
		}
		curl_easy_cleanup(h);
		if (s->io_error) {
			wb_error(e, WB_EIO, "cannot write a temp file of the cache: %s",
				 strerror(s->io_error));
			free(to);
			break;
		}
		if (end.rc == CURLE_OK && end.code == 401 && !authed && s->www_auth.len &&
		    same_origin(cur, rc->origin)) {
			/* distribution's token flow: the challenge names where an
			 * anonymous token for this repository's pull scope is */
			free(to);
			authed = 1;
			if (reg_get_token(rc, s->www_auth.ptr, cur, e) < 0)
				break;
			continue;
		}
		end.url = cur;
		end.to = to;
		end.too_big = s->too_big;
		end.max = (size_t)s->max;
		end.errbuf = errbuf;
		next = request_judge(&rc->conf, &end, 0, hops, &tries, e);
		if (next == REQ_RETRY) {
			free(to);
			reg_sleep(request_backoff_ms(rc->lim.backoff_ms, tries));
			continue;
		}
		if (next == REQ_FOLLOW) {
			hops++;
			free(cur);
			cur = to;
			continue;
		}
		free(to);
		if (next == REQ_OK && end.code == 404) {
			char *shown = xfer_shown_url(cur);

			wb_error(e, WB_ENET, "'%s': not found (HTTP 404)", shown);
			free(shown);
		} else if (next == REQ_OK) {
			free(s->final);
			s->final = xstrdup(cur);
			ret = 0;
		}
		break;
	}
	free(cur);
	return ret;
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
		wb_error(e, WB_ENET, "'%s': the registry wants credentials (HTTP 401, "
			 "not a Bearer token challenge); winbuild pulls anonymously: "
			 "mirror the image where the build host can read it", shown);
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
	/* the realm obeys what every URL obeys: https, or http only where
	 * policy allows it */
	hop_url_scheme(realm, sc);
	if (strcmp(sc, "https") && !(strcmp(sc, "http") == 0 &&
				     verify_url_allowed(rc->conf.policy, realm))) {
		shown = xfer_shown_url(realm);
		wb_error(e, WB_EVERIFY, "the token realm '%s' of the registry '%s' is "
			 "refused: only https (or http where policy.allow_http)", shown,
			 rc->ref->host);
		free(shown);
		goto out;
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
	ret = reg_get(rc, u.ptr, "Accept: application/json", &s, e);
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

/* ---- manifests --------------------------------------------------------- */

static void sha256_digest(const void *p, size_t n, char out[REGISTRY_DIGEST_LEN + 1])
{
	struct digest_ctx dc;
	struct digest_result r;
	struct wb_err e = WB_ERR_INIT;

	memset(&dc, 0, sizeof(dc));
	memcpy(out, "sha256:", 7);
	if (digest_init(&dc, DIGEST_SHA256, &e) < 0) {
		out[7] = '\0';
		return;
	}
	digest_update(&dc, p, n);
	digest_final(&dc, &r);
	digest_release(&dc);
	digest_hex(r.sha256, 32, out + 7);
}

/* A verified manifest waiting for the cache. */
struct pending {
	char digest[REGISTRY_DIGEST_LEN + 1];
	struct buf bytes;            /* a manifest; or empty: */
	char *tmp_path;              /* a blob's temp file */
	int fd;
};

struct pull {
	struct cache *c;
	struct reg_client rc;
	struct pending *v;
	size_t nr, alloc;
};

static struct pending *pending_add(struct pull *p, const char *digest)
{
	struct pending *pd;

	ALLOC_GROW(p->v, p->nr + 1, p->alloc);
	pd = &p->v[p->nr++];
	memset(pd, 0, sizeof(*pd));
	memcpy(pd->digest, digest, sizeof(pd->digest));
	buf_init(&pd->bytes);
	pd->fd = -1;
	return pd;
}

static int pending_has(const struct pull *p, const char *digest)
{
	for (size_t i = 0; i < p->nr; i++)
		if (!strcmp(p->v[i].digest, digest))
			return 1;
	return 0;
}

/* The verified small answer B (a manifest, a payload) kept for the cache
 * under DIGEST, once. */
static void pending_keep(struct pull *p, const char *digest, const struct buf *b)
{
	if (!pending_has(p, digest))
		buf_add(&pending_add(p, digest)->bytes, b->ptr, b->len);
}

/* The manifest DIGEST from the cache into OUT, hashed as it is read: 1,
 * 0 absent (or quarantined: its bytes had changed), -1 an I/O error. */
static int cached_manifest(struct pull *p, const char *digest, struct buf *out,
			   struct wb_err *e)
{
	unsigned long long size;
	char got[REGISTRY_DIGEST_LEN + 1], *q = NULL, tmp[65536];
	int fd = -1, r = cache_entry_open(p->c, digest + 7, &size, &fd, &q, e);
	ssize_t n;

	free(q);
	if (r <= 0)
		return r;
	buf_reset(out);
	while (out->len <= REG_MANIFEST_MAX && (n = read(fd, tmp, sizeof(tmp))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			return wb_error(e, WB_EIO, "cannot read the cache entry of %s: %s",
					digest, strerror(errno));
		}
		buf_add(out, tmp, (size_t)n);
	}
	close(fd);
	sha256_digest(out->ptr, out->len, got);
	if (strcmp(got, digest)) {
		if (cache_quarantine(p->c, digest + 7, &q, e) < 0)
			return -1;
		free(q);
		buf_reset(out);
		return 0;
	}
	return 1;
}

/* Fetch the manifest (KIND "manifests") or small blob (KIND "blobs")
 * DIGEST, verified, at most MAX bytes: its bytes in OUT (kept in the
 * pending list too). */
/* GET URL into OUT (at most MAX bytes); *CODE the answer's status (a 404
 * is an error here too). */
static int get_buf(struct pull *p, const char *url, const char *accept, size_t max,
		   struct buf *out, long *code, struct wb_err *e)
{
	struct reg_sink s;
	int ret;

	memset(&s, 0, sizeof(s));
	s.b = out;
	s.fd = -1;
	s.max = max;
	ret = reg_get(&p->rc, url, accept, &s, e);
	*code = s.code;
	buf_release(&s.www_auth);
	free(s.final);
	return ret;
}

static int get_small(struct pull *p, const char *kind, const char *digest, size_t max,
		     const char *accept, struct buf *out, struct wb_err *e)
{
	char *url = xasprintf("%s/v2/%s/%s/%s", p->rc.origin, p->rc.ref->repo, kind, digest);
	char got[REGISTRY_DIGEST_LEN + 1];
	long code;
	int ret = -1;

	switch (cached_manifest(p, digest, out, e)) {
	case 1:
		ret = 0;   /* verified by its name; already in the cache */
		goto out;
	case -1:
		goto out;
	}
	if (p->rc.o->offline) {
		wb_error(e, WB_ENET, "image '%s': %s %s is not in the cache (--offline)",
			 p->rc.name, kind[0] == 'm' ? "manifest" : "blob", digest);
		goto out;
	}
	if (get_buf(p, url, accept, max, out, &code, e) < 0)
		goto out;
	sha256_digest(out->ptr, out->len, got);
	if (strcmp(got, digest)) {
		char *shown = xfer_shown_url(url);

		wb_error(e, WB_EVERIFY, "image '%s': the %s from '%s' does not "
			 "match its digest: expected %s, got %s (nothing cached)",
			 p->rc.name, kind[0] == 'm' ? "manifest" : "blob", shown, digest, got);
		free(shown);
		goto out;
	}
	pending_keep(p, digest, out);
	ret = 0;
out:
	free(url);
	return ret;
}

static int get_manifest(struct pull *p, const char *digest, struct buf *out,
			struct wb_err *e)
{
	return get_small(p, "manifests", digest, REG_MANIFEST_MAX, reg_accept, out, e);
}

static const char *media_type_of(json_t *root)
{
	json_t *mt = json_object_get(root, "mediaType");

	return json_is_string(mt) ? json_string_value(mt) : NULL;
}

static int is_index(json_t *root)
{
	const char *mt = media_type_of(root);

	if (mt)
		return !strcmp(mt, "application/vnd.oci.image.index.v1+json") ||
		       !strcmp(mt, "application/vnd.docker.distribution.manifest.list.v2+json");
	/* an OCI index may leave mediaType out: "manifests" tells */
	return json_is_array(json_object_get(root, "manifests"));
}

/* Whether the build VERSION ("10.0.20348.2655") is WANT ("10.0.20348") or
 * one of its revisions. */
static int build_matches(const char *version, const char *want)
{
	size_t n = strlen(want);

	return version && !strncmp(version, want, n) &&
	       (version[n] == '\0' || version[n] == '.');
}

static const char *jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Pick the entry of the index ROOT for windows/amd64 and the wanted build:
 * its digest in OUT. */
static int select_entry(struct pull *p, json_t *root, char out[REGISTRY_DIGEST_LEN + 1],
			struct wb_err *e)
{
	json_t *ms = json_object_get(root, "manifests"), *m;
	struct buf have = BUF_INIT;
	size_t i;

	if (!json_is_array(ms))
		return wb_error(e, WB_EUSAGE, "image '%s': the index has no manifests list",
				p->rc.name);
	json_array_foreach(ms, i, m) {
		json_t *pl = json_object_get(m, "platform");
		const char *os = jstr(pl, "os"), *arch = jstr(pl, "architecture");
		const char *ver = jstr(pl, "os.version"), *d = jstr(m, "digest");

		/* containerd's platform matcher would take the first windows/amd64
		 * entry whose os.version fits the host; this is the same choice
		 * made on the build host for the recipe's Windows build */
		if (os && arch && !strcmp(os, "windows") && !strcmp(arch, "amd64") &&
		    build_matches(ver, p->rc.o->os_version)) {
			if (!d || !imageref_digest_ok(d)) {
				buf_release(&have);
				return wb_error(e, WB_EVERIFY, "image '%s': the index entry "
						"for %s has no sha256 digest", p->rc.name, ver);
			}
			memcpy(out, d, REGISTRY_DIGEST_LEN + 1);
			buf_release(&have);
			return 0;
		}
		buf_addf(&have, "%s%s/%s%s%s", have.len ? ", " : "", os ? os : "?",
			 arch ? arch : "?", ver ? " " : "", ver ? ver : "");
	}
	wb_error(e, WB_EVERIFY, "image '%s': the manifest list has no windows/amd64 entry "
		 "for Windows build %s (it has: %s); pin a digest that has one, or "
		 "build for a Windows version the image supports", p->rc.name,
		 p->rc.o->os_version, have.len ? have.ptr : "nothing");
	buf_release(&have);
	return -1;
}

static int read_descriptor(struct pull *p, json_t *d, struct registry_blob *b,
			   const char *what, struct wb_err *e)
{
	const char *mt = jstr(d, "mediaType"), *dg = jstr(d, "digest");
	json_t *sz = json_object_get(d, "size"), *urls = json_object_get(d, "urls");

	if (!dg || !imageref_digest_ok(dg) || !json_is_integer(sz) || json_integer_value(sz) < 0)
		return wb_error(e, WB_EVERIFY, "image '%s': its %s has no sha256 digest "
				"and size winbuild can check", p->rc.name, what);
	memcpy(b->digest, dg, REGISTRY_DIGEST_LEN + 1);
	b->size = (unsigned long long)json_integer_value(sz);
	b->media_type = xstrdup(mt ? mt : "");
	b->foreign = json_is_array(urls) && json_array_size(urls) > 0;
	if (b->size > p->rc.lim.max_size)
		return wb_error(e, WB_EVERIFY, "image '%s': its %s %s is %llu bytes, "
				"more than WINBUILD_MAX_SIZE (%llu)", p->rc.name, what,
				b->digest, b->size, p->rc.lim.max_size);
	return 0;
}

/* ---- the cosign signature ---------------------------------------------- */

void registry_sig_ref_key(const struct image_ref *ref, char out[65])
{
	char *spec = xasprintf("cosign-signature %s/%s@%s", ref->host, ref->repo, ref->digest);

	cache_ref_key(spec, out);
	free(spec);
}

/* The pin's signature manifest: by its tag online (cosign's layout: the
 * tag sha256-<hex>.sig in the image's repository), by the cache ref
 * offline. Its digest in DIGEST, its bytes in OUT (pending). */
static int sig_manifest(struct pull *p, char digest[REGISTRY_DIGEST_LEN + 1],
			struct buf *out, struct wb_err *e)
{
	char *url;
	long code;

	if (p->rc.o->offline) {
		struct cache_ref ref;
		char key[65];
		int r;

		registry_sig_ref_key(p->rc.ref, key);
		r = cache_ref_load(p->c, key, &ref, e);
		if (r < 0)
			return -1;
		if (r == 0)
			return wb_error(e, WB_ENET, "image '%s': its cosign signature is not in "
					"the cache (--offline); fetch it once online", p->rc.name);
		snprintf(digest, REGISTRY_DIGEST_LEN + 1, "sha256:%s", ref.sha256);
		cache_ref_release(&ref);
		return get_manifest(p, digest, out, e);
	}
	url = xasprintf("%s/v2/%s/manifests/sha256-%s.sig", p->rc.origin, p->rc.ref->repo,
			p->rc.ref->digest + 7);
	if (get_buf(p, url, reg_accept, REG_MANIFEST_MAX, out, &code, e) < 0) {
		if (code == 404) {
			char *shown = xfer_shown_url(url);

			wb_error(e, WB_EVERIFY, "image '%s': no cosign signature ('%s' answers "
				 "404) and the recipe requires one; nothing cached", p->rc.name,
				 shown);
			free(shown);
		}
		free(url);
		return -1;
	}
	free(url);
	/* a tag is not a pin: the signature manifest is whatever the tag
	 * names now, and what it holds is verified below */
	sha256_digest(out->ptr, out->len, digest);
	pending_keep(p, digest, out);
	return 0;
}

/* Fetch and verify the pin's cosign signature (registry_opts.cosign)
 * into IMG, before any blob of the image is asked for. */
static int get_signature(struct pull *p, struct registry_image *img, struct wb_err *e)
{
	struct buf man = BUF_INIT, *pl = NULL;
	json_t *root = NULL, *layers, *l;
	json_error_t je;
	size_t i, n = 0;
	int ret = -1;

	if (sig_manifest(p, img->sig_digest, &man, e) < 0)
		goto out;
	root = json_loadb(man.ptr, man.len, 0, &je);
	layers = json_object_get(root, "layers");
	n = json_is_array(layers) ? json_array_size(layers) : 0;
	if (!n || n > OCISIG_LAYERS_MAX) {
		wb_error(e, WB_EVERIFY, "image '%s': the cosign signature manifest %s holds "
			 "%zu signature layers (1 to %u); nothing cached", p->rc.name,
			 img->sig_digest, n, OCISIG_LAYERS_MAX);
		n = 0;
		goto out;
	}
	pl = xcalloc(n, sizeof(*pl));
	for (i = 0; i < n; i++)
		buf_init(&pl[i]);
	json_array_foreach(layers, i, l) {
		const char *d = jstr(l, "digest");
		json_t *sz = json_object_get(l, "size");

		if (!d || !imageref_digest_ok(d) || !json_is_integer(sz) ||
		    json_integer_value(sz) < 0 || json_integer_value(sz) > OCISIG_PAYLOAD_MAX) {
			wb_error(e, WB_EVERIFY, "image '%s': signature layer %zu of %s has no "
				 "sha256 digest and size (at most %u bytes) winbuild can check",
				 p->rc.name, i + 1, img->sig_digest, OCISIG_PAYLOAD_MAX);
			goto out;
		}
		if (get_small(p, "blobs", d, OCISIG_PAYLOAD_MAX, NULL, &pl[i], e) < 0)
			goto out;
	}
	if (ocisig_verify(p->rc.ref->digest, man.ptr, man.len, pl, n, p->rc.o->cosign,
			  &img->sig, e) < 0) {
		wb_error_prefix(e, "image '%s': cosign signature %s", p->rc.name,
				img->sig_digest);
		goto out;
	}
	ret = 0;
out:
	for (i = 0; i < n && pl; i++)
		buf_release(&pl[i]);
	free(pl);
	json_decref(root);
	buf_release(&man);
	return ret;
}

/* The signature manifest's digest under the pin's ref, once it is in the
 * cache: what an offline pull verifies again. */
static int store_sig_ref(struct pull *p, const struct registry_image *img, struct wb_err *e)
{
	struct cache_ref ref;
	char key[65];
	int ret;

	memset(&ref, 0, sizeof(ref));
	registry_sig_ref_key(p->rc.ref, key);
	ref.artifact = p->rc.name;
	memcpy(ref.sha256, img->sig_digest + 7, 65);
	ref.url = xasprintf("%s/v2/%s/manifests/sha256-%s.sig", p->rc.origin, p->rc.ref->repo,
			    p->rc.ref->digest + 7);
	ret = cache_ref_store(p->c, key, &ref, e);
	free(ref.url);
	return ret;
}

/* ---- blobs ------------------------------------------------------------- */

/* Fetch the blob B (from URL) into a temp file of the cache, verified by
 * size and digest; kept pending. */
static int get_blob_from(struct pull *p, const struct registry_blob *b, const char *url,
			 unsigned long long *bytes, struct wb_err *e)
{
	struct reg_sink s;
	struct digest_result r;
	char got[REGISTRY_DIGEST_LEN + 1], *tmp = NULL;
	int fd = -1, ret = -1;

	memset(&s, 0, sizeof(s));
	if (cache_tmp_create(p->c, &tmp, &fd, e) < 0)
		return -1;
	s.fd = fd;
	/* exactly the descriptor's size: a longer body is refused as it
	 * arrives, a shorter one fails the digest */
	s.max = b->size;
	if (reg_get(&p->rc, url, NULL, &s, e) < 0) {
		if (s.too_big) {
			/* more bytes than the verified manifest promised: a
			 * mismatch, not a network failure */
			char *shown = xfer_shown_url(url);

			wb_error(e, WB_EVERIFY, "image '%s': the blob from '%s' is longer "
				 "than its descriptor says (%s, %llu bytes); nothing cached",
				 p->rc.name, shown, b->digest, b->size);
			free(shown);
		}
		goto out;
	}
	digest_final(&s.dc, &r);
	memcpy(got, "sha256:", 7);
	digest_hex(r.sha256, 32, got + 7);
	*bytes += s.have;
	if (strcmp(got, b->digest) || s.have != b->size) {
		char *shown = xfer_shown_url(url), *from = xfer_shown_url(s.final);
		int hop = strcmp(url, s.final) != 0;

		wb_error(e, WB_EVERIFY, "image '%s': the blob from '%s'%s%s%s does not "
			 "match its descriptor: expected %s (%llu bytes), got %s (%llu "
			 "bytes); nothing cached", p->rc.name, shown,
			 hop ? " (redirected to '" : "", hop ? from : "", hop ? "')" : "",
			 b->digest, b->size, got, s.have);
		free(shown);
		free(from);
		goto out;
	}
	{
		struct pending *pd = pending_add(p, b->digest);

		pd->tmp_path = tmp;
		pd->fd = fd;
		tmp = NULL;
		fd = -1;
	}
	ret = 0;
out:
	if (s.dc_live)
		digest_release(&s.dc);
	buf_release(&s.www_auth);
	free(s.final);
	if (fd >= 0)
		close(fd);
	if (tmp)
		unlink(tmp);
	free(tmp);
	return ret;
}

static int foreign_refused(struct pull *p, const struct registry_blob *b,
			   struct wb_err *e)
{
	/* containerd's fetcher (core/remotes/docker/fetcher.go) tries a
	 * descriptor's urls before the registry, unasked; winbuild refuses
	 * them unless allowed, since they lead to hosts no recipe or mirror
	 * rule named (Microsoft's, for old Windows base layers) */
	return wb_error(e, WB_EVERIFY, "image '%s': layer %s is a foreign layer "
			"(non-distributable, with urls), refused by policy; allow "
			"foreign layers (--allow-foreign-layers) or pin an image "
			"without one (nothing cached)", p->rc.name, b->digest);
}

static int get_blob(struct pull *p, json_t *desc, const struct registry_blob *b,
		    unsigned long long *bytes, struct wb_err *e)
{
	unsigned long long size;
	char *q = NULL, *url;
	int r;

	if (pending_has(p, b->digest))
		return 0;
	r = cache_lookup(p->c, b->digest + 7, &size, NULL, &q, e);
	free(q);   /* a quarantined entry is fetched again */
	if (r < 0)
		return -1;
	if (r == 1 && size == b->size)
		return 0;
	if (p->rc.o->offline)
		return wb_error(e, WB_ENET, "image '%s': blob %s is not in the cache "
				"(--offline)", p->rc.name, b->digest);
	if (b->foreign) {
		json_t *urls = json_object_get(desc, "urls"), *u;
		size_t i;
		struct wb_err first = WB_ERR_INIT;

		if (!p->rc.o->allow_foreign)
			return foreign_refused(p, b, e);
		json_array_foreach(urls, i, u) {
			if (!json_is_string(u))
				continue;
			if (get_blob_from(p, b, json_string_value(u), bytes, &first) == 0)
				return 0;
			if (first.code == WB_EIO)
				break;
		}
		if (first.code) {
			*e = first;
			return -1;
		}
	}
	url = xasprintf("%s/v2/%s/blobs/%s", p->rc.origin, p->rc.ref->repo, b->digest);
	r = get_blob_from(p, b, url, bytes, e);
	free(url);
	return r;
}

/* Every pending manifest and blob into the cache. */
static int pull_commit(struct pull *p, struct wb_err *e)
{
	for (size_t i = 0; i < p->nr; i++) {
		struct pending *pd = &p->v[i];

		if (!pd->tmp_path) {
			size_t off = 0;

			if (cache_tmp_create(p->c, &pd->tmp_path, &pd->fd, e) < 0)
				return -1;
			while (off < pd->bytes.len) {
				ssize_t w = write(pd->fd, pd->bytes.ptr + off, pd->bytes.len - off);

				if (w < 0 && errno == EINTR)
					continue;
				if (w < 0)
					return wb_error(e, WB_EIO, "cannot write '%s': %s",
							pd->tmp_path, strerror(errno));
				off += (size_t)w;
			}
		}
		if (cache_insert(p->c, pd->tmp_path, pd->fd, pd->digest + 7, e) < 0)
			return -1;
		free(pd->tmp_path);
		pd->tmp_path = NULL;
	}
	return 0;
}

static void pull_release(struct pull *p)
{
	for (size_t i = 0; i < p->nr; i++) {
		if (p->v[i].fd >= 0)
			close(p->v[i].fd);
		if (p->v[i].tmp_path)
			unlink(p->v[i].tmp_path);
		free(p->v[i].tmp_path);
		buf_release(&p->v[i].bytes);
	}
	free(p->v);
	free(p->rc.origin);
	if (p->rc.token)
		memset(p->rc.token, 0, strlen(p->rc.token));
	free(p->rc.token);
	free(p->rc.name);
}

void registry_image_release(struct registry_image *img)
{
	free(img->list_media_type);
	free(img->manifest_media_type);
	free(img->os_version);
	free(img->config.media_type);
	for (size_t i = 0; i < img->nlayers; i++)
		free(img->layers[i].media_type);
	free(img->layers);
	ocisig_evidence_release(&img->sig);
	memset(img, 0, sizeof(*img));
}

/* The image config's platform: the truth the index entry only claims. */
static int check_config(struct pull *p, struct registry_image *img, struct wb_err *e)
{
	json_t *root = NULL;
	json_error_t je;
	const char *os, *arch, *ver;
	int ret = -1, found = 0;

	/* the config is small: read it from its pending temp file (verified
	 * in this run) or from the cache entry (re-hashed by cache_lookup) */
	for (size_t i = 0; i < p->nr; i++)
		if (!strcmp(p->v[i].digest, img->config.digest) && p->v[i].fd >= 0) {
			found = 1;
			if (lseek(p->v[i].fd, 0, SEEK_SET) == 0)
				root = json_loadfd(p->v[i].fd, 0, &je);
			break;
		}
	if (!found) {
		unsigned long long size;
		char *q = NULL;
		int fd = -1, r = cache_entry_open(p->c, img->config.digest + 7, &size, &fd,
						  &q, e);

		free(q);
		if (r < 0)
			return -1;
		if (r == 1) {
			root = json_loadfd(fd, 0, &je);
			close(fd);
		}
	}
	if (!json_is_object(root)) {
		wb_error(e, WB_EVERIFY, "image '%s': its config %s is not a JSON object",
			 p->rc.name, img->config.digest);
		goto out;
	}
	os = jstr(root, "os");
	arch = jstr(root, "architecture");
	ver = jstr(root, "os.version");
	if (!os || !arch || strcmp(os, "windows") || strcmp(arch, "amd64") ||
	    !build_matches(ver, p->rc.o->os_version)) {
		wb_error(e, WB_EVERIFY, "image '%s': its config says %s/%s %s, not "
			 "windows/amd64 for Windows build %s", p->rc.name, os ? os : "?",
			 arch ? arch : "?", ver ? ver : "(no os.version)", p->rc.o->os_version);
		goto out;
	}
	img->os_version = xstrdup(ver);
	ret = 0;
out:
	json_decref(root);
	return ret;
}

int registry_pull(struct cache *c, const struct image_ref *ref,
		  const struct registry_opts *o, struct registry_image *img,
		  struct wb_err *e)
{
	struct pull p;
	struct buf body = BUF_INIT;
	json_t *root = NULL, *layers, *d;
	json_error_t je;
	char digest[REGISTRY_DIGEST_LEN + 1];
	size_t i;
	int ret = -1;

	memset(img, 0, sizeof(*img));
	memset(&p, 0, sizeof(p));
	p.c = c;
	if (!ref->digest[0])
		return wb_error(e, WB_EUSAGE, "image '%s/%s%s%s': no digest; pin it "
				"(name:tag@sha256:...)", ref->host, ref->repo,
				ref->tag ? ":" : "", ref->tag ? ref->tag : "");
	if (env_limits_read(&p.rc.lim, e) < 0)
		return -1;
	p.rc.o = o;
	p.rc.ref = ref;
	snprintf(p.rc.ua, sizeof(p.rc.ua), "winbuild/%s", WB_VERSION);
	p.rc.conf.policy = o->t->policy;
	p.rc.conf.cacert = o->t->cacert;
	p.rc.conf.user_agent = p.rc.ua;
	p.rc.conf.max_tries = (int)p.rc.lim.retries;
	p.rc.conf.connect_timeout = p.rc.lim.connect_timeout;
	p.rc.conf.low_speed_time = p.rc.lim.low_speed_time;
	p.rc.conf.low_speed_limit = p.rc.lim.low_speed_limit;
	p.rc.origin = xasprintf("https://%s", ref->host);
	for (char *q = p.rc.origin; *q; q++)
		if (*q >= 'A' && *q <= 'Z')
			*q = (char)(*q - 'A' + 'a');
	p.rc.name = xasprintf("%s/%s@%s", ref->host, ref->repo, ref->digest);

	memcpy(digest, ref->digest, sizeof(digest));
	if (get_manifest(&p, digest, &body, e) < 0)
		goto out;
	/* the signature before anything else is asked for: an image whose
	 * signature does not verify costs one manifest, not its layers */
	if (o->cosign && get_signature(&p, img, e) < 0)
		goto out;
	root = json_loadb(body.ptr, body.len, 0, &je);
	if (!json_is_object(root)) {
		wb_error(e, WB_EVERIFY, "image '%s': its manifest is not a JSON object: %s",
			 p.rc.name, je.text);
		goto out;
	}
	if (is_index(root)) {
		memcpy(img->list_digest, digest, sizeof(digest));
		img->list_size = body.len;
		img->list_media_type = media_type_of(root) ? xstrdup(media_type_of(root)) :
				       xstrdup("application/vnd.oci.image.index.v1+json");
		if (select_entry(&p, root, digest, e) < 0)
			goto out;
		json_decref(root);
		if (get_manifest(&p, digest, &body, e) < 0) {
			root = NULL;
			goto out;
		}
		root = json_loadb(body.ptr, body.len, 0, &je);
		if (!json_is_object(root) || is_index(root)) {
			wb_error(e, WB_EVERIFY, "image '%s': the entry %s for Windows build "
				 "%s is not an image manifest", p.rc.name, digest,
				 o->os_version);
			goto out;
		}
	}
	memcpy(img->manifest_digest, digest, sizeof(digest));
	img->manifest_size = body.len;
	img->manifest_media_type = xstrdup(media_type_of(root) ? media_type_of(root) :
					   "application/vnd.oci.image.manifest.v1+json");
	layers = json_object_get(root, "layers");
	if (!json_is_array(layers) || !json_array_size(layers)) {
		wb_error(e, WB_EVERIFY, "image '%s': its manifest %s has no layers",
			 p.rc.name, digest);
		goto out;
	}
	if (read_descriptor(&p, json_object_get(root, "config"), &img->config, "config",
			    e) < 0)
		goto out;
	img->layers = xcalloc(json_array_size(layers), sizeof(*img->layers));
	json_array_foreach(layers, i, d) {
		char what[32];

		snprintf(what, sizeof(what), "layer %zu", i + 1);
		img->nlayers++;
		if (read_descriptor(&p, d, &img->layers[i], what, e) < 0)
			goto out;
	}
	/* the refusals first (a foreign layer), before any blob is asked */
	for (i = 0; i < img->nlayers; i++)
		if (img->layers[i].foreign && !o->allow_foreign) {
			foreign_refused(&p, &img->layers[i], e);
			goto out;
		}
	if (get_blob(&p, json_object_get(root, "config"), &img->config,
		     &img->bytes_downloaded, e) < 0)
		goto out;
	if (check_config(&p, img, e) < 0)
		goto out;
	json_array_foreach(layers, i, d)
		if (get_blob(&p, d, &img->layers[i], &img->bytes_downloaded, e) < 0)
			goto out;
	if (pull_commit(&p, e) < 0)
		goto out;
	if (o->cosign && !o->offline && store_sig_ref(&p, img, e) < 0)
		goto out;
	ret = 0;
out:
	json_decref(root);
	buf_release(&body);
	pull_release(&p);
	if (ret < 0)
		registry_image_release(img);
	return ret;
}
