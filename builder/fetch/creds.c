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
#include <sys/stat.h>
#include <unistd.h>

#include "fetch/creds.h"
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
		/* a file entry beats netrc (listed first); a longer prefix
		 * beats a shorter one */
		if (!best || ((best->from == CREDS_FROM_NETRC) == (ce->from == CREDS_FROM_NETRC) &&
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
