/*
 * The one validator for names that become paths. Artifact keys, component
 * names, the image name, and every segment of a URL that `winbuild mirror`
 * turns into directories go through here before anything joins them into a
 * path: under the cache, the scratch area (prep/<artifact>/), the staged
 * tree, OUT/<name>/ or a mirror. recipe/urls.c (urls_name_check) calls it
 * where the keys are read, so a bad name is refused at plan time with file:line:col.
 */
#ifndef WB_NAMES_H
#define WB_NAMES_H

#include "winpath.h"

/*
 * NAME may be one path component on the build host: not empty, not "." or
 * "..", no '/' or '\\', no control character (C0, DEL, C1 U+0080-U+009F),
 * at most 255 bytes. Returns 1, or 0 with *why set to a static reason.
 */
int names_segment_ok(const char *name, const char **why);

/*
 * NAME is a name winbuild may build a path from: names_segment_ok, and a
 * name Windows can hold (reserved device names, forbidden characters,
 * trailing dot or space), since names reach the Windows side too (the
 * SBOM, generated files, the payload). Returns 1, or 0 with *why.
 *
 * That is winpath_name_ok (lib/winpath.h), which runs names_segment_ok
 * once and then Windows' own rules; this is its name where a recipe name
 * is checked. The calls go one way: winpath.c uses names.c, never back.
 * @where the one validator for names that become paths (artifact keys,
 *   component and image names, mirror URL segments) -- `winpath_name_ok()`
 *   under the name the recipe code asks for
 */
static inline int names_check(const char *name, const char **why)
{
	return winpath_name_ok(name, why);
}

/*
 * The mirror layout of URL: "<host>/<path>" (query and fragment dropped,
 * every ':' of the host part written '_', so "host:port" is "host_port"),
 * every segment checked with names_segment_ok, no empty segment (so no
 * "//" and no trailing '/'). Returns a new string, or NULL with *why.
 */
char *names_url_path(const char *url, const char **why);

#endif
