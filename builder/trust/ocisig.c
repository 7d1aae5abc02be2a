/*
 * A container image's cosign signature manifest (ocisig.h), checked by the
 * one Sigstore verifier.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "lib/json.h"
#include "trust/digest.h"
#include "trust/ocisig.h"
#include "trust/sigstore.h"

#define MT_SIMPLESIGNING "application/vnd.dev.cosign.simplesigning.v1+json"
#define ANN_SIGNATURE "dev.cosignproject.cosign/signature"
#define ANN_CERTIFICATE "dev.sigstore.cosign/certificate"
#define ANN_BUNDLE "dev.sigstore.cosign/bundle"
#define PAYLOAD_TYPE "cosign container image signature"

void ocisig_evidence_release(struct ocisig_evidence *ev)
{
	free(ev->identity);
	free(ev->issuer);
	free(ev->docker_reference);
	memset(ev, 0, sizeof(*ev));
}

void ocisig_describe(const struct ocisig_evidence *ev, struct buf *out)
{
	if (ev->identity)
		buf_addf(out, "%s (%s)", ev->identity, ev->issuer ? ev->issuer : "");
	else
		buf_addf(out, "key sha256:%s", ev->key_sha256);
	buf_addf(out, ", log index %lld, integrated time %lld", ev->log_index,
		 ev->integrated_time);
}

json_t *ocisig_evidence_json(const struct ocisig_evidence *ev, const char *sig_digest)
{
	json_t *o = json_object();

	json_object_set_new(o, "signature_manifest", json_string(sig_digest));
	json_object_set_new(o, "payload_digest", json_string(ev->payload_digest));
	if (ev->identity) {
		json_object_set_new(o, "identity", json_text(ev->identity));
		json_object_set_new(o, "issuer", json_text(ev->issuer ? ev->issuer : ""));
	} else {
		json_object_set_new(o, "key_sha256", json_string(ev->key_sha256));
	}
	json_object_set_new(o, "log_index", json_integer(ev->log_index));
	json_object_set_new(o, "integrated_time", json_integer(ev->integrated_time));
	json_object_set_new(o, "docker_reference", ev->docker_reference ?
			    json_text(ev->docker_reference) : json_null());
	return o;
}

static const char *jstr(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static void sha256_of(const void *p, size_t n, unsigned char out[32])
{
	unsigned int len = 32;

	if (!EVP_Digest(p, n, out, &len, EVP_sha256(), NULL))
		memset(out, 0, 32);
}

/*
 * The payload: what it says was signed must be PINNED. The manifest
 * digest is what cosign's own verifier holds the payload to
 * (pkg/cosign/verifiers.go, SimpleClaimVerifier); winbuild also requires
 * critical.type, which cosign leaves unchecked, so a payload made for
 * something else is never read as an image signature. The docker-reference is
 * recorded, not compared with the name winbuild pulls from: the
 * Kubernetes image promoter signs once and copies the signature to every
 * registry behind registry.k8s.io, and a site's mirror serves the same
 * signature under its own name, so the name is not what the signer vouched
 * for; the digest is (cosign verify does not compare it either).
 */
static int check_payload(const char *pinned, const struct buf *payload, char **ref,
			 struct wb_err *e)
{
	json_error_t je;
	json_t *root = json_loadb(payload->ptr, payload->len, JSON_REJECT_DUPLICATES, &je);
	json_t *crit = json_object_get(root, "critical");
	const char *type = jstr(crit, "type");
	const char *dg = jstr(json_object_get(crit, "image"), "docker-manifest-digest");
	const char *r = jstr(json_object_get(crit, "identity"), "docker-reference");
	int ret = -1;

	if (!json_is_object(crit)) {
		wb_error(e, WB_EVERIFY, "the payload is not a simple-signing JSON object");
		goto out;
	}
	if (!type || strcmp(type, PAYLOAD_TYPE)) {
		wb_error(e, WB_EVERIFY, "the payload's critical.type is '%s', not '%s'",
			 type ? type : "(none)", PAYLOAD_TYPE);
		goto out;
	}
	if (!dg || strcmp(dg, pinned)) {
		wb_error(e, WB_EVERIFY, "the payload signs %s, not the pinned digest %s",
			 dg ? dg : "(no critical.image.docker-manifest-digest)", pinned);
		goto out;
	}
	*ref = r ? xstrdup(r) : NULL;
	ret = 0;
out:
	json_decref(root);
	return ret;
}

/* cosign's bundle annotation as the Rekor v1 API entry sigstore_verify
 * reads: the same body, time, index, log and SET. The SET is required. */
static char *bundle_to_entry(const char *bundle, struct wb_err *e)
{
	json_error_t je;
	json_t *b = json_loads(bundle, JSON_REJECT_DUPLICATES, &je), *pl, *ent, *o;
	const char *set, *body;
	unsigned char h[32];
	char uuid[65], *ret = NULL;

	pl = json_object_get(b, "Payload");
	set = jstr(b, "SignedEntryTimestamp");
	body = jstr(pl, "body");
	if (!json_is_object(pl) || !body) {
		wb_error(e, WB_EVERIFY, "the Rekor bundle annotation has no Payload.body");
		goto out;
	}
	if (!set || !*set) {
		wb_error(e, WB_EVERIFY, "the Rekor bundle annotation has no "
			 "SignedEntryTimestamp: nothing proves when it was signed");
		goto out;
	}
	sha256_of(body, strlen(body), h);
	digest_hex(h, 32, uuid);
	ent = json_pack("{s:s, s:O, s:O, s:O, s:{s:s}}", "body", body,
			"integratedTime", json_object_get(pl, "integratedTime"),
			"logID", json_object_get(pl, "logID"),
			"logIndex", json_object_get(pl, "logIndex"),
			"verification", "signedEntryTimestamp", set);
	if (!ent) {
		wb_error(e, WB_EVERIFY, "the Rekor bundle annotation lacks integratedTime, "
			 "logID or logIndex");
		goto out;
	}
	o = json_object();
	json_object_set_new(o, uuid, ent);
	ret = json_dumps(o, JSON_COMPACT);
	json_decref(o);
out:
	json_decref(b);
	return ret;
}

static int verify_layer(const char *pinned, json_t *layer, const struct buf *payload,
			const struct ocisig_policy *pol, struct ocisig_evidence *ev,
			struct wb_err *e)
{
	json_t *ann = json_object_get(layer, "annotations");
	const char *mt = jstr(layer, "mediaType"), *dg = jstr(layer, "digest");
	const char *sig = jstr(ann, ANN_SIGNATURE), *cert = jstr(ann, ANN_CERTIFICATE);
	const char *bundle = jstr(ann, ANN_BUNDLE);
	struct sigstore_input in;
	struct sigstore_evidence sev;
	unsigned char h[32];
	char got[72], *entry = NULL, *ref = NULL;
	int ret = -1;

	memset(&sev, 0, sizeof(sev));
	if (!mt || strcmp(mt, MT_SIMPLESIGNING))
		return wb_error(e, WB_EVERIFY, "its media type is '%s', not %s",
				mt ? mt : "(none)", MT_SIMPLESIGNING);
	sha256_of(payload->ptr, payload->len, h);
	memcpy(got, "sha256:", 7);
	digest_hex(h, 32, got + 7);
	if (!dg || strcmp(dg, got))
		return wb_error(e, WB_EVERIFY, "the payload's bytes are %s, the layer says %s",
				got, dg ? dg : "(no digest)");
	if (!sig)
		return wb_error(e, WB_EVERIFY, "no %s annotation", ANN_SIGNATURE);
	/* cosign verify accepts a signature without its Rekor bundle only
	 * with --insecure-ignore-tlog (cmd/cosign/cli/verify/verify.go);
	 * winbuild has no such opt-out for images: the SET is the signing
	 * time a short-lived certificate needs, and for a key the proof the
	 * signature was logged */
	if (!bundle)
		return wb_error(e, WB_EVERIFY, "no %s annotation (no transparency-log "
				"entry proves when it was signed)", ANN_BUNDLE);
	if (pol->identity && !cert)
		return wb_error(e, WB_EVERIFY, "no %s annotation (keyless needs the "
				"signing certificate)", ANN_CERTIFICATE);
	if (check_payload(pinned, payload, &ref, e) < 0)
		return -1;
	entry = bundle_to_entry(bundle, e);
	if (!entry)
		goto out;
	memset(&in, 0, sizeof(in));
	in.artifact_sha256 = h;
	in.signature = sig;
	in.signature_len = strlen(sig);
	if (cert) {
		/* with a pinned key too: a certificate is refused then */
		in.certificate = cert;
		in.certificate_len = strlen(cert);
	}
	if (pol->identity) {
		in.identity = pol->identity;
		in.issuer = pol->issuer;
	} else {
		in.key_pem = pol->key_pem;
		in.key_pem_len = pol->key_pem_len;
	}
	in.tlog_entry = entry;
	in.tlog_entry_len = strlen(entry);
	in.root = pol->root;
	in.tlog_threshold = pol->tlog_threshold;
	if (sigstore_verify(&in, &sev, e) < 0)
		goto out;
	if (!sev.has_tlog || !sev.integrated_time) {
		wb_error(e, WB_EVERIFY, "no signed transparency-log time");
		goto out;
	}
	ev->identity = sev.identity ? xstrdup(sev.identity) : NULL;
	ev->issuer = sev.issuer ? xstrdup(sev.issuer) : NULL;
	memcpy(ev->key_sha256, sev.key_sha256, sizeof(ev->key_sha256));
	ev->log_index = sev.log_index;
	ev->integrated_time = sev.integrated_time;
	ev->docker_reference = ref;
	ref = NULL;
	memcpy(ev->payload_digest, got, sizeof(got));
	ret = 0;
out:
	free(ref);
	free(entry);
	sigstore_evidence_release(&sev);
	return ret;
}

/*
 * @where where a container image's cosign signature is checked -- each
 *   layer's payload must name the pin; then the one Sigstore verifier
 */
int ocisig_verify(const char *pinned, const char *manifest, size_t len,
		  const struct buf *payloads, size_t n, const struct ocisig_policy *pol,
		  struct ocisig_evidence *ev, struct wb_err *e)
{
	json_error_t je;
	json_t *root = json_loadb(manifest, len, JSON_REJECT_DUPLICATES, &je), *layers, *l;
	struct wb_err first = WB_ERR_INIT;
	size_t i;
	int ret = -1;

	memset(ev, 0, sizeof(*ev));
	layers = json_object_get(root, "layers");
	if (!json_is_array(layers) || !json_array_size(layers) ||
	    json_array_size(layers) != n || n > OCISIG_LAYERS_MAX) {
		wb_error(e, WB_EUSAGE, "the signature manifest has no layers winbuild can "
			 "read (%zu payloads for %zu layers)", n,
			 json_is_array(layers) ? json_array_size(layers) : 0);
		goto out;
	}
	json_array_foreach(layers, i, l) {
		struct wb_err le = WB_ERR_INIT;

		if (verify_layer(pinned, l, &payloads[i], pol, ev, &le) == 0) {
			ev->layer = i;
			ret = 0;
			goto out;
		}
		ocisig_evidence_release(ev);
		if (!first.code) {
			first = le;
			if (n > 1)
				wb_error_prefix(&first, "signature 1 of %zu", n);
		}
	}
	/* the registry served it: anything that does not verify, malformed
	 * or not, is a signature that failed (exit 1) */
	*e = first;
	e->code = WB_EVERIFY;
out:
	json_decref(root);
	return ret;
}
