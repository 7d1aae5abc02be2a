/*
 * The one guard for the Windows objects a component declares (issue 41
 * item 1; docs/recipes.md, "What a component may touch on Windows").
 * Every key of the component schema whose values become a Windows object
 * is marked S_WIN(kind) in recipe/schema.c; winobj_component() walks the
 * schema and checks each such value by its kind. A component may touch
 * what it owns (its own directories, the files it stages, its services,
 * its keys under its own names) and the few system places the platform
 * table's allow list names (platform_winallow[], lib/platform.c); the rest
 * of Windows is refused at plan time, with the value's file:line:col.
 */
#ifndef WB_WINOBJ_H
#define WB_WINOBJ_H

enum winobj_kind {
	WINOBJ_NONE,
	WINOBJ_REGKEY,      /* registry[].key: HKLM key the services step writes */
	WINOBJ_REGOWNER,    /* registry[].take_ownership: a key whose owner is taken */
	WINOBJ_DIR_ADD,     /* path, defender_exclusions: a directory it owns */
	WINOBJ_DIR_NEW,     /* directories, admin_directories, cni: a directory it
			       creates or re-ACLs, never a system location */
	WINOBJ_DEST,        /* where a file lands (install, unpack, payload,
			       generate, a service's log file and wrapper) */
	WINOBJ_STAGED,      /* a file the component stages itself (event
			       manifests, a service's binary and log runner) */
	WINOBJ_SERVICE,     /* services[].name: never one of Windows' own */
	WINOBJ_PORT,        /* firewall[].port: never one of Windows' management ports */
	WINOBJ_TEMPLATE,    /* generate[].template: a file in the component's directory */
};

struct resolver;
struct rnode;
struct plan_component;

/* Check every S_WIN value of component CN (converted into C, whose
 * artifacts, generated files and services the plan holds already).
 * 0, or -1 with the first refusal in the resolver's error.
 * @where the one guard for a component's Windows objects (every key marked
 *   `S_WIN(kind)`) -- after a component is converted
 *   (`tests/cli/redteam_winnames.bats`)
 */
int winobj_component(struct resolver *r, const struct rnode *cn,
		     const struct plan_component *c);

/* Tree paths A and B are one directory on Windows (case, 8.3 names and
 * trailing dots and spaces folded: lib/winreserved.c). */
int winobj_same_dir(const char *a, const char *b);

/* 1 if tree path T is a file component COMP stages: an artifact installs
 * it or unpacks into a directory above it, or a generate entry writes it. */
struct plan;
int winobj_staged(const struct plan *p, const char *comp, const char *t);

#endif
