/*
 * Windows path rules. The staged tree is the C: drive; everything that
 * names a place on it goes through here so that a path Windows cannot hold
 * (reserved device names, forbidden characters, trailing dot or space) or a
 * path that leaves the drive is refused in one place.
 */
#ifndef WB_WINPATH_H
#define WB_WINPATH_H

/* The longest Windows path winbuild stages, "C:\\" included, counted in
 * UTF-16 units: MAX_PATH (260) less the terminating NUL. Longer paths are
 * refused, not handled (docs/stage.md). */
#define WINPATH_MAX 259

/*
 * Check one path component as a Windows file name (names_segment_ok of
 * lib/names.h first). Returns 1 if Windows can hold it, 0 otherwise with
 * *why set to a static reason.
 */
int winpath_name_ok(const char *name, const char **why);

/* 1 if NAME is a reserved device name (CON, PRN, AUX, NUL, CONIN$,
 * CONOUT$, COM0-9, LPT0-9, COM¹ COM² COM³ LPT¹ LPT² LPT³, any case),
 * bare or with any extension, trailing spaces or dots. */
int winpath_reserved(const char *name);

/* A tree path ('/' separators) Windows can hold: every component passes
 * winpath_name_ok and "C:\\" + the path is at most WINPATH_MAX UTF-16
 * units. 1, or 0 with *why. */
int winpath_tree_path_ok(const char *tree_path, const char **why);

/*
 * Map a destination on the system drive ("C:\Program Files\containerd",
 * "C:/k", "c:\k\kubelet.exe") to a relative tree path with '/' separators
 * ("Program Files/containerd"); "C:\" maps to "". Returns a new string, or
 * NULL with *why set when the path is not absolute on C:, names another
 * drive, holds '.' or '..' components, or fails winpath_tree_path_ok.
 */
char *winpath_to_tree(const char *winpath, const char **why);

/* Fold a tree path to the form Windows compares names in: every BMP code
 * point upper-cased by the simple 1:1 Unicode mapping (towupper in the
 * C.UTF-8 locale), as NTFS does through its $UpCase table; code points
 * outside the BMP and bytes that are not UTF-8 stay as they are. Returns a
 * new string. */
char *winpath_fold(const char *path);

/* The Windows path of a tree path: C: and a backslash, then PATH with every
 * '/' turned into a backslash ("Program Files/containerd" becomes
 * C:\Program Files\containerd). Returns a new string. */
char *winpath_from_tree(const char *tree_path);

/* 1 if NAME, a valid 8.3 name with a numeric tail ("KUBE-L~1.EXE"), may
 * be the short name NTFS generates for OTHER, a name that is not 8.3
 * itself ("kube-log-runner.exe"), in the same directory: numbered tails
 * (prefix of the basis, ~1..~999999) and hashed tails (two basis
 * characters, four hex digits, ~N). Conservative: it may say yes where
 * NTFS would have picked another tail. */
int winpath_short_alias(const char *name, const char *other);

/*
 * The 8.3 alias keys of NAME (one directory's entry), pushed onto KEYS,
 * and its kind: WINPATH_SHORT_LONG (not 8.3: NTFS generates a short name
 * for it; the keys name every short name it may get), WINPATH_SHORT_TILDE
 * (8.3 with a ~N tail: the keys name the long names it may alias), or
 * WINPATH_SHORT_PLAIN (neither; no keys). A TILDE and a LONG entry of the
 * same directory alias each other exactly when they share a key.
 */
/* 1 (with *WHY) when the tree paths A and B name one place on Windows
 * under different spellings: at the first component where they differ,
 * the two names are equal under winpath_fold or one is an 8.3 alias of
 * the other. Equal paths and paths that part ways are 0. */
int winpath_paths_clash(const char *a, const char *b, const char **why);

enum { WINPATH_SHORT_PLAIN, WINPATH_SHORT_LONG, WINPATH_SHORT_TILDE };
struct wb_strlist;
int winpath_short_keys(const char *name, struct wb_strlist *keys);

#endif
