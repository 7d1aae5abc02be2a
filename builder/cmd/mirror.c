/*
 * winbuild mirror RECIPE DIR [--sign KEYFILE]: fetch and verify every
 * artifact (the shared fetch driver), then write DIR/<host>/<path> with
 * checksum files, signatures and DIR/index.json (emit/mirror.h). With
 * --sign, every artifact is signed anew with an unencrypted minisign secret
 * key (minisign -G -W), so a site serves its own signed mirror and trusts
 * only its key (policy.require: signature, signatures.keys).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include <jansson.h>

#include "cmd/cmd.h"
#include "emit/mirror.h"
#include "fetch/fetch.h"
#include "lib/buf.h"
#include "lib/fs.h"
#include "recipe/plan.h"

#define MIRROR_USAGE "mirror RECIPE DIR [--sign KEYFILE] [-O FILE]... [--set K=V]... " \
	"[-j N] [--offline] [--locked] [--lock FILE] [--cache DIR] [--cacert FILE] [-q]"

static int load_seckey(const char *path, struct minisign_seckey *sk)
{
	struct buf b = BUF_INIT;
	struct wb_err e = WB_ERR_INIT;
	int ret = 0;

	if (fs_read_file(path, 4096, WB_EUSAGE, &b, &e) < 0 ||
	    minisign_seckey_parse(b.ptr, b.len, sk, &e) < 0) {
		cmd_errorf("--sign %s: %s", path, e.msg);
		ret = e.code ? e.code : WB_EUSAGE;
	}
	if (b.ptr)
		OPENSSL_cleanse(b.ptr, b.len);
	buf_release(&b);
	return ret;
}

static time_t epoch_now(void)
{
	const char *s = getenv("SOURCE_DATE_EPOCH");
	char *end;
	long long v;

	if (s && *s) {
		errno = 0;
		v = strtoll(s, &end, 10);
		if (!errno && !*end && v >= 0)
			return (time_t)v;
	}
	return time(NULL);
}

int cmd_mirror(int argc, char **argv, struct wb_run *run)
{
	const char *sign = NULL;
	const struct cmd_opt own[] = {
		{ 0, "--sign", NULL, "KEYFILE", "sign every artifact anew with this minisign secret\n"
		  "key (unencrypted: minisign -G -W); trust it with\n"
		  "signatures.keys and policy.require: signature", &sign, NULL, NULL },
		{ 0 },
	};
	const struct cmd_optset set = { OPTS_FETCH | OPT_JSON, own, 0, MIRROR_USAGE };
	struct wb_err e = WB_ERR_INIT;
	struct plan plan;
	struct fetch_item *items = NULL;
	struct mirror_artifact *ma = NULL;
	struct minisign_seckey sk;
	struct mirror_opts o;
	struct mirror_stats st;
	int ret;

	if ((ret = cmd_parse_options(argc, argv, &set, run)))
		return ret;
	if (run->positional.nr != 2)
		return cmd_usage("%s", MIRROR_USAGE);
	memset(&sk, 0, sizeof(sk));
	if (sign && (ret = load_seckey(sign, &sk)))
		return ret;
	cmd_json_set(run, "dir", json_string(run->positional.v[1]));
	ret = cmd_fetch_plan(run, 0, &plan, &items, &e);
	cmd_json_fetch(run, &plan, items);
	if (ret < 0) {
		ret = cmd_fetch_failed(run, &plan, items, &e);
		goto out;
	}
	ma = xcalloc(plan.nartifacts + 1, sizeof(*ma));
	for (size_t i = 0; i < plan.nartifacts; i++) {
		const struct verify_evidence *ev = &items[i].ev;

		ma[i].art = items[i].art;
		ma[i].path = items[i].path;
		ma[i].fd = items[i].has_fd ? items[i].fd : -1;
		ma[i].sha256 = items[i].sha256;
		ma[i].ev = ev;
	}
	memset(&o, 0, sizeof(o));
	o.dir = run->positional.v[1];
	o.sign = sign ? &sk : NULL;
	o.epoch = epoch_now();
	if (mirror_write(&plan, ma, plan.nartifacts, &o, &st, &e) < 0) {
		ret = cmd_fail(&e);
		goto out;
	}
	cmd_json_set(run, "index", json_pack("s++", o.dir, "/", "index.json"));
	cmd_json_set(run, "written", json_pack("{s:I,s:I,s:I}", "artifacts",
		     (json_int_t)st.artifacts, "signatures", (json_int_t)st.signatures,
		     "unsigned", (json_int_t)st.unsigned_));
	cmd_json_set(run, "resigned", json_boolean(sign != NULL));
	if (!run->quiet && !run->json) {
		printf("%s: %zu artifacts, %zu signatures%s, index.json\n", o.dir,
		       st.artifacts, st.signatures, sign ? " (re-signed)" : "");
		if (st.unsigned_ && !sign)
			printf("%zu artifacts carry no signature (verified by digest); "
			       "--sign KEYFILE signs every artifact\n", st.unsigned_);
	}
	ret = WB_OK;
out:
	OPENSSL_cleanse(&sk, sizeof(sk));
	free(ma);
	if (items) {
		cmd_fetch_items_free(items, plan.nartifacts);
		plan_release(&plan);
	}
	return ret;
}
