/*
 * Windows path rules. The staged tree is the C: drive; everything that
 * names a place on it goes through here so that a path Windows cannot hold
 * (reserved device names, forbidden characters, trailing dot or space) or a
 * path that leaves the drive is refused in one place.
 */
#ifndef WB_WINPATH_H
#define WB_WINPATH_H

/*
 * Check one path component as a Windows file name. Returns 1 if Windows
 * can hold it, 0 otherwise with *why set to a static reason.
 */
int winpath_name_ok(const char *name, const char **why);

/*
 * Map a destination on the system drive ("C:\Program Files\containerd",
 * "C:/k", "c:\k\kubelet.exe") to a relative tree path with '/' separators
 * ("Program Files/containerd"); "C:\" maps to "". Returns a new string, or
 * NULL with *why set when the path is not absolute on C:, names another
 * drive, holds '.' or '..' components, or a component fails
 * winpath_name_ok.
 */
char *winpath_to_tree(const char *winpath, const char **why);

/* Fold a tree path to the form Windows compares names in (ASCII lowercase).
 * Returns a new string. */
char *winpath_fold(const char *path);

/* The Windows path of a tree path: C: and a backslash, then PATH with every
 * '/' turned into a backslash ("Program Files/containerd" becomes
 * C:\Program Files\containerd). Returns a new string. */
char *winpath_from_tree(const char *tree_path);

#endif
