/*
 * Services and generated files a component declares (docs/recipes.md,
 * "services"): names, binaries the component stages, arguments every
 * Windows sink accepts, dependency order.
 *
 * @where where a service is declared, checked and registered (`services:`;
 *   docs/node.md "Services as data") -- `services:` converted and ordered
 *
 * @where files a component declares (`generate:`) and the kubelet start
 *   script (`wrapper`) -- `generate:` converted
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/tmpl.h"
#include "lib/winpath.h"
#include "lib/winreserved.h"
#include "recipe/resolve_int.h"
#include "recipe/schema.h"

/* A Windows path of a service or generated file: on C:, inside the tree
 * (winpath.c's rules), normalised to '\'; *TREE gets the tree path. */
static char *node_winpath(struct resolver *r, const struct rnode *n, const char *what,
			  char **tree)
{
	const char *why = NULL;
	char *t = winpath_to_tree(n->scalar, &why), *w;

	if (!t) {
		err_at(r, &n->origin, "bad Windows path '%s' in '%s': %s (a service "
		       "runs a file of the staged tree)", n->scalar, what, why);
		return NULL;
	}
	w = xstrdup(n->scalar);
	for (char *p = w; *p; p++)
		if (*p == '/')
			*p = '\\';
	w[0] = 'C';
	if (tree)
		*tree = t;
	else
		free(t);
	return w;
}

/* S, from N, lands in an sc.exe binPath, an nssm AppParameters and a
 * PowerShell native argument list: the ps_binpath sink must accept it. */
static int native_arg_ok(struct resolver *r, const struct rnode *n, const char *what,
			 const char *s)
{
	const char *why;
	size_t at;
	struct buf b = BUF_INIT;
	int ret;

	if (tmpl_sink_accepts("ps_binpath", s, &why, &at))
		return 0;
	tmpl_describe(&b, s);
	ret = err_at(r, &n->origin, "'%s': '%s' %s (byte %zu); it would not reach the "
		     "service as one argument (PowerShell 5.1, sc.exe binPath, "
		     "CommandLineToArgvW)", what, b.ptr, why, at);
	buf_release(&b);
	return ret;
}


static int expand_list(struct resolver *r, const struct vars *vs, const struct rnode *l,
		       const char *what, struct wb_strlist *out)
{
	for (size_t i = 0; l && i < l->nr; i++) {
		char *s = vars_expand(r, vs, l->items[i], what);

		if (!s || native_arg_ok(r, l->items[i], what, s)) {
			free(s);
			return -1;
		}
		wb_strlist_push(out, s);
		free(s);
	}
	return 0;
}

int services_convert_generate(struct resolver *r, const struct rnode *cn,
		     const struct plan_component *c, const struct vars *vs)
{
	struct plan *p = r->plan;
	const struct rnode *l = rnode_get(cn, "generate");
	char what[256];

	for (size_t i = 0; l && i < l->nr; i++) {
		const struct rnode *g = l->items[i], *tn = rnode_get(g, "template"),
			*vn = rnode_get(g, "vars");
		struct plan_generate *out;
		const char *t = tn->scalar;

		snprintf(what, sizeof(what), "components.%s.generate[%zu]", c->name, i + 1);
		/* a template beside the component file, never above it */
		if (!*t || t[0] == '/' || strstr(t, "..") || strchr(t, '\\') ||
		    strspn(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			   "0123456789_.-/") != strlen(t))
			return rs_bad_grammar(r, &tn->origin, what, t, "a template path "
					   "relative to the component file ([A-Za-z0-9_.-/], "
					   "no '..')");
		ALLOC_GROW(p->generate, p->ngenerate + 1, p->alloc_generate);
		out = &p->generate[p->ngenerate++];
		memset(out, 0, sizeof(*out));
		out->component = xstrdup(c->name);
		out->template_path = rs_relative_to(c->file, t);
		out->origin = g->origin;
		if (!(out->dest_win = node_winpath(r, rnode_get(g, "to"), what, &out->dest_tree)))
			return -1;
		for (size_t k = 0; vn && k < vn->nr; k++) {
			char *v = vars_expand(r, vs, vn->items[k], what), *kv;

			if (!v)
				return -1;
			kv = xasprintf("%s=%s", vn->items[k]->key, v);
			wb_strlist_push(&out->vars, kv);
			free(kv);
			free(v);
		}
	}
	return 0;
}

int services_convert(struct resolver *r, const struct rnode *cn,
		     const struct plan_component *c, const struct vars *vs)
{
	struct plan *p = r->plan;
	const struct rnode *l = rnode_get(cn, "services");
	char what[256];

	for (size_t i = 0; l && i < l->nr; i++) {
		const struct rnode *sn = l->items[i], *n;
		struct plan_service *s;
		char *tree = NULL;
		const char *name;
		size_t len;

		snprintf(what, sizeof(what), "components.%s.services[%zu]", c->name, i + 1);
		n = rnode_get(sn, "name");
		name = n && n->scalar ? n->scalar : "";
		len = strlen(name);
		if (!len || len > 64 || !isalnum((unsigned char)name[0]) ||
		    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			   "0123456789_.-") != len)
			return rs_bad_grammar(r, n ? &n->origin : &sn->origin, what, name, "a service name "
					   "([A-Za-z0-9][A-Za-z0-9_.-]*, at most 64)");
		if (plan_find_service(p, name)) {
			char where[512];

			wb_origin_format(&plan_find_service(p, name)->origin, where, sizeof(where));
			return err_at(r, &n->origin, "service '%s' is declared twice (also "
				      "by component '%s', %s)", name,
				      plan_find_service(p, name)->component, where);
		}
		ALLOC_GROW(p->services, p->nservices + 1, p->alloc_services);
		s = &p->services[p->nservices++];
		memset(s, 0, sizeof(*s));
		s->name = xstrdup(name);
		s->component = xstrdup(c->name);
		s->origin = sn->origin;
		n = rnode_get(sn, "binary");
		s->binary_origin = n->origin;
		/* binary and log_runner: files the component stages (the guard,
		 * winobj.c, checks them with every other Windows object) */
		if (!(s->binary = node_winpath(r, n, what, NULL)) ||
		    native_arg_ok(r, n, what, s->binary))
			goto fail;
		if ((n = rnode_get(sn, "log_runner")) &&
		    (!(s->log_runner = node_winpath(r, n, what, NULL)) ||
		     native_arg_ok(r, n, what, s->log_runner)))
			goto fail;
		if ((n = rnode_get(sn, "log_file")) &&
		    (!(s->log_file = node_winpath(r, n, what, NULL)) ||
		     native_arg_ok(r, n, what, s->log_file)))
			goto fail;
		if (expand_list(r, vs, rnode_get(sn, "args"), what, &s->args) ||
		    expand_list(r, vs, rnode_get(sn, "log_runner_args"), what, &s->log_runner_args) ||
		    expand_list(r, vs, rnode_get(sn, "sc_args"), what, &s->sc_args))
			goto fail;
		if ((n = rnode_get(sn, "depends_on"))) {
			s->dep_origins = xcalloc(n->nr ? n->nr : 1, sizeof(*s->dep_origins));
			for (size_t k = 0; k < n->nr; k++) {
				wb_strlist_push(&s->depends_on, n->items[k]->scalar);
				s->dep_origins[k] = n->items[k]->origin;
			}
		}
		n = rnode_get(sn, "manager");
		s->manager_origin = n ? n->origin : sn->origin;
		s->manager = xstrdup(!n || !strcmp(n->scalar, "node") ? p->service_manager :
				     n->scalar);
		/*
		 * sc_args make the program answer the service control manager
		 * itself (kubelet's --windows-service). Under nssm, nssm answers
		 * it and the program never sees a stop, shutdown or preshutdown
		 * notice: kubelet's graceful node shutdown, which runs from its
		 * preshutdown handler (kubernetes pkg/kubelet/nodeshutdown/
		 * nodeshutdown_manager_windows.go, "is NOT running as a Windows
		 * service"), cannot run. Allowed, and said plainly (docs/node.md,
		 * "kubelet as the service kubelet").
		 */
		if (s->sc_args.nr && strcmp(s->manager, "sc")) {
			struct buf all = BUF_INIT;

			for (size_t k = 0; k < s->sc_args.nr; k++) {
				const char *a = s->sc_args.v[k];

				buf_addf(&all, strpbrk(a, " \t\"") ? "%s\"%s\"" : "%s%s",
					 k ? " " : "", a);
			}
			rs_warn_at(p, &rnode_get(sn, "sc_args")->origin, "service '%s' runs under "
				"%s, which answers the service control manager itself: its "
				"sc_args (%s) are not passed, and the program's own stop, "
				"shutdown and preshutdown handling does not run (for kubelet: "
				"no graceful node shutdown; node.service_manager: sc keeps it)",
				s->name, s->manager, all.ptr);
			buf_release(&all);
		}
		s->kubeadm_flags = schema_bool(rnode_get(sn, "kubeadm_flags")) == 1;
		n = rnode_get(sn, "wrapper");
		if (s->kubeadm_flags != !!n)
			return err_at(r, n ? &n->origin : &sn->origin, "'%s': %s", what, n ?
				      "'wrapper' is the start script of a service with "
				      "kubeadm_flags: true, and this one has none" :
				      "kubeadm_flags: true needs 'wrapper', the Windows path "
				      "of the start script that reads kubeadm-flags.env");
		if (n && (!(s->wrapper = node_winpath(r, n, what, NULL)) ||
			  native_arg_ok(r, n, what, s->wrapper)))
			goto fail;
		/* under sc.exe something must answer the service manager: the
		 * program (sc_args), never powershell.exe running a wrapper */
		if (s->kubeadm_flags && !strcmp(s->manager, "sc") && !s->log_runner)
			return err_at(r, &s->manager_origin, "'%s': under sc.exe a service with "
				      "kubeadm_flags runs through 'log_runner' (kube-log-runner), "
				      "and none is declared", what);
		if (s->log_runner_args.nr && !s->log_runner)
			return err_at(r, &rnode_get(sn, "log_runner_args")->origin, "'%s': "
				      "'log_runner_args' are flags of 'log_runner', and none "
				      "is declared", what);
		if (s->log_runner && !s->log_file)
			return err_at(r, &rnode_get(sn, "log_runner")->origin, "'%s': "
				      "'log_runner' needs 'log_file'", what);
		continue;
fail:
		free(tree);
		return -1;
	}
	return 0;
}

/*
 * Every enabled component converted: each dependency names a declared
 * service, nssm is enabled where a service needs it, and the services are
 * put in dependency order (a cycle is an error at the edge that closes it).
 */
int services_order(struct resolver *r)
{
	struct plan *p = r->plan;
	struct plan_service *sorted = xcalloc(p->nservices ? p->nservices : 1, sizeof(*sorted));
	unsigned char *state = xcalloc(p->nservices ? p->nservices : 1, 1);
	size_t nsorted = 0;
	int ret = 0;

	for (size_t i = 0; i < p->nservices; i++) {
		const struct plan_service *s = &p->services[i];

		for (size_t k = 0; k < s->depends_on.nr; k++)
			if (!plan_find_service(p, s->depends_on.v[k])) {
				ret = err_at(r, &s->dep_origins[k], "service '%s' depends on "
					     "'%s', which no enabled component declares in "
					     "'services'", s->name, s->depends_on.v[k]);
				goto out;
			}
		if (!strcmp(s->manager, "nssm") && !plan_find_component(p, "nssm")) {
			ret = err_at(r, &s->manager_origin, "service '%s' runs under nssm, and "
				     "component 'nssm' is not enabled (--set "
				     "components.nssm.enabled=true)", s->name);
			goto out;
		}
	}
	/* repeated passes: a service goes once all its dependencies went */
	while (nsorted < p->nservices) {
		size_t before = nsorted;

		for (size_t i = 0; i < p->nservices; i++) {
			const struct plan_service *s = &p->services[i];
			size_t k;

			if (state[i])
				continue;
			for (k = 0; k < s->depends_on.nr; k++)
				if (!state[plan_find_service(p, s->depends_on.v[k]) - p->services])
					break;
			if (k < s->depends_on.nr)
				continue;
			state[i] = 1;
			sorted[nsorted++] = *s;
		}
		if (nsorted == before) {
			for (size_t i = 0; i < p->nservices; i++)
				if (!state[i]) {
					ret = err_at(r, &p->services[i].dep_origins[0], "service '%s' "
						     "is in a dependency cycle", p->services[i].name);
					goto out;
				}
		}
	}
	if (p->nservices)   /* services is NULL then: memcpy(NULL, ...) is UB */
		memcpy(p->services, sorted, p->nservices * sizeof(*sorted));
out:
	free(sorted);
	free(state);
	return ret;
}
