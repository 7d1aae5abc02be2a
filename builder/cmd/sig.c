/*
 * winbuild sig verify: check a minisign signature the way our fetches do,
 * with the exit codes of `minisign -V` (0 verified, 1 did not verify,
 * 2 could not verify). winbuild sig authenticode: check a PE, MSI or cabinet file's
 * Authenticode signature the way staging does, with the same exit codes.
 * winbuild sig sigstore: check a Sigstore bundle or a cosign signature
 * offline against a pinned trusted root (trust/sigstore.c,
 * docs/sigstore.md), with the same exit codes.
 *
 * @where where a Sigstore bundle or cosign signature is checked (offline,
 *   pinned trusted root; docs/sigstore.md) -- `winbuild sig sigstore`
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/cmd.h"
#include "fetch/fetch.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/strlist.h"
#include "lib/text.h"
#include "trust/authenticode.h"
#include "trust/digest.h"
#include "trust/minisign.h"
#include "trust/rekor.h"
#include "trust/sigstore.h"

#define SIG_VERIFY_USAGE \
	"sig verify (-p KEYFILE | -P KEY) -m FILE [-x SIGFILE] [--allow-legacy] [--no-file-check]"
#define SIG_AUTHENTICODE_USAGE \
	"sig authenticode FILE [--roots FILE] [--publisher X]... [--signatures all|one] [--at TIME] [--json]"
#define SIG_SIGSTORE_USAGE \
	"sig sigstore FILE --trusted-root ROOT.json (--bundle B | --signature SIG [--certificate CERT] [--tlog-entry E | --rekor URL [--save-tlog-entry E]]) (--identity ID --issuer ISSUER | --key KEY.pub) [--tlog-threshold N] [--json]"
#define SIG_USAGE SIG_VERIFY_USAGE "\n       winbuild " SIG_AUTHENTICODE_USAGE \
	"\n       winbuild " SIG_SIGSTORE_USAGE

/* minisign's split: 1 when a check failed, 2 when we could not check. */
static int sig_exit(const struct wb_err *e)
{
	cmd_fail(e);
	/* 1 did not verify, 3 a log could not be asked (--rekor), else 2 */
	return e->code == WB_EVERIFY || e->code == WB_ENET ? e->code : WB_EUSAGE;
}

static int sig_load_key(const char *keyfile, const char *inline_key,
			struct minisign_pubkey *pk, struct wb_err *e)
{
	struct buf text = BUF_INIT;
	int ret;

	if (inline_key) {
		ret = minisign_pubkey_parse(inline_key, strlen(inline_key), pk, e);
		if (ret < 0)
			wb_error_prefix(e, "key given with -P");
		return ret;
	}
	ret = fs_read_file(keyfile, MINISIGN_SIGFILE_MAX, WB_EUSAGE, &text, e);
	if (!ret && minisign_pubkey_parse(text.ptr, text.len, pk, e) < 0) {
		wb_error_prefix(e, "'%s'", keyfile);
		ret = -1;
	}
	buf_release(&text);
	return ret;
}

static int sig_verify(const char *keyfile, const char *inline_key,
		      const char *file, const char *sigfile, int allow_legacy,
		      int no_file_check)
{
	struct wb_err e = WB_ERR_INIT;
	struct minisign_pubkey pk;
	struct minisign_sig sig;
	struct minisign_result res;
	struct digest_result dr;
	struct buf text = BUF_INIT;
	char *default_sigfile = NULL;
	int ret, legacy_hint = 0;

	memset(&sig, 0, sizeof(sig));
	memset(&res, 0, sizeof(res));
	memset(&dr, 0, sizeof(dr));
	if (sig_load_key(keyfile, inline_key, &pk, &e) < 0)
		return sig_exit(&e);
	pk.allow_legacy = allow_legacy;
	pk.file_check = !no_file_check;

	if (!sigfile)
		sigfile = default_sigfile = xasprintf("%s.minisig", file);
	ret = fs_read_file(sigfile, MINISIGN_SIGFILE_MAX, WB_EUSAGE, &text, &e);
	if (!ret && minisign_sig_parse(text.ptr, text.len, &sig, &e) < 0) {
		wb_error_prefix(&e, "'%s'", sigfile);
		ret = -1;
	}
	/* a prehashed signature needs BLAKE2b-512; a legacy one reads FILE */
	if (!ret && strcmp(sig.alg, "Ed"))
		ret = digest_file(file, DIGEST_BLAKE2B512, &dr, &e);
	if (!ret) {
		ret = minisign_verify(&sig, &pk, 1, dr.blake2b512, file,
				      fs_basename(file), &res, &e);
		if (ret < 0)
			wb_error_prefix(&e, "'%s'", file);
	}
	if (ret < 0 && e.code == WB_EVERIFY && !allow_legacy &&
	    !strcmp(sig.alg, "Ed") &&
	    !memcmp(sig.keyid, pk.keyid, MINISIGN_KEYID_LEN))
		legacy_hint = 1;
	if (!ret)
		printf("Signature and comment signature verified\nTrusted comment: %s\n",
		       res.trusted_comment);

	minisign_result_release(&res);
	minisign_sig_release(&sig);
	buf_release(&text);
	free(default_sigfile);
	if (ret < 0) {
		ret = sig_exit(&e);
		if (legacy_hint)
			fputs("hint: pass --allow-legacy to accept legacy signatures\n",
			      stderr);
		return ret;
	}
	return WB_OK;
}

/* ROOTS and PUBS are bound to SET's options (cmd_sig). */
/* "2026-05-01T00:00:00Z" into *OUT. */
static int sig_parse_time(const char *v, time_t *out)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(v, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end || tm.tm_year < 70)
		return -1;
	*out = timegm(&tm);
	return 0;
}

/* `--signatures all|one`: which of a file's signatures must pass. */
static int sig_which(const char *v, enum authenticode_sigs *out)
{
	if (!v || !strcmp(v, "all"))
		*out = AUTHENTICODE_SIGS_ALL;
	else if (!strcmp(v, "one"))
		*out = AUTHENTICODE_SIGS_ONE;
	else
		return -1;
	return 0;
}

/* --json: the verifier's fields (O, taken) join the run's result, with
 * "verified" and "file". */
static void sig_json_result(struct wb_run *run, json_t *o, int ok, const char *file)
{
	const char *k;
	json_t *v;

	json_object_foreach(o, k, v)
		cmd_json_set(run, k, json_incref(v));
	json_decref(o);
	cmd_json_set(run, "verified", json_boolean(ok));
	cmd_json_set(run, "file", json_string(file));
}

static void sig_authenticode_print(const char *file, const struct authenticode_result *res,
				   int ok, struct wb_run *run)
{
	if (run->json) {
		sig_json_result(run, authenticode_result_to_json(res), ok, file);
		return;
	}
	if (!ok)
		return;
	printf("Authenticode signature verified: %s\n", file);
	printf("signer:     %s\n", res->subject);
	printf("issuer:     %s\n", res->issuer);
	printf("thumbprint: %s (sha256)\n", res->thumbprint);
	printf("digest:     %s\n", res->digest);
	printf("timestamp:  %s\n", res->has_timestamp ? res->timestamp_str : "none");
	for (size_t i = 0; res->nsignatures > 1 && i < res->nsignatures; i++) {
		const struct authenticode_signature *s = &res->signatures[i];

		printf("signature %zu: entry %u%s: %s: %s\n", i + 1, s->entry,
		       s->nested ? ", nested" : "", s->ok ? "ok" : "not accepted",
		       s->ok ? s->subject : s->error);
	}
}

static int sig_authenticode(int argc, char **argv, struct wb_run *run,
			    const struct cmd_optset *set, const char *const *roots,
			    struct wb_strlist *pubs_, const char *const *which,
			    const char *const *at)
{
	struct wb_strlist pubs = WB_STRLIST_INIT;
	struct authenticode_policy pol;
	struct authenticode_result res;
	struct wb_err e = WB_ERR_INIT;
	int ret;

	if ((ret = cmd_parse_options(argc, argv, set, run)))
		return ret;
	pubs = *pubs_;
	memset(pubs_, 0, sizeof(*pubs_));
	if (run->positional.nr != 1) {
		wb_strlist_release(&pubs);
		cmd_errorf("sig authenticode: give exactly one FILE");
		return cmd_usage("%s", SIG_AUTHENTICODE_USAGE);
	}
	memset(&pol, 0, sizeof(pol));
	if (sig_which(*which, &pol.signatures)) {
		wb_strlist_release(&pubs);
		cmd_errorf("sig authenticode: --signatures takes 'all' or 'one', not '%s'", *which);
		return cmd_usage("%s", SIG_AUTHENTICODE_USAGE);
	}
	if (*at && sig_parse_time(*at, &pol.at)) {
		wb_strlist_release(&pubs);
		cmd_errorf("sig authenticode: --at takes a UTC time like 2026-05-01T00:00:00Z, not '%s'",
			   *at);
		return cmd_usage("%s", SIG_AUTHENTICODE_USAGE);
	}
	pol.require = 1;
	pol.roots = *roots;
	pol.publishers = (const char *const *)pubs.v;
	pol.npublishers = pubs.nr;
	ret = authenticode_verify_file(run->positional.v[0], &pol, &res, &e);
	sig_authenticode_print(run->positional.v[0], &res, !ret, run);
	authenticode_result_release(&res);
	wb_strlist_release(&pubs);
	return ret ? sig_exit(&e) : WB_OK;
}

/* Read an optional input file of `sig sigstore` (capped, exit 2 when
 * missing). */
static int sig_read_opt(const char *path, const char *what, struct buf *out,
			struct wb_err *e)
{
	if (!path)
		return 0;
	if (fs_read_file(path, SIGSTORE_INPUT_MAX, WB_EUSAGE, out, e) < 0) {
		wb_error_prefix(e, "%s", what);
		return -1;
	}
	return 0;
}

static void sig_time_str(long long t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t && gmtime_r(&tt, &tm))
		strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
	else
		snprintf(out, 32, "none");
}

static void sig_sigstore_print(const char *file, const struct sigstore_evidence *ev,
			       struct wb_run *run)
{
	char when[32];

	sig_time_str(ev->signed_time, when);
	if (run->json) {
		sig_json_result(run, sigstore_evidence_to_json(ev), 1, file);
		return;
	}
	printf("Sigstore signature verified: %s\n", file);
	if (ev->material == SIGSTORE_MATERIAL_CERTIFICATE) {
		printf("identity:        %s\n", ev->identity);
		printf("issuer:          %s\n", ev->issuer);
	} else {
		printf("key:             sha256:%s\n", ev->key_sha256);
	}
	if (ev->has_tlog) {
		char it[32];

		sig_time_str(ev->integrated_time, it);
		printf("log index:       %lld (%s)\n", ev->log_index, ev->tlog_kind);
		printf("log id:          %s\n", ev->log_id);
		printf("integrated time: %s\n", it);
	}
	printf("timestamps:      %d\n", ev->ntimestamps);
	printf("signed at:       %s\n", when);
}

/* The inputs of `sig sigstore`, bound to its options (one per process). */
static struct {
	const char *root_path, *bundle, *signature, *certificate, *tlog_entry,
		*rekor, *save_entry, *identity, *issuer, *key, *tlog_threshold;
} ss;

static const struct cmd_opt sigstore_opts[] = {
	{ 0, "--trusted-root", NULL, "FILE", "the pinned trusted_root.json (required)",
	  &ss.root_path, NULL, NULL },
	{ 0, "--bundle", NULL, "FILE", "a Sigstore bundle (.sigstore.json)", &ss.bundle,
	  NULL, NULL },
	{ 0, "--signature", NULL, "FILE", "a cosign sign-blob signature (base64), instead",
	  &ss.signature, NULL, NULL },
	{ 0, "--certificate", NULL, "FILE", "its Fulcio certificate (PEM or base64 PEM)",
	  &ss.certificate, NULL, NULL },
	{ 0, "--tlog-entry", NULL, "FILE", "its Rekor entry (Rekor v1 API JSON)",
	  &ss.tlog_entry, NULL, NULL },
	{ 0, "--rekor", NULL, "URL", "look the entry up online in this Rekor (v1 API)",
	  &ss.rekor, NULL, NULL },
	{ 0, "--save-tlog-entry", NULL, "FILE", "write the Rekor entry that verified",
	  &ss.save_entry, NULL, NULL },
	{ 0, "--identity", NULL, "ID", "the exact SAN (email or URI) required",
	  &ss.identity, NULL, NULL },
	{ 0, "--issuer", NULL, "URL", "the exact OIDC issuer required", &ss.issuer, NULL,
	  NULL },
	{ 0, "--key", NULL, "FILE", "a pinned PEM public key (ECDSA P-256, Ed25519)",
	  &ss.key, NULL, NULL },
	{ 0, "--tlog-threshold", NULL, "N", "require entries in N distinct transparency logs",
	  &ss.tlog_threshold, NULL, NULL },
	{ 0 },
};
static const struct cmd_optset sigstore_optset = {
	OPT_JSON, sigstore_opts, 0, SIG_SIGSTORE_USAGE
};

/*
 * --rekor: verify IN with each entry Rekor lists for the file's SHA-256
 * until one verifies (the first failure is the one reported); none listed
 * is a failure (a keyless signature proves no time without one).
 */
static int sig_request(void *ctx, const char *url, const char *post_json, size_t max,
		       int no_redirect, struct buf *out, long *status, struct wb_err *e)
{
	return fetch_request(ctx, url, post_json, max, no_redirect, out, status, e);
}

static int sig_sigstore_rekor(struct sigstore_input *in, struct sigstore_evidence *ev,
			      struct wb_run *run, struct wb_err *e)
{
	struct trust_policy policy;
	struct fetch_transport t;
	struct trust_http http = { sig_request, &t };
	struct buf found = BUF_INIT;
	char hex[65], *chosen = NULL, note[WB_ERR_MAX / 2] = "";
	size_t n = 0;
	int ret = -1;

	memset(&policy, 0, sizeof(policy));
	policy.allow_http = 1;
	t.policy = &policy;
	t.cacert = run->cacert ? run->cacert : getenv("SSL_CERT_FILE");
	digest_hex(in->artifact_sha256, 32, hex);
	if (rekor_lookup_merged(&http, ss.rekor, hex, &found, e) < 0)
		goto out;
	if (e->msg[0]) {
		/* a cap was hit: said now, and again if nothing verifies */
		snprintf(note, sizeof(note), "%s", e->msg);
		wb_log(&run->log, WB_LOG_WARN, "%s", note);
		wb_err_clear(e);
	}
	if (!found.len) {
		char *shown = text_printable(ss.rekor);

		wb_error(e, WB_EVERIFY, "rekor '%s' has no entry for sha256:%s", shown, hex);
		free(shown);
		goto out;
	}
	ret = sigstore_verify_entries(in, found.ptr, found.len, ev, &chosen, &n, e);
	if (ret < 0)
		wb_error_prefix(e, "%s%snone of the %zu entries %s verifies; the first",
				note, note[0] ? "; " : "", n, note[0] ? "fetched" : "rekor lists");
	else if (ss.save_entry &&
		 fs_write_atomic(ss.save_entry, chosen, strlen(chosen), 0644, e) < 0)
		ret = -1;
out:
	free(chosen);
	buf_release(&found);
	return ret;
}

static int sig_sigstore(int argc, char **argv, struct wb_run *run)
{
	struct buf tb = BUF_INIT, tsig = BUF_INIT, tcert = BUF_INIT,
		   tent = BUF_INIT, tkey = BUF_INIT;
	struct sigstore_root root;
	struct sigstore_input in;
	struct sigstore_evidence ev;
	struct digest_result dr;
	struct wb_err e = WB_ERR_INIT;
	const char *file;
	int ret = -1;

	if ((ret = cmd_parse_options(argc, argv, &sigstore_optset, run)))
		return ret;
	ret = -1;
	if (run->positional.nr != 1) {
		cmd_errorf("sig sigstore: give exactly one FILE");
		return cmd_usage("%s", SIG_SIGSTORE_USAGE);
	}
	file = run->positional.v[0];
	if (!ss.root_path) {
		cmd_errorf("sig sigstore: --trusted-root is required");
		return cmd_usage("%s", SIG_SIGSTORE_USAGE);
	}
	if (!ss.bundle == !ss.signature) {
		cmd_errorf("sig sigstore: give exactly one of --bundle and --signature");
		return cmd_usage("%s", SIG_SIGSTORE_USAGE);
	}
	if (ss.bundle && (ss.certificate || ss.tlog_entry)) {
		cmd_errorf("sig sigstore: --certificate and --tlog-entry go with --signature");
		return cmd_usage("%s", SIG_SIGSTORE_USAGE);
	}
	if (!ss.key == !(ss.identity || ss.issuer) || (!ss.key && (!ss.identity || !ss.issuer))) {
		cmd_errorf("sig sigstore: give --identity and --issuer, or --key");
		return cmd_usage("%s", SIG_SIGSTORE_USAGE);
	}
	if ((ss.rekor && (!ss.signature || ss.tlog_entry)) || (ss.save_entry && !ss.rekor)) {
		cmd_errorf("sig sigstore: --rekor goes with --signature, instead of "
			   "--tlog-entry; --save-tlog-entry with --rekor");
		return cmd_usage("%s", SIG_SIGSTORE_USAGE);
	}
	if (ss.tlog_threshold &&
	    (!*ss.tlog_threshold || strspn(ss.tlog_threshold, "0123456789") !=
	     strlen(ss.tlog_threshold) || strlen(ss.tlog_threshold) > 2 ||
	     atoi(ss.tlog_threshold) < 1)) {
		cmd_errorf("sig sigstore: --tlog-threshold takes a number of logs, 1 to 99");
		return cmd_usage("%s", SIG_SIGSTORE_USAGE);
	}
	if (ss.signature && !ss.certificate && !ss.key) {
		cmd_errorf("sig sigstore: --signature needs --certificate (keyless) or --key");
		return cmd_usage("%s", SIG_SIGSTORE_USAGE);
	}

	memset(&root, 0, sizeof(root));
	memset(&in, 0, sizeof(in));
	memset(&ev, 0, sizeof(ev));
	if (sigstore_root_load(ss.root_path, &root, &e) < 0 ||
	    sig_read_opt(ss.bundle, "bundle", &tb, &e) < 0 ||
	    sig_read_opt(ss.signature, "signature", &tsig, &e) < 0 ||
	    sig_read_opt(ss.certificate, "certificate", &tcert, &e) < 0 ||
	    sig_read_opt(ss.tlog_entry, "tlog entry", &tent, &e) < 0 ||
	    sig_read_opt(ss.key, "key", &tkey, &e) < 0 ||
	    digest_file(file, DIGEST_SHA256, &dr, &e) < 0)
		goto out;
	in.artifact_sha256 = dr.sha256;
	in.artifact_path = file;
	if (ss.bundle) {
		in.bundle = tb.ptr;
		in.bundle_len = tb.len;
	} else {
		in.signature = tsig.ptr;
		in.signature_len = tsig.len;
	}
	if (ss.certificate) {
		in.certificate = tcert.ptr;
		in.certificate_len = tcert.len;
	}
	if (ss.tlog_entry) {
		in.tlog_entry = tent.ptr;
		in.tlog_entry_len = tent.len;
	}
	if (ss.key) {
		in.key_pem = tkey.ptr;
		in.key_pem_len = tkey.len;
	}
	in.identity = ss.identity;
	in.issuer = ss.issuer;
	in.root = &root;
	in.tlog_threshold = ss.tlog_threshold ? (unsigned)atoi(ss.tlog_threshold) : 0;
	if (ss.rekor)
		ret = sig_sigstore_rekor(&in, &ev, run, &e);
	else
		ret = sigstore_verify(&in, &ev, &e);
	if (ret < 0)
		wb_error_prefix(&e, "'%s'", file);
	else
		sig_sigstore_print(file, &ev, run);
out:
	sigstore_evidence_release(&ev);
	sigstore_root_release(&root);
	buf_release(&tb);
	buf_release(&tsig);
	buf_release(&tcert);
	buf_release(&tent);
	buf_release(&tkey);
	return ret < 0 ? sig_exit(&e) : WB_OK;
}

int cmd_sig(int argc, char **argv, struct wb_run *run)
{
	const char *keyfile = NULL, *inline_key = NULL, *file = NULL,
		   *sigfile = NULL;
	int allow_legacy = 0, no_file_check = 0;
	const struct cmd_opt opts[] = {
		{ 0, "--public-key-file", "-p", "KEYFILE", "the public key file (minisign .pub)",
		  &keyfile, NULL, NULL },
		{ 0, "--public-key", "-P", "KEY", "the public key itself (base64)",
		  &inline_key, NULL, NULL },
		{ 0, "--file", "-m", "FILE", "the signed file", &file, NULL, NULL },
		{ 0, "--sig-file", "-x", "SIGFILE", "the signature (default FILE.minisig)",
		  &sigfile, NULL, NULL },
		{ 0, "--allow-legacy", NULL, NULL, "accept legacy 'Ed' (not prehashed) signatures",
		  NULL, NULL, &allow_legacy },
		{ 0, "--no-file-check", NULL, NULL, "do not require the trusted comment's 'file:'\n"
		  "field to equal the base name of FILE", NULL, NULL, &no_file_check },
		{ 0 },
	};
	const struct cmd_optset set = { 0, opts, 0, SIG_VERIFY_USAGE };
	const char *roots = NULL, *which = NULL, *at = NULL;
	struct wb_strlist pubs = WB_STRLIST_INIT;
	const struct cmd_opt aopts[] = {
		{ 0, "--roots", NULL, "FILE", "trusted roots, PEM (code signing and timestamps;\n"
		  "default: the system CA bundle)", &roots, NULL, NULL },
		{ 0, "--publisher", NULL, "X", "allowed signer: subject (as printed) or SHA-256\n"
		  "thumbprint (repeatable; default: any signer)", NULL, &pubs, NULL },
		{ 0, "--at", NULL, "TIME", "judge signatures without a timestamp at TIME\n"
		  "(2026-05-01T00:00:00Z) instead of now", &at, NULL, NULL },
		{ 0, "--signatures", NULL, "all|one", "of a file with several signatures, which must\n"
		  "pass the policy (default all; none may be broken)", &which, NULL, NULL },
		{ 0 },
	};
	const struct cmd_optset aset = { OPT_JSON, aopts, 0, SIG_AUTHENTICODE_USAGE };
	int ret;

	if (argc < 2)
		return cmd_usage("%s", SIG_USAGE);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cmd_show_help(run, (const struct cmd_optset *const[]){ &set, &aset,
									  &sigstore_optset },
				     (const char *const[]){ "verify options",
							    "authenticode options",
							    "sigstore options" }, 3);
	if (!strcmp(argv[1], "sigstore"))
		return sig_sigstore(argc - 1, argv + 1, run);
	if (!strcmp(argv[1], "authenticode")) {
		ret = sig_authenticode(argc - 1, argv + 1, run, &aset, &roots, &pubs, &which, &at);
		wb_strlist_release(&pubs);
		return ret;
	}
	if (strcmp(argv[1], "verify")) {
		cmd_errorf("sig: unknown sub-command '%s'", argv[1]);
		return cmd_usage("%s", SIG_USAGE);
	}
	if ((ret = cmd_parse_options(argc - 1, argv + 1, &set, run)))
		return ret;
	if (run->positional.nr) {
		cmd_errorf("sig verify: unexpected argument '%s'", run->positional.v[0]);
		return cmd_usage("%s", SIG_VERIFY_USAGE);
	}
	if (!keyfile == !inline_key) {
		cmd_errorf("sig verify: give exactly one of -p KEYFILE and -P KEY");
		return cmd_usage("%s", SIG_VERIFY_USAGE);
	}
	if (!file) {
		cmd_errorf("sig verify: -m FILE is required");
		return cmd_usage("%s", SIG_VERIFY_USAGE);
	}
	return sig_verify(keyfile, inline_key, file, sigfile, allow_legacy,
			  no_file_check);
}
