/*
 * What the commands take from the process environment and the install
 * layout: the one data-directory lookup (templates, shipped recipes and
 * overrides) and the one SOURCE_DATE_EPOCH parser. A leaf of cmd/: it calls
 * no other cmd/ file and prints nothing (errors come back in a wb_err).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "lib/buf.h"
#include "lib/fs.h"

#ifndef WB_SHAREDIR
#define WB_SHAREDIR "/usr/local/share/winbuild"
#endif

/*
 * $WINBUILD_DATA_DIR, else the directory of the running binary when it
 * holds packer/ (a source tree), else ../share/winbuild beside the binary
 * when that does (make install, also under DESTDIR or another PREFIX),
 * else the share directory compiled in.
 * @where where the data directory is found (`$WINBUILD_DATA_DIR`, the source
 *   tree, `../share/winbuild`; `$WINBUILD_TEMPLATES`) -- the one lookup
 */
const char *cmd_data_dir(char *buf, size_t len)
{
	static const char *const rel[] = { "", "/../share/winbuild" };
	const char *env = getenv("WINBUILD_DATA_DIR");
	char exe[PATH_MAX], *slash;
	ssize_t n;

	if (env && *env)
		return env;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return WB_SHAREDIR;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return WB_SHAREDIR;
	*slash = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(rel); i++) {
		char *probe = xasprintf("%s%s/packer/hcl", exe, rel[i]);
		int found = fs_exists(probe) && strlen(exe) + strlen(rel[i]) < len;

		free(probe);
		if (found) {
			snprintf(buf, len, "%s%s", exe, rel[i]);
			return buf;
		}
	}
	return WB_SHAREDIR;
}

/*
 * @where where the data directory is found (`$WINBUILD_DATA_DIR`, the source
 *   tree, `../share/winbuild`; `$WINBUILD_TEMPLATES`)
 */
char *cmd_templates_dir(void)
{
	const char *env = getenv("WINBUILD_TEMPLATES");
	char data[PATH_MAX];

	if (env && *env)
		return xstrdup(env);
	return fs_join(cmd_data_dir(data, sizeof(data)), "recipes/templates");
}

/* 9999-12-31T23:59:59Z: the last second an RFC 3339 date (the SBOM's
 * timestamp) can write. */
#define EPOCH_MAX 253402300799LL

/*
 * @where where `SOURCE_DATE_EPOCH` is read (a value it cannot parse is exit
 *   2) -- the one parser: stage's mtimes and manifest, mirror's trusted
 *   comments
 */
int cmd_source_date_epoch(time_t dflt, time_t *out, struct wb_err *e)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");
	char *end;
	long long v;

	*out = dflt;
	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || end == s || v < 0 || v > EPOCH_MAX)
		return wb_error(e, WB_EUSAGE, "SOURCE_DATE_EPOCH '%s' is not a number of "
				"seconds since 1970 (0 to %lld): set it to one, or unset it",
				s, EPOCH_MAX);
	*out = (time_t)v;
	return 0;
}
