/*
 * winbuild: build the offline, verified part of a Windows Kubernetes node
 * image. This file holds the command table, global options and exit codes;
 * each command lives in builder/cmd/<name>.c.
 */
#include <locale.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "lib/buf.h"

static int cmd_help(int argc, char **argv, struct wb_run *run);
static int cmd_version(int argc, char **argv, struct wb_run *run);

static const struct wb_command commands[] = {
	{ "plan", cmd_plan,
	  "plan RECIPE [-O FILE]... [--set KEY=VALUE]... [--explain] [--json]",
	  "resolve a recipe and print what will be fetched, verified and placed",
	  "Resolve RECIPE with override files (-O, in order), $WINBUILD_SET and\n"
	  "--set, and print for every artifact: the URLs in the order they will\n"
	  "be tried, how it will be verified, and where it lands on the Windows\n"
	  "disk. Nothing is downloaded.\n\n"
	  "  -O, --override FILE  apply an override file (repeatable, later wins)\n"
	  "  --set KEY=VALUE      set one value (repeatable; beats everything)\n"
	  "  --explain            show where every value came from (file:line)\n"
	  "  --json               machine-readable plan (docs/plan-json.md)\n" },
	{ "fetch", cmd_fetch, "fetch RECIPE [options]",
	  "download and verify every artifact into the cache",
	  "Options:\n"
	  "  -O, --override FILE  override file (repeatable)\n"
	  "  --set KEY=VALUE      set a recipe value (repeatable)\n"
	  "  -j, --jobs N         parallel transfers (default 4)\n"
	  "  --offline            no network: the cache and file:// URLs only\n"
	  "  --locked             refuse anything that differs from the lock file\n"
	  "  --lock FILE          the lock file (default winbuild.lock)\n"
	  "  --cache DIR          the cache (default $WINBUILD_CACHE, $XDG_CACHE_HOME/winbuild)\n"
	  "  --cacert FILE        CA bundle for HTTPS (default $SSL_CERT_FILE, system)\n"
	  "  --no-progress        no progress bars\n"
	  "  --json               print a JSON summary on stdout\n"
	  "  -q, --quiet          only errors\n"
	  "\nexit codes: 0 all verified, 1 something did not verify (or --locked\n"
	  "differs), 2 could not be checked or recipe error, 3 network error or\n"
	  "--offline with artifacts missing from the cache, 5 I/O error\n" },
	{ "lock", cmd_lock, "lock RECIPE [options]",
	  "fetch, verify and write winbuild.lock",
	  "Options: as fetch, plus\n"
	  "  --accept-new         pin needs_pin artifacts as downloaded (trust on\n"
	  "                       first use); prints every pin it made\n" },
	{ "stage", cmd_stage, "stage RECIPE [-o OUT] [options]",
	  "fetch if needed, then build OUT/<name>/tree and manifest.json",
	  "Builds the Windows system drive of the image in OUT/<name>/tree (default\n"
	  "OUT: out) from verified cache entries, with the generated config files,\n"
	  "and OUT/<name>/manifest.json (docs/stage.md, docs/manifest.md). The\n"
	  "tree is built beside the old one and swapped in only when complete.\n\n"
	  "Options: as fetch, plus\n"
	  "  -o, --out DIR        output directory (default out)\n"
	  "\nenvironment: SOURCE_DATE_EPOCH (mtime of every file; default\n"
	  "315532800, 1980-01-01), WINBUILD_TEMPLATES (template directory)\n"
	  "\nexit codes: 0 staged, 1 a digest did not match (the cache entry is\n"
	  "quarantined), 2 recipe or template error, 3 network error, 4 hostile or\n"
	  "broken archive, colliding paths, 5 I/O error\n" },
	{ "emit", cmd_emit,
	  "emit RECIPE [--builder NAME]... [-o OUT] [options]",
	  "write Packer inputs (HCL2, var file, PowerShell) from the staged output",
	  "Reads OUT/<name>/manifest.json and tree/ (written by 'winbuild stage')\n"
	  "and writes OUT/<name>/packer/ (docs/packer.md).\n\n"
	  "  -b, --builder NAME   emit only this builder (repeatable; one of the\n"
	  "                       recipe's packer.builders)\n"
	  "  -o, --out DIR        output directory (default out)\n"
	  "  -O, --override FILE  override file (repeatable)\n"
	  "  --set KEY=VALUE      set a recipe value (repeatable)\n"
	  "  --format FMT         packer (default) or image-builder: a JSON var file\n"
	  "                       for kubernetes-sigs/image-builder in\n"
	  "                       OUT/<name>/image-builder/<name>.json\n"
	  "  --mirror-url URL     with image-builder: where the mirror of the\n"
	  "                       verified artifacts is served (URL/<host>/<path>)\n"
	  "  --lock FILE          digests for image-builder (default winbuild.lock)\n"
	  "  --sign-scripts       Authenticode-sign every script with osslsigncode;\n"
	  "                       the template then runs them with execution_policy\n"
	  "                       \"allsigned\" (docs/authenticode.md). Key, one of:\n"
	  "  --sign-cert FILE --sign-key FILE     PEM certificate chain and key\n"
	  "  --sign-pkcs12 FILE                   PKCS#12 file\n"
	  "  --sign-pkcs11-uri URI --sign-pkcs11-module SO --sign-cert FILE|URI\n"
	  "                       a key kept in a PKCS#11 token (HSM)\n"
	  "  --sign-pass-file FILE  key password, PKCS#12 password or token PIN\n"
	  "  --sign-timestamp URL   RFC 3161 timestamp server (needs network)\n" },
	{ "build", cmd_build,
	  "build RECIPE [-o OUT] [-O FILE]... [--set KEY=VALUE]... [--builder NAME]... [options]",
	  "plan, fetch, stage and emit in one go: the everyday command",
	  "Resolve RECIPE, fetch and verify every artifact into the cache, stage\n"
	  "OUT/<name>/tree and its manifest, and write the Packer inputs to\n"
	  "OUT/<name>/packer/. Takes the options of stage and emit (not --format).\n\n"
	  "  -o, --out DIR        output directory (default out)\n"
	  "  -O, --override FILE  apply an override file (repeatable)\n"
	  "  --set KEY=VALUE      set one value (repeatable)\n"
	  "  --builder NAME       emit only these Packer builders (repeatable)\n"
	  "  -j, --jobs N         parallel downloads (default 4)\n"
	  "  --offline            no network: the cache and file:// URLs only\n"
	  "  --locked             refuse anything that differs from the lock file\n"
	  "  --cacert FILE        CA bundle for HTTPS\n"
	  "  --sign-scripts ...   Authenticode-sign the PowerShell scripts (see emit)\n"
	  "exit codes: 0 ok, 1 verification failed, 2 usage or recipe error,\n"
	  "3 network error, 4 archive or staging error, 5 I/O error\n" },
	{ "verify", cmd_verify, "verify OUTDIR | verify --lock FILE [--cache DIR]",
	  "re-check a staged output against its manifest, or the cache against a lock",
	  "verify OUTDIR (OUT/<name>, as stage and build write it): re-hash every\n"
	  "file of OUTDIR/tree against OUTDIR/manifest.json and report each\n"
	  "modified, missing and extra file or directory.\n"
	  "verify --lock FILE: re-hash the cache entry of every artifact of the\n"
	  "lock; a changed entry is quarantined.\n\n"
	  "  --lock FILE          check the cache against this lock file\n"
	  "  --cache DIR          the cache (default $WINBUILD_CACHE, $XDG_CACHE_HOME/winbuild)\n"
	  "  -q, --quiet          print only problems\n"
	  "\nexit codes: 0 everything matches, 1 something is modified, missing or\n"
	  "extra, 2 usage or unreadable manifest/lock, 5 I/O error\n" },
	{ "mirror", cmd_mirror, "mirror RECIPE DIR [--sign KEYFILE] [options]",
	  "export the verified artifacts, checksums and signatures for air-gapped use",
	  "Fetch and verify every artifact of RECIPE, then write DIR/<host>/<path>\n"
	  "(the upstream URL's host and path), with <file>.sha256, <file>.sha512\n"
	  "(sha256sum format), the signature that verified (<file>.minisig), copies\n"
	  "at the checksum and signature URLs the recipe uses, and DIR/index.json.\n"
	  "Serve DIR and point a mirrors: rule at it (docs/provenance.md).\n\n"
	  "  --sign KEYFILE       sign every artifact anew with this minisign secret\n"
	  "                       key (unencrypted: minisign -G -W); trust it with\n"
	  "                       signatures.keys and policy.require: signature\n"
	  "Options: as fetch (-O, --set, -j, --offline, --locked, --lock, --cache,\n"
	  "--cacert, --no-progress, -q)\n"
	  "\nexit codes: as fetch; 1 also when a cache entry changed since it was verified\n" },
	{ "cache", cmd_cache, "cache ls|gc [--cache DIR] [--json]",
	  "inspect and prune the download cache",
	  "  ls   list entries with size and the artifacts that refer to them\n"
	  "  gc   remove temp files, quarantined entries and unreferenced entries\n" },
	{ "sig", cmd_sig,
	  "sig verify (-p KEYFILE | -P KEY) -m FILE [-x SIGFILE] [--allow-legacy] [--no-file-check]\n"
	  "       winbuild sig authenticode FILE [--roots FILE] [--publisher X]...\n"
	  "       winbuild sig sigstore FILE --trusted-root ROOT.json (--bundle B | --signature SIG\n"
	  "            [--certificate CERT] [--tlog-entry E]) (--identity ID --issuer ISSUER | --key KEY.pub) [--json]",
	  "verify a minisign, Authenticode or Sigstore signature as winbuild does",
	  "sub-commands:\n"
	  "  verify               verify FILE against its minisign signature\n"
	  "  authenticode         verify the Authenticode signature of a PE (.exe,\n"
	  "                       .dll) or MSI file; print signer, thumbprint and\n"
	  "                       timestamp (docs/authenticode.md)\n"
	  "  sigstore             verify a Sigstore bundle (v0.1-v0.3) or a cosign\n"
	  "                       signature offline against a pinned trusted root:\n"
	  "                       keyless (--identity, --issuer) or with --key;\n"
	  "                       0 verified, 1 not, 2 could not check\n"
	  "                       (docs/sigstore.md)\n"
	  "\noptions:\n"
	  "  -p, --public-key-file KEYFILE\n"
	  "                       the public key file (minisign .pub)\n"
	  "  -P, --public-key KEY the public key itself (base64)\n"
	  "  -m, --file FILE      the signed file\n"
	  "  -x, --sig-file SIGFILE\n"
	  "                       the signature (default FILE.minisig)\n"
	  "  --allow-legacy       accept legacy 'Ed' (not prehashed) signatures\n"
	  "  --no-file-check      do not require the trusted comment's 'file:'\n"
	  "                       field to equal the base name of FILE\n"
	  "\nauthenticode options:\n"
	  "  --roots FILE         trusted roots, PEM (code signing and timestamps;\n"
	  "                       default: the system CA bundle)\n"
	  "  --publisher X        allowed signer: subject (as printed) or SHA-256\n"
	  "                       thumbprint (repeatable; default: any signer)\n"
	  "\nsigstore options:\n"
	  "  --trusted-root FILE  the pinned trusted_root.json (required)\n"
	  "  --bundle FILE        a Sigstore bundle (.sigstore.json)\n"
	  "  --signature FILE     a cosign sign-blob signature (base64), instead\n"
	  "  --certificate FILE   its Fulcio certificate (PEM or base64 PEM)\n"
	  "  --tlog-entry FILE    its Rekor entry (Rekor v1 API JSON)\n"
	  "  --identity ID        the exact SAN (email or URI) required\n"
	  "  --issuer URL         the exact OIDC issuer required\n"
	  "  --key FILE           a pinned PEM public key (ECDSA P-256, Ed25519)\n"
	  "  --json               print what verified as one JSON object\n"
	  "\nexit codes as 'minisign -V': 0 verified, 1 verification failed,\n"
	  "2 could not verify (missing file, unreadable key or signature, usage)\n" },
	{ "help", cmd_help, "help [COMMAND]", "show help for winbuild or one command",
	  "Without COMMAND, list the commands. With COMMAND, show its options.\n" },
	{ "version", cmd_version, "version", "print the version", "" },
};

const struct wb_command *wb_commands(size_t *nr)
{
	*nr = ARRAY_SIZE(commands);
	return commands;
}

int cmd_fail(const struct wb_err *e)
{
	fprintf(stderr, "winbuild: %s\n", e->msg[0] ? e->msg : "unknown error");
	return e->code ? e->code : WB_EIO;
}

int cmd_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("usage: winbuild ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return WB_EUSAGE;
}

static const struct wb_command *find_command(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), prev[64], cur[64];

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
		memcpy(prev, cur, sizeof(prev));
	}
	return prev[lb];
}

static const char *closest_command(const char *name)
{
	const char *best = NULL;
	size_t bestd = 3;

	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		size_t d = edit_distance(name, commands[i].name);
		if (d < bestd || (!strncmp(commands[i].name, name, strlen(name)) &&
				  strlen(name) >= 2 && !best)) {
			bestd = d;
			best = commands[i].name;
		}
	}
	return best;
}

static void list_commands(FILE *f)
{
	fputs("usage: winbuild [--version] [--help] COMMAND [ARGS]\n\ncommands:\n", f);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\nexit codes: 0 ok, 1 verification failed, 2 usage or recipe error,\n"
	      "3 network error, 4 archive or staging error, 5 I/O or internal error\n"
	      "'winbuild help COMMAND' shows one command's options.\n", f);
}

static int cmd_help(int argc, char **argv, struct wb_run *run)
{
	const struct wb_command *c;

	(void)run;
	if (argc < 2) {
		list_commands(stdout);
		return WB_OK;
	}
	if (argc > 2)
		return cmd_usage("help [COMMAND]");
	c = find_command(argv[1]);
	if (!c) {
		const char *near = closest_command(argv[1]);
		fprintf(stderr, "winbuild: no such command '%s'%s%s%s\n", argv[1],
			near ? " (did you mean '" : "", near ? near : "",
			near ? "'?)" : "");
		return WB_EUSAGE;
	}
	printf("usage: winbuild %s\n\n%s\n%s", c->usage, c->summary, c->help);
	return WB_OK;
}

static int cmd_version(int argc, char **argv, struct wb_run *run)
{
	(void)argv;
	(void)run;
	if (argc > 1)
		return cmd_usage("version");
	printf("winbuild %s\n", WB_VERSION);
	return WB_OK;
}

static void log_to_stderr(struct wb_log *log, int level, const char *msg)
{
	(void)log;
	if (level == WB_LOG_ERROR)
		fprintf(stderr, "winbuild: %s\n", msg);
	else if (level == WB_LOG_WARN)
		fprintf(stderr, "winbuild: warning: %s\n", msg);
	else
		fprintf(stderr, "%s\n", msg);
}

/*
 * libarchive converts entry names through the C library's multibyte
 * functions: in the "C" locale every non-ASCII name is "damaged". Only
 * LC_CTYPE is set, to a UTF-8 locale (C.UTF-8 is in every glibc since 2.35
 * and in Debian's before that); numbers, messages and collation stay "C".
 * Without one, non-ASCII names are refused (stage/extract.h), never
 * mangled. Process-global, so here, before any thread starts.
 */
static void utf8_ctype(void)
{
	static const char *const names[] = { "C.UTF-8", "C.utf8", "en_US.UTF-8" };

	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (setlocale(LC_CTYPE, names[i]))
			return;
}

int main(int argc, char **argv)
{
	struct wb_run run;
	const struct wb_command *c;
	int ret;

	memset(&run, 0, sizeof(run));
	run.argv0 = argv[0];
	run.jobs = 4;
	run.out_dir = "out";
	run.lock_path = "winbuild.lock";
	run.env_set = getenv("WINBUILD_SET");
	run.log.emit = log_to_stderr;
	run.log.level = WB_LOG_INFO;
	run.no_progress = !isatty(STDERR_FILENO);

	/* A file-size limit (ulimit -f) must be an EFBIG write error we report
	 * and clean up after, not a signal that kills us mid-write. */
	signal(SIGXFSZ, SIG_IGN);
	utf8_ctype();

	if (argc < 2) {
		list_commands(stderr);
		return WB_EUSAGE;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))
		return cmd_version(1, argv + 1, &run);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cmd_help(argc - 1, argv + 1, &run);
	if (argv[1][0] == '-') {
		fprintf(stderr, "winbuild: unknown option '%s'\n", argv[1]);
		fputs("usage: winbuild [--version] [--help] COMMAND [ARGS]\n", stderr);
		return WB_EUSAGE;
	}
	c = find_command(argv[1]);
	if (!c) {
		const char *near = closest_command(argv[1]);
		fprintf(stderr, "winbuild: '%s' is not a winbuild command", argv[1]);
		if (near)
			fprintf(stderr, "; did you mean '%s'?", near);
		fputs("\nusage: winbuild [--version] [--help] COMMAND [ARGS]\n", stderr);
		return WB_EUSAGE;
	}
	run.command = c->name;
	if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
		printf("usage: winbuild %s\n\n%s\n%s", c->usage, c->summary, c->help);
		return WB_OK;
	}
	ret = c->fn(argc - 1, argv + 1, &run);
	if (run.quiet)
		run.log.level = WB_LOG_WARN;
	wb_strlist_release(&run.positional);
	wb_strlist_release(&run.overrides);
	wb_strlist_release(&run.sets);
	fflush(stdout);
	if (ferror(stdout)) {
		fprintf(stderr, "winbuild: error writing to standard output\n");
		return WB_EIO;
	}
	return ret;
}
