/*
 * Credentials for artifact servers: the sources, the lookup by URL, the
 * curl options. See creds.h.
 *
 * Why a file of our own beside netrc: netrc says only "this host, this
 * user, this password". Artifact servers also want a bearer token, AWS
 * SigV4 (region, service), a client certificate or an Azure SAS query,
 * and one host often serves several repositories with different tokens
 * (a path prefix). The format is INI ([name], key = value), the shape of
 * the AWS CLI's credentials file that the same users already keep, and deliberately
 * not YAML: a credentials file can never be mistaken for a recipe or an
 * override (-O), which are committed and shared.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "fetch/creds.h"
#include "lib/base64.h"
#include "lib/buf.h"
#include "lib/redact.h"
#include "lib/url.h"

#define CREDS_FILE_MAX (256 * 1024)

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

static void entry_release(struct creds_entry *ce)
{
	free(ce->name);
	free(ce->scheme);
	free(ce->host);
	free(ce->prefix);
	free(ce->user);
	wipe_free(ce->secret);
	wipe_free(ce->session_token);
	free(ce->sigv4);
	free(ce->cert);
	free(ce->key);
	free(ce->header);
	free(ce->registries);
	free(ce->where);
	memset(ce, 0, sizeof(*ce));
}

void creds_release(struct creds *c)
{
	for (size_t i = 0; i < c->nr; i++)
		entry_release(&c->v[i]);
	free(c->v);
	c->v = NULL;
	c->nr = 0;
}

const char *creds_from_name(enum creds_from from)
{
	switch (from) {
	case CREDS_FROM_FILE: return "the credentials file";
	case CREDS_FROM_ENV: return "the environment";
	case CREDS_FROM_NETRC: return "netrc";
	case CREDS_FROM_DOCKER: return "a container auth file";
	case CREDS_FROM_HELPER: return "a docker credential helper";
	case CREDS_FROM_NONE: break;
	}
	return "none";
}

/* ---- URLs: one parser, one origin rule (lib/url.h) ------------------- */

void creds_origin_text(const char *url, char *out, size_t n)
{
	wb_url_origin_text(url, out, n);
}

/*
 * @where the one URL parser and origin rule (scheme, host, port; the default
 *   port explicit)
 */
int creds_match_origin(const struct creds_entry *ce, const char *url)
{
	struct wb_url o;
	int ok;

	if (wb_url_parse(url, &o) < 0)
		return 0;
	ok = !strcmp(o.host, ce->host) && (!ce->scheme || !strcmp(ce->scheme, o.scheme)) &&
		/* netrc names a host only: any port of it for the URL the
		 * plan names, as curl does; hop_creds binds it to that URL's
		 * whole origin from then on */
		(!ce->port || ce->port == o.port);
	wb_url_release(&o);
	return ok;
}

int creds_names_registry(const struct creds_entry *ce, const char *registry_url)
{
	for (const char *r = ce->registries; r && *r;) {
		size_t n = strcspn(r, " \t");
		char *one = xstrndup(r, n);
		int same = wb_url_same_origin(one, registry_url);

		free(one);
		if (same)
			return 1;
		r += n;
		r += strspn(r, " \t");
	}
	return 0;
}

/* The order of the sources (creds.h): 0 first. */
static int source_rank(enum creds_from f)
{
	return f == CREDS_FROM_NETRC ? 1 : f == CREDS_FROM_DOCKER || f == CREDS_FROM_HELPER ? 2 : 0;
}

/* Whether PATH (a URL's, from its '/') is below PREFIX, at a segment. */
static int below(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (!strcmp(prefix, "/"))
		return 1;
	if (n && prefix[n - 1] == '/')
		return !strncmp(path, prefix, n);
	return !strncmp(path, prefix, n) && strchr("/?#", path[n]);
}

/*
 * @where credentials for artifact servers (the credentials file, netrc, the
 *   environment; the lookup; the curl options)
 */
const struct creds_entry *creds_for(const struct creds *c, const char *url, const char *name)
{
	const struct creds_entry *best = NULL;
	struct wb_url o;
	const char *path;

	if (!c || wb_url_parse(url, &o) < 0)
		return NULL;
	path = o.path;
	for (size_t i = 0; i < c->nr; i++) {
		const struct creds_entry *ce = &c->v[i];

		if (name && strcmp(ce->name, name))
			continue;
		if (!creds_match_origin(ce, url) || !below(path, ce->prefix))
			continue;
		/* a source beats the ones after it (the credentials file,
		 * netrc, the container auth files: listed in that order);
		 * within one, a longer prefix beats a shorter one */
		if (!best || (source_rank(ce->from) == source_rank(best->from) &&
			      strlen(ce->prefix) > strlen(best->prefix)))
			best = ce;
	}
	wb_url_release(&o);
	return best;
}

/* ---- files: read, refuse what others may read ----------------------- */

/* The text of PATH (a file holding secrets), or NULL with E. MISSING_OK:
 * a file that does not exist is no error (*TEXT NULL, 0). */
static int read_secret_file(const char *path, const char *what, int missing_ok,
			    char **text, struct wb_err *e)
{
	struct stat st;
	struct buf b = BUF_INIT;
	char chunk[4096];
	ssize_t n;
	int fd;

	*text = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 && errno == ENOENT && missing_ok)
		return 0;
	if (fd < 0)
		return wb_error(e, WB_EUSAGE, "%s '%s': %s", what, path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return wb_error(e, WB_EUSAGE, "%s '%s' is not a regular file", what, path);
	}
	/* as ssh refuses a private key others can read (sshkey_perm_ok) */
	if ((st.st_mode & 077) || st.st_uid != geteuid()) {
		close(fd);
		if (st.st_uid != geteuid())
			return wb_error(e, WB_EUSAGE, "%s '%s' holds secrets and belongs to "
					"another user: refused (use a file of your own, mode 600)",
					what, path);
		return wb_error(e, WB_EUSAGE, "%s '%s' holds secrets and other users may "
				"read it (mode %03o): refused; run 'chmod 600 %s' and try again",
				what, path, (unsigned)(st.st_mode & 0777), path);
	}
	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		if (b.len + (size_t)n > CREDS_FILE_MAX) {
			close(fd);
			buf_release(&b);
			return wb_error(e, WB_EUSAGE, "%s '%s' is larger than %d bytes", what,
					path, CREDS_FILE_MAX);
		}
		buf_add(&b, chunk, (size_t)n);
	}
	close(fd);
	if (n < 0) {
		buf_release(&b);
		return wb_error(e, WB_EUSAGE, "%s '%s': %s", what, path, strerror(errno));
	}
	*text = buf_detach(&b, NULL);
	return 0;
}

static struct creds_entry *push_entry(struct creds *c)
{
	c->v = xrealloc(c->v, (c->nr + 1) * sizeof(*c->v));
	memset(&c->v[c->nr], 0, sizeof(c->v[0]));
	return &c->v[c->nr++];
}

/* ---- netrc ------------------------------------------------------------ */

/* The next token of netrc text at *P ("quoted" allowed), or NULL. */
static char *netrc_token(const char **p)
{
	const char *s = *p;
	struct buf b = BUF_INIT;

	while (*s && isspace((unsigned char)*s))
		s++;
	if (!*s) {
		*p = s;
		return NULL;
	}
	if (*s == '"') {
		for (s++; *s && *s != '"'; s++) {
			if (*s == '\\' && s[1])
				s++;
			buf_addc(&b, *s);
		}
		if (*s)
			s++;
	} else {
		while (*s && !isspace((unsigned char)*s))
			buf_addc(&b, *s++);
	}
	*p = s;
	return buf_detach(&b, NULL);
}

static int load_netrc(struct creds *c, const char *path, int missing_ok, struct wb_err *e)
{
	char *text, *tok, *host = NULL, *login = NULL, *pass = NULL;
	const char *p;
	int in_default = 0;

	if (read_secret_file(path, "netrc file", missing_ok, &text, e) < 0)
		return -1;
	if (!text)
		return 0;
	p = text;
	for (;;) {
		tok = netrc_token(&p);
		if (!tok || !strcmp(tok, "machine") || !strcmp(tok, "default")) {
			if (host && login && pass && !in_default) {
				struct creds_entry *ce = push_entry(c);

				ce->name = xstrdup(host);
				ce->host = xstrdup(host);
				for (char *h = ce->host; *h; h++)
					*h = (char)tolower((unsigned char)*h);
				ce->prefix = xstrdup("/");
				ce->kind = CREDS_BASIC;
				ce->user = login;
				ce->secret = pass;
				ce->from = CREDS_FROM_NETRC;
				ce->where = xasprintf("netrc '%s'", path);
				login = pass = NULL;
			}
			free(host);
			wipe_free(pass);
			free(login);
			host = login = pass = NULL;
			in_default = tok && !strcmp(tok, "default");
			if (tok && !in_default)
				host = netrc_token(&p);
			if (!tok)
				break;
		} else if (!strcmp(tok, "login")) {
			free(login);
			login = netrc_token(&p);
		} else if (!strcmp(tok, "password")) {
			wipe_free(pass);
			pass = netrc_token(&p);
		} else if (!strcmp(tok, "account")) {
			wipe_free(netrc_token(&p));
		} else if (!strcmp(tok, "macdef")) {
			/* a macro runs to the next empty line */
			const char *end = strstr(p, "\n\n");

			p = end ? end + 2 : p + strlen(p);
		}
		wipe_free(tok);
	}
	wipe_free(text);
	return 0;
}

/* ---- the credentials file -------------------------------------------- */

static const char *const kind_names[] = {
	[CREDS_BASIC] = "basic",
	[CREDS_BEARER] = "bearer",
	[CREDS_SIGV4] = "sigv4",
	[CREDS_CERT] = "client-cert",
	[CREDS_QUERY] = "query",
};

struct section {
	char *name, *url, *type, *user, *secret, *secret_env, *sigv4, *cert, *key, *header;
	char *registries;
	int line;
};

static void section_release(struct section *s)
{
	free(s->name);
	free(s->url);
	free(s->type);
	free(s->user);
	wipe_free(s->secret);
	free(s->secret_env);
	free(s->sigv4);
	free(s->cert);
	free(s->key);
	free(s->header);
	free(s->registries);
	memset(s, 0, sizeof(*s));
}

static char *env_dup(const char *var)
{
	const char *v = getenv(var);

	return v && *v ? xstrdup(v) : NULL;
}

/* How many ':'-separated parts S has. */
static int sigv4_parts(const char *s)
{
	int n = 1;

	for (; *s; s++)
		n += *s == ':';
	return n;
}

static int section_check(struct creds *c, struct section *s, const char *path,
			 const struct wb_url *o, struct creds_entry *cep, struct wb_err *e);

/* Section S of PATH becomes an entry of C. */
static int section_done(struct creds *c, struct section *s, const char *path, struct wb_err *e)
{
	struct creds_entry ce;
	struct wb_url o;
	int ret;

	if (!s->name)
		return 0;
	memset(&ce, 0, sizeof(ce));
	if (!s->url || wb_url_parse(s->url, &o) < 0 || (strcmp(o.scheme, "https") &&
	    strcmp(o.scheme, "http")) || o.has_user || o.has_query || o.has_fragment ||
	    strpbrk(s->url, "@?#")) {
		wb_url_release(&o);
		return wb_error(e, WB_EUSAGE, "%s:%d: [%s] needs 'url = https://HOST[:PORT][/PREFIX]' "
				"(no user, query or fragment)", path, s->line, s->name);
	}
	ret = section_check(c, s, path, &o, &ce, e);
	wb_url_release(&o);
	return ret;
}

/* section_done's checks of S (its URL parsed in O) and the entry. */
static int section_check(struct creds *c, struct section *s, const char *path,
			 const struct wb_url *o, struct creds_entry *cep, struct wb_err *e)
{
	struct creds_entry ce = *cep;
	size_t k;
	/* one plain header beside the credential (Azure Blob wants
	 * x-ms-version with an Entra ID bearer token): "Name: value" */
	if (s->header && (!strchr(s->header, ':') || s->header[0] == ':' ||
			  strcspn(s->header, "\r\n") != strlen(s->header) ||
			  strcspn(s->header, " \t") < strcspn(s->header, ":") ||
			  !strncasecmp(s->header, "authorization:", 14)))
		return wb_error(e, WB_EUSAGE, "%s:%d: [%s] header is 'Name: value' on one line "
				"(not Authorization: that is what type says)", path, s->line, s->name);
	for (const char *r = s->registries; r && *r;) {
		size_t n = strcspn(r, " \t");
		char *one = xstrndup(r, n);
		struct wb_url ru;
		int bad = wb_url_parse(one, &ru) < 0 || strcmp(ru.scheme, "https") || ru.has_user ||
			ru.has_query || ru.has_fragment || strcmp(ru.path, "/");

		wb_url_release(&ru);
		free(one);
		if (bad)
			return wb_error(e, WB_EUSAGE, "%s:%d: [%s] registry = is a list of "
					"https://HOST[:PORT] (the registries whose token realm this "
					"entry's url is)", path, s->line, s->name);
		r += n;
		r += strspn(r, " \t");
	}
	for (k = 0; k < sizeof(kind_names) / sizeof(kind_names[0]); k++)
		if (s->type && !strcmp(s->type, kind_names[k]))
			break;
	if (k == sizeof(kind_names) / sizeof(kind_names[0]))
		return wb_error(e, WB_EUSAGE, "%s:%d: [%s] needs 'type =' basic, bearer, "
				"sigv4, client-cert or query", path, s->line, s->name);
	ce.kind = (enum creds_kind)k;
	ce.from = CREDS_FROM_FILE;
	if (s->secret_env) {
		ce.secret = env_dup(s->secret_env);
		ce.from = CREDS_FROM_ENV;
		if (!ce.secret)
			return wb_error(e, WB_EUSAGE, "%s:%d: [%s] takes its secret from $%s, "
					"which is not set", path, s->line, s->name, s->secret_env);
	} else if (s->secret) {
		ce.secret = xstrdup(s->secret);
	}
	switch (ce.kind) {
	case CREDS_BASIC:
		if (!s->user || !ce.secret)
			goto missing;
		break;
	case CREDS_BEARER:
	case CREDS_QUERY:
		if (!ce.secret || s->user)
			goto missing;
		break;
	case CREDS_SIGV4:
		/* PROVIDER1:PROVIDER2:REGION:SERVICE, as CURLOPT_AWS_SIGV4 takes it */
		if (!s->sigv4 || sigv4_parts(s->sigv4) != 4 || ce.secret || s->user)
			goto missing;
		/* the keys: the AWS environment variables, as the AWS CLI */
		ce.user = env_dup("AWS_ACCESS_KEY_ID");
		ce.secret = env_dup("AWS_SECRET_ACCESS_KEY");
		ce.session_token = env_dup("AWS_SESSION_TOKEN");
		ce.from = CREDS_FROM_ENV;
		if (!ce.user || !ce.secret) {
			free(ce.user);
			wipe_free(ce.secret);
			wipe_free(ce.session_token);
			return wb_error(e, WB_EUSAGE, "%s:%d: [%s] is sigv4: set "
					"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and "
					"AWS_SESSION_TOKEN for temporary keys)", path, s->line,
					s->name);
		}
		break;
	case CREDS_CERT:
		if (!s->cert || !s->key || ce.secret || s->user || strcmp(o->scheme, "https"))
			goto missing;
		break;
	}
	{
		struct creds_entry *dst = push_entry(c);

		*dst = ce;
		dst->name = xstrdup(s->name);
		dst->scheme = xstrdup(o->scheme);
		dst->host = xstrdup(o->host);
		dst->port = o->port;
		dst->prefix = xstrdup(*o->path ? o->path : "/");
		if (ce.kind != CREDS_SIGV4)
			dst->user = s->user ? xstrdup(s->user) : NULL;
		dst->sigv4 = s->sigv4 ? xstrdup(s->sigv4) : NULL;
		dst->cert = s->cert ? xstrdup(s->cert) : NULL;
		dst->key = s->key ? xstrdup(s->key) : NULL;
		dst->header = s->header ? xstrdup(s->header) : NULL;
		dst->registries = s->registries ? xstrdup(s->registries) : NULL;
		dst->where = ce.from == CREDS_FROM_ENV && s->secret_env ?
			xasprintf("credentials file '%s' [%s], secret from $%s", path, s->name,
				  s->secret_env) :
			ce.from == CREDS_FROM_ENV ?
			xasprintf("credentials file '%s' [%s], keys from $AWS_ACCESS_KEY_ID", path,
				  s->name) :
			xasprintf("credentials file '%s' [%s]", path, s->name);
	}
	return 0;
missing:
	wipe_free(ce.secret);
	return wb_error(e, WB_EUSAGE, "%s:%d: [%s] (type %s) needs %s", path, s->line, s->name,
			s->type, ce.kind == CREDS_BASIC ? "'username' and 'password' (or password_env)" :
			ce.kind == CREDS_BEARER ? "'token' (or token_env) and nothing else" :
			ce.kind == CREDS_QUERY ? "'query' (or query_env) and nothing else" :
			ce.kind == CREDS_SIGV4 ? "'aws_sigv4 = PROVIDER1:PROVIDER2:REGION:SERVICE' (for S3: "
			"AWS's amz provider pair) and no secret "
			"(the keys come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)" :
			"'cert' and 'key' (PEM files), an https url and no secret");
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

static int load_file(struct creds *c, const char *path, int missing_ok, struct wb_err *e)
{
	struct section s;
	char *text, *line, *next;
	int lineno = 0, ret = 0;

	if (read_secret_file(path, "credentials file", missing_ok, &text, e) < 0)
		return -1;
	if (!text)
		return 0;
	memset(&s, 0, sizeof(s));
	for (line = text; line && !ret; line = next) {
		char *eq, *k, *v, **slot = NULL;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		line = trim(line);
		if (!*line || *line == '#' || *line == ';')
			continue;
		if (*line == '[') {
			size_t n = strlen(line);

			if ((ret = section_done(c, &s, path, e)) < 0)
				break;
			section_release(&s);
			if (n < 3 || line[n - 1] != ']') {
				ret = wb_error(e, WB_EUSAGE, "%s:%d: a section is '[NAME]'", path, lineno);
				break;
			}
			line[n - 1] = '\0';
			s.name = xstrdup(trim(line + 1));
			s.line = lineno;
			continue;
		}
		eq = strchr(line, '=');
		if (!eq || !s.name) {
			ret = wb_error(e, WB_EUSAGE, "%s:%d: expected 'key = value' inside a "
				       "[NAME] section", path, lineno);
			break;
		}
		*eq = '\0';
		k = trim(line);
		v = trim(eq + 1);
		if (!strcmp(k, "url"))
			slot = &s.url;
		else if (!strcmp(k, "type"))
			slot = &s.type;
		else if (!strcmp(k, "username"))
			slot = &s.user;
		else if (!strcmp(k, "password") || !strcmp(k, "token") || !strcmp(k, "query"))
			slot = &s.secret;
		else if (!strcmp(k, "password_env") || !strcmp(k, "token_env") ||
			 !strcmp(k, "query_env"))
			slot = &s.secret_env;
		else if (!strcmp(k, "aws_sigv4"))
			slot = &s.sigv4;
		else if (!strcmp(k, "cert"))
			slot = &s.cert;
		else if (!strcmp(k, "key"))
			slot = &s.key;
		else if (!strcmp(k, "header"))
			slot = &s.header;
		else if (!strcmp(k, "registry"))
			slot = &s.registries;
		if (!slot) {
			ret = wb_error(e, WB_EUSAGE, "%s:%d: unknown key '%s' (url, type, username, "
				       "password, password_env, token, token_env, query, query_env, "
				       "aws_sigv4, cert, key, header, registry)", path, lineno, k);
			break;
		}
		if (*slot || (slot == &s.secret && s.secret_env) ||
		    (slot == &s.secret_env && s.secret)) {
			ret = wb_error(e, WB_EUSAGE, "%s:%d: [%s] has '%s' twice (or a secret "
				       "and its _env)", path, lineno, s.name, k);
			break;
		}
		*slot = xstrdup(v);
	}
	if (!ret)
		ret = section_done(c, &s, path, e);
	section_release(&s);
	wipe_free(text);
	return ret;
}

/* ---- container auth files (docker login, podman login) -------------- */

#define CREDS_HELPER_OUT_MAX 65536
#define CREDS_HELPER_SECS 30

/*
 * A registry key of "auths" or "credHelpers" as an https origin and path
 * prefix in CE: "host", "host:port", "https://host/v1/" (Docker Hub's old
 * key: no namespace), "host/ns" (podman: /v2/ns/). The origin rule is the
 * one of every source (creds_match_origin): the registry's own, never a
 * token realm elsewhere (docs/recipes.md, "Credentials"). -1 for a key
 * that names no host.
 */
static int docker_origin(struct creds_entry *ce, const char *key)
{
	const char *k = key, *slash, *colon;
	char *hp, *url;
	struct wb_url o;
	size_t n;

	if (!strncmp(k, "https://", 8))
		k += 8;
	else if (!strncmp(k, "http://", 7))
		k += 7;
	n = strcspn(k, "/");
	slash = k[n] ? k + n : NULL;
	hp = xstrndup(k, n);
	colon = strrchr(hp, ':');
	if (!*hp || strpbrk(hp, "@?#\\ \t") || (colon && hp[0] != '[' && colon[1] == 0)) {
		free(hp);
		return -1;
	}
	url = xasprintf("https://%s/", hp);
	free(hp);
	if (wb_url_parse(url, &o) < 0) {
		free(url);
		return -1;
	}
	free(url);
	ce->scheme = xstrdup("https");
	ce->host = xstrdup(o.host);
	ce->port = o.port;
	wb_url_release(&o);
	if (!slash || !strcmp(slash, "/") || !strncmp(slash, "/v1/", 4) || !strcmp(slash, "/v1")) {
		ce->prefix = xstrdup("/");
	} else {
		size_t l = strlen(slash + 1);

		while (l && slash[l] == '/')
			l--;
		ce->prefix = xasprintf("/v2/%.*s/", (int)l, slash + 1);
	}
	return 0;
}

/* A credential helper's name: the tail of a program name on PATH. */
static int helper_name_ok(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
			return 0;
	return 1;
}

/*
 * `docker-credential-NAME get`, SERVER on its stdin (the protocol of
 * docker/docker-credential-helpers, client/client.go: the server URL as
 * written in the config), its stdout (at most CREDS_HELPER_OUT_MAX bytes,
 * CREDS_HELPER_SECS seconds) in *OUT. 1 with *OUT; 0 when the helper has
 * nothing for SERVER (it exited non-zero: "credentials not found") or is
 * not on PATH; -1 with E when it hangs or says too much. Its stderr is
 * dropped: a helper may print anything there.
 */
static int run_helper(const char *name, const char *server, char **out, struct wb_err *e)
{
	char *prog = xasprintf("docker-credential-%s", name);
	int in[2] = { -1, -1 }, op[2] = { -1, -1 }, st = 0, ret = -1;
	struct buf b = BUF_INIT;
	struct sigaction ign, old;
	time_t end = time(NULL) + CREDS_HELPER_SECS;
	pid_t pid = -1;

	*out = NULL;
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, &old);   /* a helper that exits early */
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(op, O_CLOEXEC) < 0) {
		wb_error(e, WB_EIO, "credential helper '%s': %s", prog, strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		wb_error(e, WB_EIO, "credential helper '%s': %s", prog, strerror(errno));
		goto out;
	}
	if (pid == 0) {
		int dn = open("/dev/null", O_WRONLY);

		if (dup2(in[0], 0) < 0 || dup2(op[1], 1) < 0 || dn < 0 || dup2(dn, 2) < 0)
			_exit(126);
		execlp(prog, prog, "get", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(op[1]);
	in[0] = op[1] = -1;
	if (write(in[1], server, strlen(server)) < 0) {
		/* it did not read: its exit status says why */
	}
	close(in[1]);
	in[1] = -1;
	for (;;) {
		struct pollfd p = { op[0], POLLIN, 0 };
		char chunk[4096];
		ssize_t n;
		int left = (int)(end - time(NULL));

		if (left <= 0 || poll(&p, 1, left * 1000) <= 0) {
			wb_error(e, WB_EUSAGE, "credential helper '%s' gave no answer in %d s",
				 prog, CREDS_HELPER_SECS);
			goto out;
		}
		n = read(op[0], chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (b.len + (size_t)n > CREDS_HELPER_OUT_MAX) {
			wb_error(e, WB_EUSAGE, "credential helper '%s' said more than %d bytes",
				 prog, CREDS_HELPER_OUT_MAX);
			goto out;
		}
		buf_add(&b, chunk, (size_t)n);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	pid = -1;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		*out = buf_detach(&b, NULL);
		ret = 1;
	} else {
		ret = 0;
	}
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (op[i] >= 0)
			close(op[i]);
	}
	sigaction(SIGPIPE, &old, NULL);
	if (b.ptr && b.len)
		memset(b.ptr, 0, b.len);
	buf_release(&b);
	free(prog);
	return ret;
}

/* One registry KEY of the auth file PATH: from VAL ("auth" or "username"/
 * "password"), else from the helper HELPER (NULL: none). */
static int docker_entry(struct creds *c, const char *path, const char *key, json_t *val,
			const char *helper, struct wb_err *e)
{
	const char *auth = json_string_value(json_object_get(val, "auth"));
	const char *user = json_string_value(json_object_get(val, "username"));
	const char *pass = json_string_value(json_object_get(val, "password"));
	char *u = NULL, *s = NULL, *text = NULL;
	struct creds_entry ce;
	int r;

	memset(&ce, 0, sizeof(ce));
	if (docker_origin(&ce, key) < 0) {
		entry_release(&ce);
		return wb_error(e, WB_EUSAGE, "container auth file '%s': '%s' names no registry",
				path, key);
	}
	if (auth && *auth) {
		size_t n;
		unsigned char *raw = b64_decode(auth, strlen(auth), &n);
		char *colon = raw ? memchr(raw, ':', n) : NULL;

		if (!colon || memchr(raw, 0, n)) {
			if (raw)
				memset(raw, 0, n);
			free(raw);
			entry_release(&ce);
			return wb_error(e, WB_EUSAGE, "container auth file '%s': the \"auth\" of "
					"'%s' is not base64 of USER:PASSWORD", path, key);
		}
		u = xstrndup((char *)raw, (size_t)(colon - (char *)raw));
		s = xstrndup(colon + 1, n - (size_t)(colon + 1 - (char *)raw));
		memset(raw, 0, n);
		free(raw);
		ce.from = CREDS_FROM_DOCKER;
		ce.where = xasprintf("container auth file '%s' [%s]", path, key);
	} else if (user && pass && *pass) {
		u = xstrdup(user);
		s = xstrdup(pass);
		ce.from = CREDS_FROM_DOCKER;
		ce.where = xasprintf("container auth file '%s' [%s]", path, key);
	} else if (helper) {
		json_t *j;

		if (!helper_name_ok(helper)) {
			entry_release(&ce);
			return wb_error(e, WB_EUSAGE, "container auth file '%s': credential helper "
					"'%s' of '%s' is not a program name", path, helper, key);
		}
		r = run_helper(helper, key, &text, e);
		if (r <= 0) {
			entry_release(&ce);
			return r;
		}
		j = json_loads(text, 0, NULL);
		user = json_string_value(json_object_get(j, "Username"));
		pass = json_string_value(json_object_get(j, "Secret"));
		/* an identity token (Username "<token>") is an OAuth2
		 * refresh token for the registry's token service: not used */
		if (user && pass && *pass && strcmp(user, "<token>")) {
			u = xstrdup(user);
			s = xstrdup(pass);
		}
		json_decref(j);
		wipe_free(text);
		if (!s) {
			entry_release(&ce);
			return 0;
		}
		ce.from = CREDS_FROM_HELPER;
		ce.where = xasprintf("credential helper 'docker-credential-%s' [%s], named by '%s'",
				     helper, key, path);
	} else {
		entry_release(&ce);
		return 0;
	}
	ce.name = xstrdup(key);
	ce.kind = CREDS_BASIC;
	ce.user = u;
	ce.secret = s;
	*push_entry(c) = ce;
	return 0;
}

/* One container auth file: its "auths", then "credHelpers" for the
 * registries "auths" leaves out; "credsStore" for an "auths" entry with no
 * secret of its own. */
static int load_docker(struct creds *c, const char *path, int missing_ok, struct wb_err *e)
{
	char *text = NULL;
	json_t *root, *auths, *helpers, *v;
	const char *key, *store;
	json_error_t je;
	int ret = 0;

	if (read_secret_file(path, "container auth file", missing_ok, &text, e) < 0)
		return -1;
	if (!text)
		return 0;
	root = json_loads(text, 0, &je);
	wipe_free(text);
	if (!json_is_object(root)) {
		json_decref(root);
		return wb_error(e, WB_EUSAGE, "container auth file '%s':%d: not a JSON object%s%s",
				path, je.line, *je.text ? ": " : "", je.text);
	}
	auths = json_object_get(root, "auths");
	helpers = json_object_get(root, "credHelpers");
	store = json_string_value(json_object_get(root, "credsStore"));
	json_object_foreach(auths, key, v) {
		const char *h = json_string_value(json_object_get(helpers, key));

		if ((ret = docker_entry(c, path, key, v, h ? h : store, e)) < 0)
			break;
	}
	json_object_foreach(helpers, key, v) {
		if (ret < 0)
			break;
		if (!json_object_get(auths, key) && json_is_string(v))
			ret = docker_entry(c, path, key, NULL, json_string_value(v), e);
	}
	/* the file's secrets are in C now; its JSON copies go */
	json_object_foreach(auths, key, v) {
		json_t *a = json_object_get(v, "auth"), *p = json_object_get(v, "password");

		if (json_is_string(a))
			json_string_set(a, "");
		if (json_is_string(p))
			json_string_set(p, "");
	}
	json_decref(root);
	return ret < 0 ? -1 : 0;
}

/* The container auth files, in containers-auth.json(5)'s order: each that
 * exists adds the registries the ones before it left out (creds_for takes
 * the first). */
static int load_docker_all(struct creds *c, struct wb_err *e)
{
	const char *raf = getenv("REGISTRY_AUTH_FILE"), *run = getenv("XDG_RUNTIME_DIR");
	const char *dc = getenv("DOCKER_CONFIG"), *home = getenv("HOME");
	char *p;
	int r = 0;

	if (raf && *raf)
		return load_docker(c, raf, 0, e);
	if (run && *run) {
		p = xasprintf("%s/containers/auth.json", run);
		r = load_docker(c, p, 1, e);
		free(p);
	}
	if (!r && dc && *dc) {
		p = xasprintf("%s/config.json", dc);
		r = load_docker(c, p, 1, e);
		free(p);
	} else if (!r && home && *home) {
		p = xasprintf("%s/.docker/config.json", home);
		r = load_docker(c, p, 1, e);
		free(p);
	}
	return r;
}

/*
 * @where credentials for artifact servers (the credentials file, netrc, the
 *   environment; the lookup; the curl options)
 */
int creds_load(struct creds *c, const char *file, const char *netrc, struct wb_err *e)
{
	const char *home = getenv("HOME"), *xdg = getenv("XDG_CONFIG_HOME"), *env;
	char *path = NULL;
	int ret = 0;

	memset(c, 0, sizeof(*c));
	env = getenv("WINBUILD_CREDENTIALS");
	if (file)
		ret = load_file(c, file, 0, e);
	else if (env && *env)
		ret = load_file(c, env, 0, e);
	else if ((xdg && *xdg) || (home && *home)) {
		path = xdg && *xdg ? xasprintf("%s/winbuild/credentials", xdg) :
			xasprintf("%s/.config/winbuild/credentials", home);
		ret = load_file(c, path, 1, e);
		free(path);
	}
	env = getenv("NETRC");
	if (!ret && netrc)
		ret = load_netrc(c, netrc, 0, e);
	else if (!ret && env && *env)
		ret = load_netrc(c, env, 0, e);
	else if (!ret && home && *home) {
		path = xasprintf("%s/.netrc", home);
		ret = load_netrc(c, path, 1, e);
		free(path);
	}
	if (!ret)
		ret = load_docker_all(c, e);
	if (ret < 0) {
		creds_release(c);
		return ret;
	}
	/* lib/redact.h: from now on no text leaving the process shows them */
	for (size_t i = 0; i < c->nr; i++) {
		redact_add_secret(c->v[i].secret);
		redact_add_secret(c->v[i].session_token);
		if (c->v[i].kind == CREDS_QUERY)
			redact_add_params(c->v[i].secret);
	}
	return ret;
}

/* ---- the request ------------------------------------------------------ */

/*
 * @where credentials for artifact servers (the credentials file, netrc, the
 *   environment; the lookup; the curl options)
 */
char *creds_setopt(CURL *h, const struct creds_entry *ce, const char *url,
		   struct curl_slist **hdr)
{
	if (ce->header) {
		*hdr = curl_slist_append(*hdr, ce->header);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdr);
	}
	switch (ce->kind) {
	case CREDS_BASIC:
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, ce->user);
		curl_easy_setopt(h, CURLOPT_PASSWORD, ce->secret);
		break;
	case CREDS_BEARER:
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
		curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, ce->secret);
		break;
	case CREDS_SIGV4:
		/* libcurl: CURLOPT_AWS_SIGV4 replaces every other auth; the
		 * key pair goes in as user and password */
		curl_easy_setopt(h, CURLOPT_AWS_SIGV4, ce->sigv4);
		curl_easy_setopt(h, CURLOPT_USERNAME, ce->user);
		curl_easy_setopt(h, CURLOPT_PASSWORD, ce->secret);
		if (ce->session_token) {
			char *line = xasprintf("x-amz-security-token: %s", ce->session_token);

			*hdr = curl_slist_append(*hdr, line);
			wipe_free(line);
			curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdr);
		}
		break;
	case CREDS_CERT:
		curl_easy_setopt(h, CURLOPT_SSLCERT, ce->cert);
		curl_easy_setopt(h, CURLOPT_SSLKEY, ce->key);
		break;
	case CREDS_QUERY: {
		size_t n = strcspn(url, "#");
		const char *q = ce->secret + (*ce->secret == '?');

		return xasprintf("%.*s%c%s", (int)n, url, memchr(url, '?', n) ? '&' : '?', q);
	}
	}
	return xstrdup(url);
}
