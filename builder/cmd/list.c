/* winbuild list: the recipes and overrides a name finds, shipped and local.
 *
 * @where `winbuild list`; a shipped recipe or override found by name
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/strlist.h"

#define LIST_USAGE "list [recipes|overrides] [--names] [--json]"

/* The value of the first top-level "kind:" line of PATH, in KIND (LEN). */
static void file_kind(const char *path, char *kind, size_t len)
{
	char line[256];
	FILE *f = fopen(path, "r");

	*kind = '\0';
	for (int n = 0; f && n < 200 && fgets(line, sizeof(line), f); n++) {
		if (strncmp(line, "kind:", 5))
			continue;
		snprintf(kind, len, "%s", line + 5 + strspn(line + 5, " \t\"'"));
		kind[strcspn(kind, " \t\"'\r\n#")] = '\0';
		break;
	}
	if (f)
		fclose(f);
}

/* Every DIR/NAME.yaml whose kind is KIND, as NAME (shipped) or as
 * DIR/NAME.yaml (local), sorted. */
static void scan(const char *dir, const char *kind, int as_path, struct wb_strlist *out)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char k[32], *path;

		if (n < 6 || strcmp(de->d_name + n - 5, ".yaml") || de->d_name[0] == '.')
			continue;
		path = fs_join(dir, de->d_name);
		file_kind(path, k, sizeof(k));
		if (!strcmp(k, kind)) {
			if (as_path)
				wb_strlist_push(out, !strcmp(dir, ".") ? de->d_name : path);
			else {
				char *name = xstrndup(de->d_name, n - 5);
				wb_strlist_push(out, name);
				free(name);
			}
		}
		free(path);
	}
	if (d)
		closedir(d);
	wb_strlist_sort(out);
}

static json_t *strlist_json(const struct wb_strlist *l)
{
	json_t *a = json_array();

	for (size_t i = 0; i < l->nr; i++)
		json_array_append_new(a, json_string(l->v[i]));
	return a;
}

int cmd_list(int argc, char **argv, struct wb_run *run)
{
	int names = 0;
	const struct cmd_opt own[] = {
		{ 0, "--names", NULL, NULL, "only the names, one a line (for scripts and\n"
		  "shell completion)", NULL, NULL, &names },
		{ 0 },
	};
	const struct cmd_optset set = { OPT_JSON, own, 0, LIST_USAGE };
	static const struct { const char *what, *kind, *dir; } kinds[] = {
		{ "recipes", "image", "recipes" },
		{ "overrides", "override", "overrides" },
	};
	char data[PATH_MAX];
	const char *dir;
	const char *only = NULL;
	int ret;

	if ((ret = cmd_parse_options(argc, argv, &set, run)))
		return ret;
	if (run->positional.nr > 1 || (run->positional.nr == 1 &&
	    strcmp(run->positional.v[0], "recipes") && strcmp(run->positional.v[0], "overrides")))
		return cmd_usage("%s", LIST_USAGE);
	if (run->positional.nr)
		only = run->positional.v[0];
	dir = cmd_data_dir(data, sizeof(data));
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		struct wb_strlist shipped = WB_STRLIST_INIT, local = WB_STRLIST_INIT;
		char *sdir = fs_join(dir, kinds[i].dir);
		char *real_s = realpath(sdir, NULL), *real_l = realpath(kinds[i].dir, NULL);

		if (only && strcmp(only, kinds[i].what)) {
			free(sdir);
			free(real_s);
			free(real_l);
			continue;
		}
		scan(sdir, kinds[i].kind, 0, &shipped);
		/* local: this directory's files of that kind, and ./recipes or
		 * ./overrides when they are not the shipped ones */
		scan(".", kinds[i].kind, 1, &local);
		if (!real_s || !real_l || strcmp(real_s, real_l))
			scan(kinds[i].dir, kinds[i].kind, 1, &local);
		if (run->json) {
			json_t *o = json_object();
			json_object_set_new(o, "dir", json_string(sdir));
			json_object_set_new(o, "shipped", strlist_json(&shipped));
			json_object_set_new(o, "local", strlist_json(&local));
			cmd_json_set(run, kinds[i].what, o);
		} else if (names) {
			for (size_t k = 0; k < shipped.nr; k++)
				printf("%s\n", shipped.v[k]);
			for (size_t k = 0; k < local.nr; k++)
				printf("%s\n", local.v[k]);
		} else {
			printf("%s (shipped, by name: %s):\n", kinds[i].what, sdir);
			for (size_t k = 0; k < shipped.nr; k++)
				printf("  %s\n", shipped.v[k]);
			if (!shipped.nr)
				printf("  (none)\n");
			if (local.nr) {
				printf("%s (local):\n", kinds[i].what);
				for (size_t k = 0; k < local.nr; k++)
					printf("  %s\n", local.v[k]);
			}
		}
		wb_strlist_release(&shipped);
		wb_strlist_release(&local);
		free(sdir);
		free(real_s);
		free(real_l);
	}
	return 0;
}
