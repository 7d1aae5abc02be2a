/*
 * libFuzzer harness: an image recipe (and a component file) as text
 * through the whole resolver, plan_resolve (recipe/resolve.c: the YAML
 * loader, the schema, layers and merging, ${} variables, verify, unpack,
 * install and payload entries, Windows destinations, services, generated
 * files, policy), where fuzz_recipe stops at the loader and the schema.
 *
 * Input: the image recipe; after a NUL byte, if any, the text of
 * components/demo.yaml beside it (else a small fixed component). The
 * components of tests/cli/fixtures/plan/ (containerd, kubernetes, nssm)
 * are there too, so the seeds (tests/fuzz/corpus/fuzz_plan: the plan test
 * recipes) resolve whole. Nothing is downloaded: the resolver only reads.
 */
#include <dirent.h>
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/buf.h"
#include "recipe/plan.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FIXTURES "tests/cli/fixtures/plan/components"

static const char demo_text[] =
	"kind: component\nname: demo\nversion: \"1.0\"\n"
	"vars:\n  base: https://example.org/dl\n"
	"artifacts:\n  demo:\n    url: ${base}/demo-${version}.zip\n"
	"    verify:\n      sha256: 0123456789abcdef0123456789abcdef"
	"0123456789abcdef0123456789abcdef\n"
	"    unpack:\n      strip: 1\n      into: 'C:\\k'\n";

static char dir[] = "/tmp/wb-fuzz-plan-XXXXXX", recipe_path[256], demo_path[256];

static void write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");

	if (!f || (len && fwrite(text, 1, len, f) != len) || fclose(f)) {
		perror(path);
		abort();
	}
}

static void copy_fixtures(const char *to_dir)
{
	DIR *d = opendir(FIXTURES);
	struct dirent *de;

	if (!d) {
		perror(FIXTURES " (run from the top of the source tree)");
		abort();
	}
	while ((de = readdir(d))) {
		char from[512], to[512];
		struct buf b = BUF_INIT;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(from, sizeof(from), "%s/%s", FIXTURES, de->d_name);
		snprintf(to, sizeof(to), "%s/%s", to_dir, de->d_name);
		f = fopen(from, "r");
		if (!f)
			abort();
		for (int c; (c = getc(f)) != EOF;)
			buf_addc(&b, (char)c);
		fclose(f);
		write_file(to, b.ptr, b.len);
		buf_release(&b);
	}
	closedir(d);
}

static int remove_node(const char *path, const struct stat *st, int flag,
		       struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? -1 : 0;
}

/* at exit: the temp dir goes */
static void cleanup(void)
{
	nftw(dir, remove_node, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char comp[64];

	(void)argc;
	(void)argv;
	if (!mkdtemp(dir))
		abort();
	snprintf(comp, sizeof(comp), "%s/components", dir);
	if (mkdir(comp, 0700))
		abort();
	copy_fixtures(comp);
	snprintf(demo_path, sizeof(demo_path), "%s/demo.yaml", comp);
	snprintf(recipe_path, sizeof(recipe_path), "%s/img.yaml", dir);
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *nul = memchr(data, '\0', size);
	size_t rlen = nul ? (size_t)(nul - text) : size;
	struct plan_inputs in;
	struct plan plan;
	struct wb_err e = WB_ERR_INIT;

	write_file(recipe_path, text, rlen);
	if (nul)
		write_file(demo_path, nul + 1, size - rlen - 1);
	else
		write_file(demo_path, demo_text, sizeof(demo_text) - 1);
	memset(&in, 0, sizeof(in));
	in.recipe = recipe_path;
	if (!plan_resolve(&in, &plan, &e))
		plan_release(&plan);
	return 0;
}
