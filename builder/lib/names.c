#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "names.h"

int names_segment_ok(const char *name, const char **why)
{
	const unsigned char *p = (const unsigned char *)name;

	if (!*p) {
		*why = "empty name";
		return 0;
	}
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		*why = "'.' or '..' component";
		return 0;
	}
	if (strlen(name) > 255) {
		*why = "name longer than 255 bytes";
		return 0;
	}
	for (; *p; p++) {
		if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)) {
			*why = "control character in name";
			return 0;
		}
		if (*p == '/' || *p == '\\') {
			*why = "path separator ('/' or '\\') in name";
			return 0;
		}
	}
	return 1;
}

/*
 * @where the one validator for names that become paths (artifact keys,
 *   component and image names, mirror URL segments) -- mirror URL paths
 */
char *names_url_path(const char *url, const char **why)
{
	const char *p = strstr(url, "://"), *seg;
	char *rel;

	if (!p || !p[3] || p[3] == '/') {
		*why = "URL without a host";
		return NULL;
	}
	p += 3;
	/* never a user:password@ as a directory name (issue 31): the host
	 * is what names the mirror's directory */
	for (const char *at = p; *at && !strchr("/?#", *at); at++)
		if (*at == '@')
			p = at + 1;
	rel = xstrndup(p, strcspn(p, "?#"));
	/* "host:port" -> "host_port": ':' is no name on Windows/SMB and a
	 * remote-path separator for scp and rsync */
	for (seg = rel; *seg && *seg != '/'; seg++)
		if (*seg == ':')
			*(char *)seg = '_';
	for (seg = rel; ; ) {
		size_t n = strcspn(seg, "/");
		char *s = xstrndup(seg, n);
		int ok = names_segment_ok(s, why);

		free(s);
		if (!ok) {
			free(rel);
			return NULL;
		}
		if (!seg[n])
			break;
		seg += n + 1;
	}
	return rel;
}
