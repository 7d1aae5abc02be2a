/*
 * The one guard for the Windows objects a component declares (winobj.h).
 * Each value is canonicalised once (paths: winpath_to_tree, which refuses
 * '..', '\\?\', other drives, trailing dots and spaces; compared with case
 * and 8.3 names folded by winreserved_under; registry keys: reg_canon()
 * below), then checked against what the component owns and the platform
 * table's allow list.
 *
 * image-builder writes fixed places from its ansible roles
 * (images/capi/ansible/windows/roles/), and cloudbase-init or kubeadm
 * take no component data at all; here components are data anyone may
 * write (docs/hardening.md), so every place they name is checked.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/platform.h"
#include "lib/strlist.h"
#include "lib/winpath.h"
#include "lib/winreserved.h"
#include "recipe/resolve_int.h"
#include "recipe/schema.h"
#include "recipe/winobj.h"

int winobj_same_dir(const char *a, const char *b)
{
	return winreserved_under(a, b) && winreserved_under(b, a);
}

/* Directory DIR is the one the file at tree path FILE lands in. */
static int in_parent_of(const char *dir, const char *file)
{
	const char *slash = strrchr(file, '/');
	char *parent;
	int ret;

	if (!slash)
		return 0;
	parent = xstrndup(file, (size_t)(slash - file));
	ret = winobj_same_dir(dir, parent);
	free(parent);
	return ret;
}

int winobj_staged(const struct plan *p, const char *comp, const char *t)
{
	for (size_t i = 0; i < p->nartifacts; i++) {
		const struct plan_artifact *a = &p->artifacts[i];
		size_t n = strlen(a->dest_tree);

		if (strcmp(a->component, comp))
			continue;
		if (a->action != PLAN_UNPACK ? !strcasecmp(a->dest_tree, t) :
		    !strncasecmp(a->dest_tree, t, n) && t[n] == '/' && t[n + 1])
			return 1;
	}
	for (size_t i = 0; i < p->ngenerate; i++)
		if (!strcmp(p->generate[i].component, comp) &&
		    !strcasecmp(p->generate[i].dest_tree, t))
			return 1;
	return 0;
}

/*
 * Registry key KEY ("HKLM:\\..." as reg_key_ok in components.c accepts it,
 * or below HKLM without the prefix, as the tables here write it) in the one
 * form the guard compares: below HKLM, lower case, each name's
 * trailing dots and spaces dropped, ControlSetNNN as CurrentControlSet (the
 * one Windows boots from is CurrentControlSet's target, Select\Current), the
 * 32-bit view's Wow6432Node dropped (SOFTWARE\Wow6432Node and
 * SOFTWARE\Classes\Wow6432Node are the same keys as seen by 32-bit
 * programs). NULL (with *WHY) for a '.' or '..' name, which PowerShell's
 * provider would resolve to another key than the one written here.
 */
static char *reg_canon(const char *key, const char **why)
{
	struct wb_strlist segs = WB_STRLIST_INIT;
	struct buf b = BUF_INIT;
	const char *s = key;

	if (!strncasecmp(s, "HKLM:", 5))
		s += 5;
	while (*s) {
		size_t n = strcspn(s, "\\");
		char *seg = xstrndup(s, n);
		size_t l = strlen(seg);

		s += n + (s[n] == '\\');
		if (!strcmp(seg, ".") || !strcmp(seg, "..")) {
			free(seg);
			wb_strlist_release(&segs);
			*why = "holds a '.' or '..' name";
			return NULL;
		}
		while (l && (seg[l - 1] == '.' || seg[l - 1] == ' '))
			seg[--l] = '\0';
		for (char *q = seg; *q; q++)
			*q = (char)tolower((unsigned char)*q);
		if (!*seg) {
			free(seg);
			continue;
		}
		if (segs.nr == 1 && !strcmp(segs.v[0], "system") && l == 13 &&
		    !strncmp(seg, "controlset", 10) && strspn(seg + 10, "0123456789") == 3) {
			free(seg);
			seg = xstrdup("currentcontrolset");
		}
		if (!strcmp(seg, "wow6432node") && segs.nr &&
		    (!strcmp(segs.v[segs.nr - 1], "software") ||
		     !strcmp(segs.v[segs.nr - 1], "classes"))) {
			free(seg);
			continue;
		}
		wb_strlist_push(&segs, seg);
		free(seg);
	}
	for (size_t i = 0; i < segs.nr; i++)
		buf_addf(&b, "%s%s", i ? "\\" : "", segs.v[i]);
	wb_strlist_release(&segs);
	return buf_detach(&b, NULL);
}

/* Canonical key K is KEY (canonicalised) or below it. */
static int reg_under(const char *k, const char *key)
{
	const char *why = NULL;
	char *c = reg_canon(key, &why);
	size_t n = c ? strlen(c) : 0;
	int ret = c && !strncmp(k, c, n) && (!k[n] || k[n] == '\\');

	free(c);
	return ret;
}

/* Where Windows keeps what a component most wants to take over: named in
 * the refusal (everything not owned or allowed is refused anyway). */
static const char *const reg_protected[][2] = {
	{ "SYSTEM\\CurrentControlSet\\Services", "the keys of Windows' services" },
	{ "SYSTEM\\CurrentControlSet\\Control\\Lsa", "LSA's configuration" },
	{ "SYSTEM\\CurrentControlSet\\Control\\Session Manager", "the Session Manager (machine environment, PATH)" },
	{ "SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Image File Execution Options",
	  "Image File Execution Options (debuggers run in a program's place)" },
	{ "SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon", "Winlogon's configuration" },
	{ "SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Run", "Run (programs started at logon)" },
	{ "SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\RunOnce", "RunOnce (programs started at logon)" },
	{ "SOFTWARE\\Microsoft\\Windows Defender", "Defender's configuration" },
	{ "SOFTWARE\\Policies", "machine policy" },
	{ "SOFTWARE\\Classes", "COM and file-type registrations" },
};

/* KEY (canonical) is a key component C owns: below SOFTWARE\<its name>, or
 * the key of one of its services. */
static int reg_owned(const struct plan *p, const struct plan_component *c, const char *k)
{
	char *own = xasprintf("SOFTWARE\\%s", c->name);
	int ret = reg_under(k, own);

	free(own);
	for (size_t i = 0; !ret && i < p->nservices; i++) {
		if (strcmp(p->services[i].component, c->name))
			continue;
		own = xasprintf("SYSTEM\\CurrentControlSet\\Services\\%s", p->services[i].name);
		ret = reg_under(k, own);
		free(own);
	}
	return ret;
}

static int check_regkey(struct resolver *r, const struct plan_component *c,
			const struct rnode *n)
{
	const char *why = NULL, *area = NULL;
	char *k = reg_canon(n->scalar, &why);
	int ok;

	if (!k)
		return err_at(r, &n->origin, "registry key '%s' of component '%s' %s",
			      n->scalar, c->name, why);
	ok = reg_owned(r->plan, c, k);
	for (size_t i = 0; !ok && i < platform_nwinallow; i++)
		ok = platform_winallow[i].key && reg_under(k, platform_winallow[i].key);
	for (size_t i = 0; !ok && !area && i < ARRAY_SIZE(reg_protected); i++)
		if (reg_under(k, reg_protected[i][0]))
			area = reg_protected[i][1];
	free(k);
	if (ok)
		return 0;
	return err_at(r, &n->origin, "registry key '%s' of component '%s' %s%s%s: a "
		      "component writes only below HKLM:\\SOFTWARE\\%s, the keys of its own "
		      "services, and the keys the platform table allows (lib/platform.c)",
		      n->scalar, c->name, area ? "is in " : "is not a key it owns",
		      area ? area : "", area ? ", which belongs to Windows" : "", c->name);
}

/* take_ownership (N, of the entry MAP): only the key the allow list names
 * for an allowed key MAP's key is at or below. */
static int check_regowner(struct resolver *r, const struct plan_component *c,
			  const struct rnode *n, const struct rnode *map)
{
	const struct rnode *kn = rnode_get(map, "key");
	const char *why = NULL;
	char *k = kn ? reg_canon(kn->scalar, &why) : NULL, *o = reg_canon(n->scalar, &why);
	int ok = 0;

	for (size_t i = 0; k && o && !ok && i < platform_nwinallow; i++) {
		const struct platform_winallow *a = &platform_winallow[i];
		char *own;

		if (!a->key || !a->take_ownership || !reg_under(k, a->key))
			continue;
		own = reg_canon(a->take_ownership, &why);
		ok = own && !strcmp(own, o);
		free(own);
	}
	free(k);
	free(o);
	if (ok)
		return 0;
	return err_at(r, &n->origin, "take_ownership '%s' of component '%s' is not a key "
		      "whose ownership the platform table allows taking for this key "
		      "(lib/platform.c: CCG's COMClasses for gMSA's plugin)", n->scalar, c->name);
}

/* A tree path of N, or NULL with the error given. */
static char *tree_of(struct resolver *r, const struct rnode *n, const char *what)
{
	const char *why = NULL;
	char *t = winpath_to_tree(n->scalar, &why);

	if (!t)
		err_at(r, &n->origin, "bad Windows path '%s' in '%s': %s", n->scalar, what, why);
	return t;
}

static int system_place(struct resolver *r, const struct plan_component *c,
			const struct rnode *n, const char *what, const char *sys)
{
	return err_at(r, &n->origin, "'%s' entry '%s' of component '%s' is a system "
		      "location (%s%s): a component %s", what, n->scalar, c->name,
		      *sys == 'C' ? "" : "C:\\", sys, !strcmp(what, "path") ||
		      !strcmp(what, "defender_exclusions") ? "adds only directories it owns" :
		      "creates and re-ACLs only directories of its own");
}

/*
 * What a component adds to the machine PATH or to Defender's exclusions
 * must be a directory it owns (docs/recipes.md, "path"): one of its own
 * `directories`, at or below where one of its artifacts unpacks, or the
 * directory one of its files is installed or generated into; and never a
 * system location (lib/winreserved.c: C:\, Windows, Users, ...).
 */
static int check_dir_add(struct resolver *r, const struct plan_component *c,
			 const struct rnode *n, const char *what)
{
	const struct plan *p = r->plan;
	const char *why = NULL, *sys;
	char *t = tree_of(r, n, what);
	int owned = 0;

	if (!t)
		return -1;
	if ((sys = winreserved_location(t))) {
		free(t);
		return system_place(r, c, n, what, sys);
	}
	for (size_t k = 0; !owned && k < c->directories.nr; k++) {
		char *d = winpath_to_tree(c->directories.v[k], &why);

		owned = d && winobj_same_dir(t, d);
		free(d);
	}
	for (size_t k = 0; !owned && k < p->nartifacts; k++) {
		const struct plan_artifact *a = &p->artifacts[k];

		if (strcmp(a->component, c->name))
			continue;
		if (a->action == PLAN_UNPACK)
			owned = winreserved_under(t, a->dest_tree);
		else
			owned = in_parent_of(t, a->dest_tree);
	}
	for (size_t k = 0; !owned && k < p->ngenerate; k++) {
		const struct plan_generate *g = &p->generate[k];

		owned = !strcmp(g->component, c->name) && in_parent_of(t, g->dest_tree);
	}
	free(t);
	if (!owned)
		return err_at(r, &n->origin, "'%s' entry '%s' is not a directory component "
			      "'%s' owns (one of its 'directories', or where one of its "
			      "artifacts unpacks or one of its files is installed or "
			      "generated)", what, n->scalar, c->name);
	return 0;
}

/* Tree path T is a file the allow list names. */
static int allowed_file(const char *t)
{
	for (size_t i = 0; i < platform_nwinallow; i++)
		if (platform_winallow[i].file && winreserved_under(t, platform_winallow[i].file) &&
		    winreserved_under(platform_winallow[i].file, t))
			return 1;
	return 0;
}

/* Where a file lands (N, in MAP): not a system location, unless the allow
 * list names the file; an unpack there only with every `include` a plain
 * name the allow list names in that folder. */
static int check_dest(struct resolver *r, const struct plan_component *c,
		      const struct rnode *n, const struct rnode *map, const char *what)
{
	const struct rnode *inc = rnode_get(map, "include");
	const char *sys;
	char *t = tree_of(r, n, what);
	int ok = 1;

	if (!t)
		return -1;
	if ((sys = winreserved_location(t))) {
		if (!strcmp(what, "unpack.into")) {
			ok = inc && inc->nr;
			for (size_t i = 0; ok && i < inc->nr; i++) {
				const char *nm = inc->items[i]->scalar;
				char *f;

				if (strpbrk(nm, "*?[]/\\")) {
					ok = 0;
					break;
				}
				f = xasprintf("%s/%s", t, nm);
				ok = allowed_file(f);
				free(f);
			}
		} else {
			ok = allowed_file(t);
		}
	}
	free(t);
	if (ok)
		return 0;
	return err_at(r, &n->origin, "'%s' '%s' of component '%s' is in a system location "
		      "(%s%s): a component stages files there only as the platform table "
		      "allows (lib/platform.c; an unpack with `include` naming each file)",
		      what, n->scalar, c->name, *sys == 'C' ? "" : "C:\\", sys);
}

/* The template of a generate entry (N, a name the grammar of
 * services_convert_generate accepted) resolves inside the component's directory:
 * a link out of it would render a build-host file into the image. */
static int check_template(struct resolver *r, const struct plan_component *c,
			  const struct rnode *n)
{
	char *dir = fs_dirname(c->file), *path = fs_join(dir, n->scalar);
	int in = fs_within(dir, path);

	free(dir);
	free(path);
	if (in != 0)
		return 0;   /* inside, or missing: stage says which file is missing */
	return err_at(r, &n->origin, "template '%s' of component '%s' resolves outside "
		      "the component's directory (a symbolic link): templates are files "
		      "beside the component file", n->scalar, c->name);
}

static int check(struct resolver *r, const struct plan_component *c, int kind,
		 const char *key, const struct rnode *n, const struct rnode *map)
{
	switch (kind) {
	case WINOBJ_REGKEY:
		return check_regkey(r, c, n);
	case WINOBJ_REGOWNER:
		return check_regowner(r, c, n, map);
	case WINOBJ_DIR_ADD:
		return check_dir_add(r, c, n, key);
	case WINOBJ_DIR_NEW: {
		const char *sys;
		char *t = tree_of(r, n, key);
		int ret = 0;

		if (!t)
			return -1;
		if ((sys = winreserved_location(t)))
			ret = system_place(r, c, n, key, sys);
		free(t);
		return ret;
	}
	case WINOBJ_DEST:
		return check_dest(r, c, n, map, key);
	case WINOBJ_STAGED: {
		char *t = tree_of(r, n, key);
		int ret = 0;

		if (!t)
			return -1;
		if (!winobj_staged(r->plan, c->name, t))
			ret = err_at(r, &n->origin, "%s '%s' is not a file component '%s' "
				     "stages (no artifact of it installs or unpacks it, no "
				     "generate entry writes it)", key, n->scalar, c->name);
		free(t);
		return ret;
	}
	case WINOBJ_SERVICE:
		/* the services step creates, reconfigures or deletes (nssm) a
		 * service by this name: never one of Windows' own */
		if (winreserved_service(n->scalar))
			return err_at(r, &n->origin, "service name '%s' is a service of "
				      "Windows itself (lib/winreserved.c lists them); the "
				      "services step would repoint or replace it: give the "
				      "component's service a name of its own", n->scalar);
		return 0;
	case WINOBJ_PORT:
		if (winreserved_port(atoi(n->scalar)))
			return err_at(r, &n->origin, "firewall port %s of component '%s' is "
				      "one of Windows' own remote management and file sharing "
				      "ports (lib/winreserved.c): a component opens only its "
				      "own service's ports", n->scalar, c->name);
		return 0;
	case WINOBJ_TEMPLATE:
		return check_template(r, c, n);
	}
	return 0;
}

/* Every S_WIN value of MAP (checked against TABLE); PREFIX names the map's
 * place for messages ("unpack."). */
static int walk(struct resolver *r, const struct plan_component *c,
		const struct rnode *map, const struct schema_key *table, const char *prefix)
{
	for (const struct schema_key *k = table; k->name; k++) {
		const struct rnode *n = rnode_get(map, k->name);
		int kind = S_WIN_KIND(k->flags);
		char what[128];

		if (!n)
			continue;
		snprintf(what, sizeof(what), "%s%s", prefix, k->name);
		if ((k->type == S_MAP || k->type == S_MAPOF || k->type == S_LISTOF) && k->sub) {
			if (k->type == S_MAP) {
				char sub[160];

				snprintf(sub, sizeof(sub), "%s.", what);
				if (walk(r, c, n, k->sub, sub))
					return -1;
				continue;
			}
			for (size_t i = 0; i < n->nr; i++)
				if (walk(r, c, n->items[i], k->sub, ""))
					return -1;
			continue;
		}
		if (!kind)
			continue;
		if (n->type == RNODE_SCALAR) {
			if (check(r, c, kind, what, n, map))
				return -1;
			continue;
		}
		for (size_t i = 0; i < n->nr; i++)
			if (check(r, c, kind, what, n->items[i], map))
				return -1;
	}
	return 0;
}

int winobj_component(struct resolver *r, const struct rnode *cn,
		     const struct plan_component *c)
{
	return walk(r, c, cn, schema_component, "");
}
