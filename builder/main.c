/*
 * winbuild: build the offline, verified part of a Windows Kubernetes node
 * image. This file holds the command table, global options and exit codes;
 * each command lives in builder/cmd/<name>.c.
 *
 * @where the command table, global options, exit codes
 */
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "lib/redact.h"
#include "lib/buf.h"
#include "lib/text.h"

static int cmd_help(int argc, char **argv, struct wb_run *run);
static int cmd_version(int argc, char **argv, struct wb_run *run);

static const struct wb_command commands[] = {
	{ "plan", cmd_plan,
	  "plan RECIPE [-O FILE]... [--set KEY=VALUE]... [--explain] [--json]",
	  "resolve a recipe and print what will be fetched, verified and placed",
	  "Resolve RECIPE with override files (-O, in order), $WINBUILD_SET and\n"
	  "--set, and print for every artifact: the URLs in the order they will\n"
	  "be tried, how it will be verified, and where it lands on the Windows\n"
	  "disk. Nothing is downloaded. --json: docs/plan-json.md.\n",
	  "exit codes: 0 resolved, 2 usage or recipe error (every schema error of\n"
	  "a file at once, at most 20)\n" },
	{ "fetch", cmd_fetch, "fetch RECIPE [options]",
	  "download and verify every artifact into the cache",
	  "Download every artifact of RECIPE into the content-addressed cache and\n"
	  "verify it (pinned digest, checksum file, minisign, Authenticode).\n",
	  "exit codes: 0 all verified, 1 something did not verify (or --locked\n"
	  "differs), 2 could not be checked or recipe error, 3 network error or\n"
	  "--offline with artifacts missing from the cache, 5 I/O error\n" },
	{ "lock", cmd_lock, "lock RECIPE [options]",
	  "fetch, verify and write winbuild.lock",
	  "Fetch and verify every artifact as fetch does, then write the lock file\n"
	  "(--lock FILE) recording each artifact's URL, size, SHA-256 and evidence.\n",
	  "exit codes: as fetch; the lock file is written only when everything\n"
	  "verified\n" },
	{ "stage", cmd_stage, "stage RECIPE... [-o OUT] [options] | stage --matrix FILE [options]",
	  "fetch if needed, then build OUT/<name>/tree and manifest.json",
	  "Builds the Windows system drive of the image in OUT/<name>/tree (default\n"
	  "OUT: out) from verified cache entries, with the generated config files,\n"
	  "and OUT/<name>/manifest.json (docs/stage.md, docs/manifest.md). The\n"
	  "tree is built beside the old one and swapped in only when complete.\n"
	  "A recipe's site_signing needs the site's key (--sign-*): the selected\n"
	  ".exe, .dll and .msi files get the site's Authenticode signature after\n"
	  "the upstream checks (docs/authenticode.md, \"Site signing\").\n"
	  "Several RECIPEs or --matrix FILE: an image matrix, as build (docs/matrix.md).\n",
	  "environment: SOURCE_DATE_EPOCH (mtime of every file; default\n"
	  "315532800, 1980-01-01), WINBUILD_TEMPLATES (template directory)\n"
	  "\nexit codes: 0 staged, 1 a digest did not match (the cache entry is\n"
	  "quarantined) or a signature failed, 2 recipe or template error, 3 network error, 4 hostile or\n"
	  "broken archive, colliding paths, 5 I/O error\n" },
	{ "emit", cmd_emit,
	  "emit RECIPE [--builder NAME]... [-o OUT] [options]",
	  "write Packer inputs (HCL2, var file, PowerShell) from the staged output",
	  "Reads OUT/<name>/manifest.json and tree/ (written by 'winbuild stage',\n"
	  "which emit runs first when nothing is staged) and writes\n"
	  "OUT/<name>/packer/ (docs/packer.md). --sign-scripts signs every script\n"
	  "with osslsigncode (docs/authenticode.md); the key is one of\n"
	  "--sign-cert FILE --sign-key FILE, --sign-pkcs12 FILE, or\n"
	  "--sign-pkcs11-uri URI --sign-pkcs11-module SO --sign-cert FILE|URI.\n",
	  "exit codes: as stage\n" },
	{ "build", cmd_build,
	  "build RECIPE... [-o OUT] [-O FILE]... [--set KEY=VALUE]... [--builder NAME]... [options]",
	  "plan, fetch, stage and emit in one go: the everyday command",
	  "Resolve RECIPE, fetch and verify every artifact into the cache, stage\n"
	  "OUT/<name>/tree and its manifest, and write the Packer inputs to\n"
	  "OUT/<name>/packer/. Takes the options of stage and emit (not --format\n"
	  "or --mirror-url).\n"
	  "Several RECIPEs, or --matrix FILE (recipes x variations x builders),\n"
	  "build an image matrix: every artifact of the union fetched and verified\n"
	  "once, each image staged and emitted into its own OUT/<name>/ with its\n"
	  "own <name>.lock, a table at the end; an image that fails is named and\n"
	  "the others complete; the exit code is the worst (docs/matrix.md).\n",
	  "exit codes: 0 ok, 1 verification failed, 2 usage or recipe error,\n"
	  "3 network error, 4 archive or staging error, 5 I/O error\n" },
	{ "verify", cmd_verify, "verify OUTDIR [--site-roots FILE] | verify --lock FILE [--cache DIR]",
	  "re-check a staged output against its manifest, or the cache against a lock",
	  "verify OUTDIR (OUT/<name>, as stage and build write it): re-hash every\n"
	  "file of OUTDIR/tree against OUTDIR/manifest.json and report each\n"
	  "modified, missing and extra file or directory; with --site-roots, the\n"
	  "site signature of every file the site signed (site_signing).\n"
	  "verify --lock FILE: re-hash the cache entry of every artifact of the\n"
	  "lock; a changed entry is quarantined.\n",
	  "exit codes: 0 everything matches, 1 something is modified, missing or\n"
	  "extra, or a site signature fails, 2 usage or unreadable manifest/lock\n"
	  "(or site-signed files without --site-roots), 5 I/O error\n" },
	{ "mirror", cmd_mirror, "mirror RECIPE DIR [--sign KEYFILE] [options]",
	  "export the verified artifacts, checksums and signatures for air-gapped use",
	  "Fetch and verify every artifact of RECIPE, then write DIR/<host>/<path>\n"
	  "(the upstream URL's host and path, ':' in the host written '_'), with\n"
	  "<file>.sha256, <file>.sha512 (sha256sum format), the signature that\n"
	  "verified (<file>.minisig), copies at the checksum and signature URLs\n"
	  "the recipe uses, and DIR/index.json. Serve DIR and point a mirrors:\n"
	  "rule at it (docs/provenance.md).\n",
	  "exit codes: as fetch; 1 also when a cache entry changed since it was verified\n" },
	{ "list", cmd_list, "list [recipes|overrides] [--names] [--json]",
	  "list the recipes and overrides a name finds, shipped and local",
	  "Shipped recipes and overrides (in the data directory: the source tree,\n"
	  "or share/winbuild after make install) are found by name from any\n"
	  "directory: 'winbuild plan RECIPE -O enterprise-mirror' (names from 'winbuild list').\n"
	  "Local ones are the *.yaml files of that kind in this directory and in\n"
	  "./recipes, ./overrides; give those by path.\n", "" },
	{ "cache", cmd_cache, "cache ls|gc [--cache DIR] [--json]",
	  "inspect and prune the download cache",
	  "  ls   list entries with size and the artifacts that refer to them\n"
	  "  gc   remove temp files, quarantined entries and unreferenced entries\n",
	  "" },
	{ "image", cmd_image,
	  "image pull HOST/REPO[:TAG]@sha256:DIGEST --windows VERSION [--allow-foreign-layers]\n"
	  "       [--oci-archive FILE] [--offline] [--cache DIR] [--cacert FILE]\n"
	  "       [--credentials FILE] [--netrc-file FILE] [--json]",
	  "pull one container image by digest into the cache, verified",
	  "Pull the image the digest names from its registry (OCI distribution\n"
	  "API over https; anonymous, a registry's Bearer token, or Basic with\n"
	  "the credentials file's or netrc's entry for its host; docs/recipes.md,\n"
	  "\"Credentials\") into the cache:\n"
	  "a manifest list's windows/amd64 entry for the Windows build of\n"
	  "--windows, its manifest, config and layers, each verified by its\n"
	  "digest and size, the config's platform checked. Nothing is cached\n"
	  "unless all of it verified; what the cache holds is not asked for\n"
	  "(--offline: the cache only). Foreign layers are refused unless\n"
	  "--allow-foreign-layers. --oci-archive FILE also writes the image as\n"
	  "an OCI image-layout tar (deterministic: SOURCE_DATE_EPOCH mtimes;\n"
	  "index.json names it for containerd's importer).\n",
	  "exit codes: 0 pulled, 1 a digest, size or platform did not match, no\n"
	  "entry for the Windows build, a refused foreign layer or redirect,\n"
	  "2 usage or a reference without a digest, 3 network or registry error,\n"
	  "5 I/O error\n" },
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
	  "                       keyless (--identity, --issuer) or with --key\n"
	  "                       (docs/sigstore.md)\n",
	  "exit codes as 'minisign -V': 0 verified, 1 verification failed,\n"
	  "2 could not verify (missing file, unreadable key or signature, usage)\n" },
	{ "help", cmd_help, "help [COMMAND]", "show help for winbuild or one command",
	  "Without COMMAND, list the commands. With COMMAND, show its options.\n", "" },
	{ "version", cmd_version, "version", "print the version", "", "" },
};

static const struct wb_command *find_command(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static const char *closest_command(const char *name)
{
	struct text_suggest sg;

	text_suggest_init(&sg, name);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		text_suggest_add(&sg, commands[i].name);
	return sg.best;
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
	static const struct cmd_optset set = { 0, NULL, 0, "help [COMMAND]" };
	const struct wb_command *c;
	char *hargv[3];
	int ret;

	if ((ret = cmd_parse_options(argc, argv, &set, run)))
		return ret;
	if (!run->positional.nr) {
		list_commands(stdout);
		return WB_OK;
	}
	if (run->positional.nr > 1)
		return cmd_usage("help [COMMAND]");
	c = find_command(run->positional.v[0]);
	if (!c) {
		const char *near = closest_command(run->positional.v[0]);
		cmd_errorf("no such command '%s'%s%s%s", run->positional.v[0],
			   near ? " (did you mean '" : "", near ? near : "",
			   near ? "'?)" : "");
		return WB_EUSAGE;
	}
	/* the command prints its own help, from the option set it parses */
	hargv[0] = (char *)c->name;
	hargv[1] = (char *)"--help";
	hargv[2] = NULL;
	wb_strlist_release(&run->positional);
	run->command = c->name;
	run->entry = c;
	return c->fn(2, hargv, run);
}

static int cmd_version(int argc, char **argv, struct wb_run *run)
{
	static const struct cmd_optset set = { 0, NULL, 0, "version" };
	int ret;

	if ((ret = cmd_parse_options(argc, argv, &set, run)))
		return ret;
	if (run->positional.nr)
		return cmd_usage("version");
	printf("winbuild %s\n", WB_VERSION);
	return WB_OK;
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

	/* issue 41: one redaction where text leaves the process */
	redact_stdio();
	memset(&run, 0, sizeof(run));
	run.argv0 = argv[0];
	run.jobs = 4;
	run.out_dir = "out";
	run.env_set = getenv("WINBUILD_SET");
	run.log.emit = cmd_log_line;
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
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		run.command = "help";
		run.entry = find_command("help");
		ret = cmd_help(argc - 1, argv + 1, &run);
		return ret == CMD_HELP_SHOWN ? WB_OK : ret;
	}
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
	run.entry = c;
	ret = c->fn(argc - 1, argv + 1, &run);
	if (ret == CMD_HELP_SHOWN)
		ret = WB_OK;
	else if (run.json)
		ret = cmd_json_finish(&run, ret);
	wb_strlist_release(&run.positional);
	wb_strlist_release(&run.overrides);
	wb_strlist_release(&run.sets);
	wb_strlist_release(&run.builders);
	free(run.lock_default);
	fflush(stdout);
	if (ferror(stdout)) {
		fprintf(stderr, "winbuild: error writing to standard output\n");
		return WB_EIO;
	}
	return ret;
}
