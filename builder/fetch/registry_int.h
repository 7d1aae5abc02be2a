/*
 * The registry client's private pieces (fetch/registry.c, the pull, and
 * fetch/registry_http.c, one request and the token flow). Nothing else
 * includes this.
 */
#ifndef WB_FETCH_REGISTRY_INT_H
#define WB_FETCH_REGISTRY_INT_H

#include "fetch/engine.h"
#include "fetch/registry.h"
#include "lib/envlimits.h"
#include "trust/digest.h"

#define REG_TOKEN_MAX (64u << 10)
#define REG_HEADER_MAX 4096

struct reg_client {
	const struct registry_opts *o;
	const struct image_ref *ref;
	struct request_conf conf;
	struct env_limits lim;
	char ua[64];
	char *origin;                /* "https://HOST:PORT" the requests go to
				      * (lib/url.h: wb_url_origin_text) */
	char *base;                  /* ORIGIN, or a mirror's with its path */
	char *token;                 /* the bearer token, or NULL */
	int creds_on;                /* the registry's origin answered a Basic
				      * challenge: its credentials go along
				      * from now on */
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

/*
 * GET URL into S. ACCEPT: an Accept header line, or NULL. The registry's
 * token goes along while a hop stays on its origin; a 401 with a Bearer
 * challenge gets a token and one more try, a 401 with a Basic challenge
 * one more try with the credentials (registry_opts.creds) given for URL's
 * origin. 0 with a 200 answer in S, or -1 (E names the URL).
 */
int reg_get(struct reg_client *rc, const char *url, const char *accept,
	    struct reg_sink *s, struct wb_err *e);

#endif
