#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "winpath.h"

static const char *const reserved[] = {
	"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$",
	"COM0", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8", "COM9",
	"LPT0", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
};

int winpath_name_ok(const char *name, const char **why)
{
	size_t len = strlen(name), base;
	const unsigned char *p;
	const char *dot;

	if (!len) {
		*why = "empty name";
		return 0;
	}
	if (len > 255) {
		*why = "name longer than 255 characters";
		return 0;
	}
	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		*why = "'.' or '..' component";
		return 0;
	}
	for (p = (const unsigned char *)name; *p; p++) {
		if (*p < 0x20) {
			*why = "control character in name";
			return 0;
		}
		if (strchr("<>:\"/\\|?*", *p)) {
			*why = "character Windows forbids in names (< > : \" / \\ | ? *)";
			return 0;
		}
	}
	if (name[len - 1] == '.' || name[len - 1] == ' ') {
		*why = "name ends with a dot or a space";
		return 0;
	}
	/* Reserved device names, with or without an extension ("nul.txt"). */
	dot = strchr(name, '.');
	base = dot ? (size_t)(dot - name) : len;
	while (base && name[base - 1] == ' ')
		base--;
	for (size_t i = 0; i < ARRAY_SIZE(reserved); i++) {
		if (strlen(reserved[i]) == base &&
		    !strncasecmp(name, reserved[i], base)) {
			*why = "reserved device name (CON, PRN, AUX, NUL, COM1-9, LPT1-9)";
			return 0;
		}
	}
	return 1;
}

char *winpath_to_tree(const char *winpath, const char **why)
{
	struct buf out = BUF_INIT;
	const char *p = winpath;

	if (!isalpha((unsigned char)p[0]) || p[1] != ':') {
		*why = "not an absolute Windows path (expected C:\\...)";
		return NULL;
	}
	if (toupper((unsigned char)p[0]) != 'C') {
		*why = "only the system drive C: can be staged";
		return NULL;
	}
	p += 2;
	if (*p != '\\' && *p != '/') {
		*why = "drive-relative path (expected C:\\...)";
		return NULL;
	}
	while (*p) {
		const char *start;
		char *name;

		while (*p == '\\' || *p == '/')
			p++;
		if (!*p)
			break;
		start = p;
		while (*p && *p != '\\' && *p != '/')
			p++;
		name = xstrndup(start, (size_t)(p - start));
		if (!winpath_name_ok(name, why)) {
			free(name);
			buf_release(&out);
			return NULL;
		}
		if (out.len)
			buf_addc(&out, '/');
		buf_adds(&out, name);
		free(name);
	}
	return buf_detach(&out, NULL);
}

char *winpath_fold(const char *path)
{
	char *s = xstrdup(path);

	for (char *p = s; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return s;
}

char *winpath_from_tree(const char *tree_path)
{
	char *w = xasprintf("C:\\%s", tree_path);

	for (char *p = w; *p; p++)
		if (*p == '/')
			*p = '\\';
	return w;
}
