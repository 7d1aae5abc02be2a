/*
 * libFuzzer harness: the override layers given as text — $WINBUILD_SET and
 * --set pairs — resolved over a small fixed recipe (written to a temp dir
 * once). Input: the first line is WINBUILD_SET, every further line one
 * --set pair (at most 16).
 */
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

static char recipe_path[4096];

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f)) {
		perror(path);
		abort();
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char dir[] = "/tmp/wb-fuzz-set-XXXXXX", path[4200];

	(void)argc;
	(void)argv;
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/components", dir);
	if (mkdir(path, 0700))
		abort();
	snprintf(path, sizeof(path), "%s/components/demo.yaml", dir);
	write_file(path,
		   "kind: component\nname: demo\nversion: \"1.0\"\n"
		   "vars:\n  base: https://example.org/dl\n"
		   "artifacts:\n  demo:\n    url: ${base}/demo-${version}.zip\n"
		   "    verify:\n      sha256: 0123456789abcdef0123456789abcdef"
		   "0123456789abcdef0123456789abcdef\n"
		   "    unpack:\n      strip: 1\n      into: 'C:\\k'\n");
	snprintf(recipe_path, sizeof(recipe_path), "%s/img.yaml", dir);
	write_file(recipe_path,
		   "kind: image\nname: fuzz\nwindows:\n  version: \"2022\"\n"
		   "vars:\n  v: \"1.0\"\ncomponents:\n  demo:\n    version: ${v}\n");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct plan_inputs in;
	struct plan plan;
	struct wb_err e = WB_ERR_INIT;
	const char *sets[16];
	char *text, *line;
	size_t nsets = 0;

	if (memchr(data, '\0', size))
		return 0;   /* the command line and the environment hold no NUL */
	text = xstrndup((const char *)data, size);
	memset(&in, 0, sizeof(in));
	in.recipe = recipe_path;
	/* strtok_r would merge empty lines: split by hand */
	line = text;
	{
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		in.env_set = line;
		line = nl ? nl + 1 : NULL;
	}
	while (line && nsets < ARRAY_SIZE(sets)) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		sets[nsets++] = line;
		line = nl ? nl + 1 : NULL;
	}
	in.sets = sets;
	in.nsets = nsets;
	if (!plan_resolve(&in, &plan, &e))
		plan_release(&plan);
	free(text);
	return 0;
}
