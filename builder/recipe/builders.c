/*
 * Packer builders: packer.builders and --builder, each builder's
 * cloudbase-init provider and base image, the Windows ISO pin the ISO
 * builders need, and the rest of packer: (its version, payload: pull).
 * @where where the Windows ISO digest is required (`windows.iso_sha256` for
 *   ISO builders, `policy.unverified_iso`) -- records it (`iso_missing`)
 *
 * @where which cloudbase-init provider each Packer builder's image gets
 *   (`auto`), and which contradict a builder -- checked once for the plan's
 *   builders, recorded as `plan.builder_providers`
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/hex.h"
#include "lib/platform.h"
#include "lib/redact.h"
#include "recipe/resolve_int.h"

/* The Windows ISO of the ISO builders (lib/platform.c) must
 * be pinned by windows.iso_sha256; "none" or nothing only under an explicit
 * policy.unverified_iso: allow. The plan downloads no ISO, so a missing pin
 * is only recorded (iso_missing): emit and build refuse where the ISO is
 * used (plan_require_iso()), plan, fetch and stage warn. */
int builders_iso(struct resolver *r, const struct rnode *win)
{
	struct plan *p = r->plan;
	const struct rnode *n = rnode_get(win, "iso_sha256");
	int iso_builders = 0;

	for (size_t i = 0; i < p->builders.nr; i++)
		iso_builders |= platform_builder_is_iso(p->builders.v[i]);
	if (n)
		p->windows_iso_origin = n->origin;
	if (n && strcmp(n->scalar, "none")) {
		if (!hex_is(n->scalar, 64, HEX_ANY_CASE))
			return err_at(r, &n->origin,
				      "'windows.iso_sha256' must be 64 hex digits (the ISO's SHA-256) or \"none\", not '%s'",
				      n->scalar);
		p->windows_iso_sha256 = rs_lower(xstrdup(n->scalar));
		return 0;
	}
	if (!iso_builders)
		return 0;
	if (!p->policy.allow_unverified_iso) {
		p->iso_missing = n ? 2 : 1;
		p->iso_missing_origin = n ? n->origin : win->origin;
		return 0;
	}
	p->iso_unverified = 1;
	return 0;
}

/* --builder NAME...: the plan keeps only these of packer.builders (N, or
 * every builder when N is NULL), in the order given.
 * @where which builders are ISO builders; `--builder` narrowing
 *   `packer.builders` -- `--builder` (`OPT_BUILDER`, `plan_inputs.builders`)
 */
static int narrow_builders(struct resolver *r, const struct rnode *n)
{
	struct plan *p = r->plan;
	struct wb_strlist sel = WB_STRLIST_INIT;

	if (!r->in->nbuilders)
		return 0;
	for (size_t i = 0; i < r->in->nbuilders; i++) {
		const char *b = r->in->builders[i];
		int in_plan = wb_strlist_has(&p->builders, b);

		if (!in_plan && !platform_builder(b)) {
			char names[256];

			platform_set_join(PLATFORM_SET_BUILDERS, ", ", names, sizeof(names));
			return wb_error(r->e, WB_EUSAGE, "unknown builder '%s' (%s)", b, names);
		}
		if (!in_plan) {
			struct buf all = BUF_INIT;
			char where[512] = "the default: every builder";
			int ret;

			if (n)
				wb_origin_format(&n->origin, where, sizeof(where));
			for (size_t k = 0; k < p->builders.nr; k++)
				buf_addf(&all, "%s%s", k ? ", " : "", p->builders.v[k]);
			ret = wb_error(r->e, WB_EUSAGE, "--builder '%s' is not one of the recipe's "
				       "packer.builders (%s; %s): --builder narrows that list, "
				       "widen it with --set 'packer.builders=[...]'", b, all.ptr, where);
			buf_release(&all);
			wb_strlist_release(&sel);
			return ret;
		}
		wb_strlist_push_unique(&sel, b);
	}
	wb_strlist_release(&p->builders);
	p->builders = sel;
	return 0;
}

/*
 * packer.builders (default: every builder of the platform table), each
 * builder's cloudbase-init provider (issue 14: each image reads its own
 * platform's metadata), and what the recipe's Windows asks of the
 * builders' base images (issue 26, D14/D15).
 */
/* "B V, ..." for every builder B whose platform table row has an image of
 * EDITION for Windows Server V, into OUT; the table names them, so no
 * message here does (tests/cli/platform.bats) */
static const char *edition_images(const char *edition, char *out, size_t len)
{
	struct buf b = BUF_INIT;

	for (size_t i = 0; i < platform_nbuilders; i++)
		for (size_t j = 0; j < PLATFORM_MAX_VERSIONS; j++) {
			const struct platform_base *base = &platform_builders[i].base[j];

			if (base->version && !strcmp(platform_base_edition(base), edition))
				buf_addf(&b, "%s%s %s", b.len ? ", " : "",
					 platform_builders[i].name, base->version);
		}
	snprintf(out, len, "%s", b.len ? b.ptr : "none");
	buf_release(&b);
	return out;
}

int builders_convert(struct resolver *r, const struct rnode *top)
{
	struct plan *p = r->plan;
	const struct rnode *n = rnode_get(rnode_get(top, "packer"), "builders");
	const struct rnode *pv = rnode_get(rnode_get(top, "cloudbase_init"), "provider");
	const struct rnode *win = rnode_get(top, "windows");
	char names[256], have[256];

	platform_set_join(PLATFORM_SET_BUILDERS, ", ", names, sizeof(names));
	if (n) {
		for (size_t i = 0; i < n->nr; i++)
			if (!platform_builder(n->items[i]->scalar))
				return err_at(r, &n->items[i]->origin,
					      "unknown Packer builder '%s' (%s)",
					      n->items[i]->scalar, names);
		rs_copy_strlist(n, &p->builders);
	} else {
		/* every builder of the table that has an image of the recipe's
		 * Windows to start from (a cloud without Server Core images is
		 * left out of a Server Core recipe that names no builders) */
		for (size_t i = 0; i < platform_nbuilders; i++) {
			const struct platform_builder *b = &platform_builders[i];

			/* no ISO holds the Azure Edition */
			if (b->fw != PLATFORM_FW_NONE &&
			    !strcmp(p->windows_edition, PLATFORM_EDITION_AZURE))
				continue;
			if (!b->base_var || platform_base_image(b, p->windows_version,
								p->windows_edition,
								p->windows_desktop))
				wb_strlist_push(&p->builders, b->name);
		}
	}
	if (narrow_builders(r, n))
		return -1;
	for (size_t i = 0; i < p->builders.nr; i++) {
		const struct platform_builder *b = platform_builder(p->builders.v[i]);
		const char *prov = platform_provider_for(b, p->cloudbase_provider);
		const struct platform_base *row;

		if (!prov)
			return err_at(r, pv ? &pv->origin : &top->origin,
				      "cloudbase_init.provider '%s' contradicts "
				      "Packer builder '%s': its image would ask a metadata "
				      "service that platform does not have (use 'auto', or "
				      "narrow packer.builders)", p->cloudbase_provider,
				      p->builders.v[i]);
		wb_strlist_push(&p->builder_providers, prov);
		/* D15: a cloud builder starts from the cloud's own image, which
		 * the clouds publish as Datacenter (and Azure as Datacenter:
		 * Azure Edition): the table lists which */
		row = platform_base_of(b, p->windows_version, p->windows_edition);
		if (b->fw == PLATFORM_FW_NONE && strcmp(p->windows_edition, "datacenter") &&
		    (!row || (!row->core && !row->desktop)))
			return !strcmp(p->windows_edition, PLATFORM_EDITION_AZURE) ?
				err_at(r, &rnode_get(win, "edition")->origin,
				       "windows.edition '%s': Packer builder '%s' has no Azure "
				       "Edition image of Windows Server %s to start from (the "
				       "platform table has: %s; use edition: datacenter)",
				       p->windows_edition, b->name, p->windows_version,
				       edition_images(p->windows_edition, have, sizeof(have))) :
				err_at(r, rnode_get(win, "edition") ?
				       &rnode_get(win, "edition")->origin : &win->origin,
				       "windows.edition '%s': Packer builder '%s' starts from "
				       "the cloud's Windows Server image, which is published as "
				       "Datacenter only (use edition: datacenter, or narrow "
				       "packer.builders to the ISO builders)",
				       p->windows_edition, b->name);
		/* Datacenter: Azure Edition is not on any Windows Server ISO:
		 * Microsoft ships it as Azure's (and Azure Local's) own images */
		if (b->fw != PLATFORM_FW_NONE && !strcmp(p->windows_edition, PLATFORM_EDITION_AZURE))
			return err_at(r, rnode_get(win, "edition") ?
				      &rnode_get(win, "edition")->origin : &win->origin,
				      "windows.edition '%s': Packer builder '%s' installs from "
				      "the Windows Server ISO, which holds no Azure Edition (use "
				      "edition: datacenter, or narrow packer.builders to a builder "
				      "the platform table has its image for: %s)",
				      p->windows_edition, b->name,
				      edition_images(p->windows_edition, have, sizeof(have)));
		/* D15: never the other installation type instead: a platform
		 * without a Server Core image takes no Server Core recipe */
		if (b->base_var && !(row && (p->windows_desktop ? row->desktop : row->core)))
			return err_at(r, rnode_get(win, "desktop_experience") ?
				      &rnode_get(win, "desktop_experience")->origin : &win->origin,
				      "Packer builder '%s' has no %s image of Windows Server %s "
				      "to start from (use windows.desktop_experience: %s, or "
				      "narrow packer.builders)", b->name,
				      p->windows_desktop ? "Desktop Experience" : "Server Core",
				      p->windows_version, p->windows_desktop ? "false" : "true");
	}
	return 0;
}

/*
 * packer.version (N, or the default): a Packer release, MAJOR.MINOR.PATCH
 * as `packer version` prints it (no "v", no constraint: it says which
 * Packer runs the template, not which it tolerates). Sets the plan's
 * packer_version and packer_plugins.
 */
int builders_packer_version(struct resolver *r, const struct rnode *n)
{
	const char *v = n && n->scalar ? n->scalar : PLAN_PACKER_DEFAULT;
	unsigned long part[3] = { 0 };
	const char *c = v;

	for (int i = 0; i < 3; i++) {
		char *end;

		if (!isdigit((unsigned char)*c))
			break;
		part[i] = strtoul(c, &end, 10);
		c = end;
		if (i < 2 && *c++ != '.') {
			c = v;   /* not three parts: refused below */
			break;
		}
		if (i == 2 && !*c) {
			r->plan->packer_version = xstrdup(v);
			r->plan->packer_plugins = part[0] > PLAN_PACKER_PLUGINS_MAJOR ||
				(part[0] == PLAN_PACKER_PLUGINS_MAJOR &&
				 part[1] >= PLAN_PACKER_PLUGINS_MINOR);
			return 0;
		}
	}
	return err_at(r, &n->origin, "'packer.version' must be a Packer release as "
		      "MAJOR.MINOR.PATCH (e.g. 1.9.5, what `packer version` prints), not '%s'", v);
}

/* packer.payload: pull needs packer.payload_url, a URL the build VM can
 * fetch payload.zip from by itself. */
static int convert_payload_pull(struct resolver *r, const struct rnode *n)
{
	struct plan *p = r->plan;
	const struct rnode *u = rnode_get(n, "payload_url");

	if (!u)
		return err_at(r, &rnode_get(n, "payload")->origin,
			      "'packer.payload: pull' needs 'packer.payload_url' (where the "
			      "build VM fetches payload.zip)");
	if (urls_check(r, u->scalar, &u->origin, "packer.payload_url"))
		return -1;
	if (!strncmp(u->scalar, "file://", 7))
		return err_at(r, &u->origin, "'packer.payload_url' must be an https or "
			      "http URL the build VM can reach, not '%s'", u->scalar);
	if (!p->policy.allow_http && !strncmp(u->scalar, "http://", 7))
		return err_at(r, &u->origin, "'packer.payload_url' is plain http and "
			      "policy.allow_http is false");
	/* The VM pulls it with no winbuild in between, so the URL is
	 * written into 02-payload.ps1 as it is: a secret in it would be
	 * in out/ and in the image's build log, even from --set (issue 31). */
	if (redact_url_needed(u->scalar))
		return err_at(r, &u->origin, "'packer.payload_url' carries a secret (a "
			      "user:password@ or a signed query): it would be written into "
			      "02-payload.ps1; serve payload.zip where the build VM can read it "
			      "without one, or use payload: upload or cd");
	p->payload_pull = 1;
	p->payload_url = xstrdup(u->scalar);
	return 0;
}

/* packer: (N, NULL when absent): its version, then payload: pull. */
int builders_convert_packer(struct resolver *r, const struct rnode *n)
{
	if (builders_packer_version(r, rnode_get(n, "version")))
		return -1;
	if (rnode_get(n, "payload") && !strcmp(rnode_get(n, "payload")->scalar, "pull"))
		return convert_payload_pull(r, n);
	return 0;
}
