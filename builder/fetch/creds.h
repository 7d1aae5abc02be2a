/*
 * Credentials for artifact servers (issue 31): which secret a request for
 * a URL carries, from outside every recipe. Used by the fetch engine (its
 * downloads and the size probe) and meant for any other client that asks
 * a server for bytes (a registry client): creds_for(), then creds_setopt()
 * on the request's curl handle, and only for the host the credential was
 * given for (hop_creds_ok in fetch/engine.h decides on a redirect).
 *
 * Sources, highest first (the first that has an entry for the URL wins):
 *   1. the credentials file: --credentials FILE, else $WINBUILD_CREDENTIALS,
 *      else $XDG_CONFIG_HOME/winbuild/credentials (~/.config/...) when it
 *      exists. Format: docs/recipes.md, "Credentials". A secret may be
 *      written in it or named as an environment variable (password_env,
 *      token_env, query_env); AWS SigV4 keys come from AWS_ACCESS_KEY_ID,
 *      AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN;
 *   2. netrc: --netrc-file FILE, else $NETRC, else ~/.netrc when it exists
 *      ("machine HOST login USER password PASS"; `default` is ignored: a
 *      password for every host is what this module exists to prevent);
 *   3. the container auth files `docker login` and `podman login` write
 *      (issue 42): $REGISTRY_AUTH_FILE, else $XDG_RUNTIME_DIR/containers/
 *      auth.json, $DOCKER_CONFIG/config.json or ~/.docker/config.json, each
 *      that exists (containers-auth.json(5)): an "auths" entry (base64
 *      "auth", or "username"/"password") is Basic for that registry's
 *      https origin (its path a namespace, "host/ns": /v2/ns/), and a
 *      "credHelpers" entry, or "credsStore" for an "auths" entry with no
 *      secret, asks the program docker-credential-NAME on PATH ("get", the
 *      registry on stdin, JSON Username/Secret on stdout; an identity
 *      token, Username "<token>", is not used).
 * A file that holds secrets and that another user may read (group or other
 * permission bits, or another owner) is refused, as ssh refuses such a key.
 *
 * Nothing here prints; the file is read once per run.
 *
 * @where credentials for artifact servers (the credentials file, netrc, the
 *   environment; the lookup; the curl options) -- the header the registry
 *   client uses too
 */
#ifndef WB_FETCH_CREDS_H
#define WB_FETCH_CREDS_H

#include <curl/curl.h>

#include "lib/err.h"

enum creds_kind {
	CREDS_BASIC,      /* user + password (an access token as password) */
	CREDS_BEARER,     /* Authorization: Bearer TOKEN */
	CREDS_SIGV4,      /* AWS Signature Version 4 */
	CREDS_CERT,       /* a TLS client certificate and key */
	CREDS_QUERY,      /* a query string appended (an Azure SAS token) */
};

enum creds_from {
	CREDS_FROM_NONE,
	CREDS_FROM_FILE,  /* the credentials file */
	CREDS_FROM_ENV,   /* the credentials file's entry, secret from the environment */
	CREDS_FROM_NETRC,
	CREDS_FROM_DOCKER, /* a container auth file's "auths" */
	CREDS_FROM_HELPER, /* a docker-credential-NAME program it names */
};

struct creds_entry {
	char *name;                /* [NAME] in the file; the host for netrc */
	char *scheme;              /* "https", "http"; NULL: either (netrc) */
	char *host;                /* lowercase */
	long port;                 /* 0: the scheme's default */
	char *prefix;              /* path prefix, "/" at least */
	enum creds_kind kind;
	char *user, *secret;       /* basic: user, password; bearer: token;
				    * sigv4: access key id, secret key;
				    * query: the query string */
	char *session_token;       /* sigv4: AWS_SESSION_TOKEN, or NULL */
	char *sigv4;               /* sigv4: PROVIDER1:PROVIDER2:REGION:SERVICE */
	char *cert, *key;          /* cert: PEM files */
	char *registries;          /* a token realm's entry: the registry
				    * origins ("https://host:port", space-
				    * separated) whose Bearer challenge may
				    * send winbuild to it; or NULL */
	char *header;              /* one more request header ("x-ms-version:
				    * 2021-08-06"), not a secret; or NULL */
	enum creds_from from;
	char *where;               /* the file (and variable) it came from */
};

struct creds {
	struct creds_entry *v;
	size_t nr;
};

/* Load the sources above into C (empty when there are none). FILE and
 * NETRC: the command line's, or NULL. -1 and E (WB_EUSAGE: a bad or
 * readable-by-others file, named with its line) on error. */
int creds_load(struct creds *c, const char *file, const char *netrc, struct wb_err *e);
void creds_release(struct creds *c);

/* The entry for a request of URL: same scheme (when it names one), host
 * and port, the longest path prefix; NAME (a recipe's `credential:`), when
 * not NULL, must be the entry's name. NULL: none. */
const struct creds_entry *creds_for(const struct creds *c, const char *url, const char *name);

/* Whether URL can be asked with CE: its origin (scheme, host, port) is
 * the entry's. */
int creds_match_origin(const struct creds_entry *ce, const char *url);

/* Set CE on H, a request for URL (CE's origin: the caller checked).
 * Returns the URL to request (URL itself, or with CE's query appended for
 * CREDS_QUERY), a new string; *HDR gets the extra headers (CE's header,
 * the SigV4 session token), the caller's to free after the transfer. */
char *creds_setopt(CURL *h, const struct creds_entry *ce, const char *url,
		   struct curl_slist **hdr);

/* Whether CE (a token realm's entry) names REGISTRY_URL's origin in its
 * `registry =` list. */
int creds_names_registry(const struct creds_entry *ce, const char *registry_url);

/* URL's origin as "scheme://host:port" in OUT (N bytes; "?" when URL has
 * none), for messages. */
void creds_origin_text(const char *url, char *out, size_t n);

/* Where CE came from, for messages ("netrc '/home/u/.netrc'"); never the
 * secret. */
const char *creds_from_name(enum creds_from from);

#endif
