/*
 * Method "minisign": a minisign signature (trust/minisign.h) fetched from
 * the requirement's URLs must verify under one of its pinned keys, and
 * only those. Evidence: key_id, trusted_comment.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "trust/method.h"
#include "trust/minisign.h"

static int check(const struct trust_req *r, const struct trust_subject *s,
		 const struct trust_aux *aux, const char *which, struct trust_ev *ev,
		 struct wb_err *e)
{
	struct minisign_pubkey *keys;
	struct minisign_sig sig;
	struct minisign_result res;
	int ret;

	if (!aux->text)
		return wb_error(e, WB_EUSAGE, "artifact '%s': %ssignature was not fetched",
				s->name, which);
	memset(&sig, 0, sizeof(sig));
	memset(&res, 0, sizeof(res));
	if (minisign_sig_parse(aux->text, aux->len, &sig, e) < 0) {
		wb_error_prefix(e, "artifact '%s': %ssignature '%s'", s->name, which, aux->url);
		return -1;
	}
	keys = xcalloc(r->nkeys ? r->nkeys : 1, sizeof(*keys));
	for (size_t i = 0; i < r->nkeys; i++)
		keys[i] = r->keys[i].pk;
	ret = minisign_verify(&sig, keys, r->nkeys, s->dr->blake2b512, s->data_path,
			      s->filename, &res, e);
	if (ret < 0) {
		wb_error_prefix(e, "artifact '%s' from '%s': %ssignature '%s'", s->name,
				s->url, which, aux->url);
	} else {
		trust_ev_set(ev, "key_id", res.keyid_hex);
		trust_ev_set(ev, "trusted_comment", res.trusted_comment);
	}
	minisign_result_release(&res);
	minisign_sig_release(&sig);
	free(keys);
	return ret;
}

static void describe_req(const struct trust_req *r,
			 void (*line)(void *ctx, const char *text, const struct wb_origin *o),
			 void *ctx)
{
	for (size_t k = 0; k < r->nkeys; k++) {
		const struct trust_key *key = &r->keys[k];
		struct buf b = BUF_INIT;

		buf_addf(&b, "key %s%s%s%s%s%s", key->keyid_hex,
			 key->name ? " (" : "", key->name ? key->name : "",
			 key->name ? ")" : "",
			 key->pk.allow_legacy ? ", legacy allowed" : "",
			 key->pk.file_check ? "" : ", no file check");
		line(ctx, b.ptr, &key->origin);
		buf_release(&b);
	}
}

static void req_json(const struct trust_req *r, json_t *obj)
{
	json_t *keys = json_array();

	for (size_t i = 0; i < r->nkeys; i++) {
		const struct trust_key *k = &r->keys[i];
		json_t *kj = json_object();
		char where[512];

		wb_origin_format(&k->origin, where, sizeof(where));
		json_object_set_new(kj, "id", json_string(k->keyid_hex));
		json_object_set_new(kj, "name", k->name ? json_string(k->name) : json_null());
		json_object_set_new(kj, "key", json_string(k->text));
		json_object_set_new(kj, "allow_legacy", json_boolean(k->pk.allow_legacy));
		json_object_set_new(kj, "file_check", json_boolean(k->pk.file_check));
		json_object_set_new(kj, "origin", json_string(where));
		json_array_append_new(keys, kj);
	}
	json_object_set_new(obj, "keys", keys);
}

static void describe_ev(const struct trust_ev *ev, struct buf *out)
{
	const char *k = trust_ev_get(ev, "key_id"), *c = trust_ev_get(ev, "trusted_comment");

	buf_addf(out, "minisign key %s, trusted comment '%s'", k ? k : "", c ? c : "");
}

static void signer(const struct trust_ev *ev, struct buf *out)
{
	const char *k = trust_ev_get(ev, "key_id"), *c = trust_ev_get(ev, "trusted_comment");

	buf_addf(out, "%s '%s'", k ? k : "", c ? c : "");
}

static const char *const sbom_fields[] = {
	"key_id", "signer_key_id",
	"trusted_comment", "trusted_comment",
	NULL,
};

const struct trust_method trust_m_minisign = {
	.name = "minisign",
	.what = "signature",
	.shown = "minisign",
	.flags = TRUST_SIGNATURE | TRUST_ABSENT_FAILS,
	.aux_max = MINISIGN_SIGFILE_MAX,
	.digest_algs = DIGEST_BLAKE2B512,
	.default_url = "${url}.minisig",
	.url_key = "signature_url",
	.sbom_fields = sbom_fields,
	.check = check,
	.label = "minisign signature",
	.describe_req = describe_req,
	.req_json = req_json,
	.describe_ev = describe_ev,
	.signer = signer,
};
