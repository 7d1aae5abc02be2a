/* trust/ocisig: a cosign signature manifest refused for each thing that is
 * wrong with it before the Sigstore verifier is asked (the signatures
 * themselves: tests/cli/images.bats, against a registry). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "trust/digest.h"
#include "trust/ocisig.h"

#define PIN "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define OTHER "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define MT "application/vnd.dev.cosign.simplesigning.v1+json"

static char *payload_for(const char *digest, const char *type)
{
	return xasprintf("{\"critical\":{\"identity\":{\"docker-reference\":\"r.test/a\"},"
			 "\"image\":{\"docker-manifest-digest\":\"%s\"},\"type\":\"%s\"},"
			 "\"optional\":null}", digest, type);
}

static void sha256_str(const char *s, char out[72])
{
	struct digest_ctx dc;
	struct digest_result r;
	struct wb_err e = WB_ERR_INIT;

	memset(&dc, 0, sizeof(dc));
	assert_int_equal(digest_init(&dc, DIGEST_SHA256, &e), 0);
	digest_update(&dc, s, strlen(s));
	digest_final(&dc, &r);
	digest_release(&dc);
	memcpy(out, "sha256:", 7);
	digest_hex(r.sha256, 32, out + 7);
}

/* One layer of PAYLOAD (digest DIGEST, or its own when NULL) with the
 * annotations ANN (a JSON object text). */
static json_t *layer(const char *mt, const char *payload, const char *digest, const char *ann)
{
	char d[72];
	json_t *l;

	sha256_str(payload, d);
	l = json_pack("{s:s, s:i, s:s}", "mediaType", mt, "size", (int)strlen(payload),
		      "digest", digest ? digest : d);
	json_object_set_new(l, "annotations", json_loads(ann, 0, NULL));
	return l;
}

#define ANN_FULL "{\"dev.cosignproject.cosign/signature\": \"c2ln\", " \
	"\"dev.sigstore.cosign/certificate\": \"-----BEGIN CERTIFICATE-----\", " \
	"\"dev.sigstore.cosign/bundle\": \"{\\\"SignedEntryTimestamp\\\": \\\"c2V0\\\", " \
	"\\\"Payload\\\": {\\\"body\\\": \\\"Ym9keQ==\\\", \\\"integratedTime\\\": 1, " \
	"\\\"logIndex\\\": 1, \\\"logID\\\": \\\"00\\\"}}\"}"

/* ocisig_verify over LAYERS (stolen) with the payloads P, keyless: -1,
 * CODE and a message holding PART. */
static void refused(json_t *layers, const char *const *p, size_t n, int code,
		    const char *part)
{
	json_t *m = json_pack("{s:i, s:s, s:o}", "schemaVersion", 2, "mediaType",
			      "application/vnd.oci.image.manifest.v1+json", "layers", layers);
	char *text = json_dumps(m, 0);
	struct buf *bufs = calloc(n + 1, sizeof(*bufs));
	struct sigstore_root root;
	struct ocisig_policy pol;
	struct ocisig_evidence ev;
	struct wb_err e = WB_ERR_INIT;

	memset(&root, 0, sizeof(root));
	memset(&pol, 0, sizeof(pol));
	pol.root = &root;
	pol.identity = "krel-trust@k8s-releng-prod.iam.gserviceaccount.com";
	pol.issuer = "https://accounts.google.com";
	for (size_t i = 0; i < n; i++) {
		buf_init(&bufs[i]);
		buf_adds(&bufs[i], p[i]);
	}
	assert_int_equal(ocisig_verify(PIN, text, strlen(text), bufs, n, &pol, &ev, &e), -1);
	if (e.code != code || !strstr(e.msg, part))
		fail_msg("got %d '%s', wanted %d '%s'", e.code, e.msg, code, part);
	for (size_t i = 0; i < n; i++)
		buf_release(&bufs[i]);
	free(bufs);
	free(text);
	json_decref(m);
}

static void one(const char *mt, const char *payload, const char *digest, const char *ann,
		const char *part)
{
	const char *p[] = { payload };

	refused(json_pack("[o]", layer(mt, payload, digest, ann)), p, 1, WB_EVERIFY, part);
}

static void test_no_layers(void **state)
{
	(void)state;
	refused(json_array(), NULL, 0, WB_EUSAGE, "no layers winbuild can read");
}

static void test_layer_shape(void **state)
{
	char *ok = payload_for(PIN, "cosign container image signature");

	(void)state;
	one("application/octet-stream", ok, NULL, ANN_FULL, "its media type is");
	one(MT, ok, OTHER, ANN_FULL, "the payload's bytes are sha256:");
	one(MT, ok, NULL, "{}", "no dev.cosignproject.cosign/signature annotation");
	one(MT, ok, NULL, "{\"dev.cosignproject.cosign/signature\": \"c2ln\"}",
	    "no dev.sigstore.cosign/bundle annotation");
	one(MT, ok, NULL, "{\"dev.cosignproject.cosign/signature\": \"c2ln\", "
	    "\"dev.sigstore.cosign/bundle\": \"{}\"}", "keyless needs the signing certificate");
	free(ok);
}

static void test_payload(void **state)
{
	char *other = payload_for(OTHER, "cosign container image signature");
	char *type = payload_for(PIN, "something else");
	char *dup;

	(void)state;
	one(MT, other, NULL, ANN_FULL, "the payload signs " OTHER ", not the pinned digest " PIN);
	one(MT, type, NULL, ANN_FULL, "critical.type is 'something else'");
	one(MT, "[]", NULL, ANN_FULL, "not a simple-signing JSON object");
	/* a key twice: a reader that keeps the first sees OTHER, jansson
	 * (the last) the pin; such a payload is no payload (o41-ocisig-
	 * duplicate-keys) */
	dup = xasprintf("{\"critical\":{\"identity\":{\"docker-reference\":\"r.test/a\"},"
			"\"image\":{\"docker-manifest-digest\":\"%s\","
			"\"docker-manifest-digest\":\"%s\"},"
			"\"type\":\"cosign container image signature\"},\"optional\":null}",
			OTHER, PIN);
	one(MT, dup, NULL, ANN_FULL, "not a simple-signing JSON object");
	free(dup);
	free(other);
	free(type);
}

static void test_bundle(void **state)
{
	char *ok = payload_for(PIN, "cosign container image signature");

	(void)state;
	one(MT, ok, NULL, "{\"dev.cosignproject.cosign/signature\": \"c2ln\", "
	    "\"dev.sigstore.cosign/certificate\": \"x\", \"dev.sigstore.cosign/bundle\": "
	    "\"{\\\"Payload\\\": {\\\"body\\\": \\\"Ym9keQ==\\\", \\\"integratedTime\\\": 1, "
	    "\\\"logIndex\\\": 1, \\\"logID\\\": \\\"00\\\"}}\"}", "no SignedEntryTimestamp");
	one(MT, ok, NULL, "{\"dev.cosignproject.cosign/signature\": \"c2ln\", "
	    "\"dev.sigstore.cosign/certificate\": \"x\", \"dev.sigstore.cosign/bundle\": "
	    "\"{\\\"SignedEntryTimestamp\\\": \\\"c2V0\\\", \\\"Payload\\\": {\\\"body\\\": "
	    "\\\"Ym9keQ==\\\"}}\"}", "lacks integratedTime, logID or logIndex");
	one(MT, ok, NULL, "{\"dev.cosignproject.cosign/signature\": \"c2ln\", "
	    "\"dev.sigstore.cosign/certificate\": \"x\", \"dev.sigstore.cosign/bundle\": \"{}\"}",
	    "no Payload.body");
	free(ok);
}

/* Every layer is tried; the first one's reason is reported, so named. */
static void test_first_reason(void **state)
{
	char *other = payload_for(OTHER, "cosign container image signature");
	char *type = payload_for(PIN, "something else");
	const char *p[] = { other, type };

	(void)state;
	refused(json_pack("[o, o]", layer(MT, other, NULL, ANN_FULL),
			  layer(MT, type, NULL, ANN_FULL)), p, 2, WB_EVERIFY,
		"signature 1 of 2: the payload signs " OTHER);
	free(other);
	free(type);
}

static void test_evidence(void **state)
{
	struct ocisig_evidence ev;
	struct buf b = BUF_INIT;
	json_t *j;

	(void)state;
	memset(&ev, 0, sizeof(ev));
	ev.identity = xstrdup("id@example.com");
	ev.issuer = xstrdup("https://issuer.test");
	ev.log_index = 7;
	ev.integrated_time = 9;
	memcpy(ev.payload_digest, PIN, sizeof(PIN));
	ocisig_describe(&ev, &b);
	assert_string_equal(b.ptr, "id@example.com (https://issuer.test), log index 7, "
			    "integrated time 9");
	j = ocisig_evidence_json(&ev, OTHER);
	assert_string_equal(json_string_value(json_object_get(j, "signature_manifest")), OTHER);
	assert_string_equal(json_string_value(json_object_get(j, "payload_digest")), PIN);
	assert_null(json_object_get(j, "key_sha256"));
	assert_true(json_is_null(json_object_get(j, "docker_reference")));
	json_decref(j);
	buf_release(&b);
	ocisig_evidence_release(&ev);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_layers),
		cmocka_unit_test(test_layer_shape),
		cmocka_unit_test(test_payload),
		cmocka_unit_test(test_bundle),
		cmocka_unit_test(test_first_reason),
		cmocka_unit_test(test_evidence),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
