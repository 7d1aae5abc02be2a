/* stage/render: the template engine, and the shipped templates render. */
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/fs.h"
#include "lib/strlist.h"
#include "lib/tmpl.h"
#include "stage/render.h"

static struct tmpl_vars vars;

static int setup(void **state)
{
	(void)state;
	memset(&vars, 0, sizeof(vars));
	tmpl_set(&vars, "name", "world");
	tmpl_set(&vars, "yes", "1");
	tmpl_set(&vars, "no", "");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tmpl_vars_release(&vars);
	return 0;
}

static void expect(const char *tmpl, const char *want)
{
	struct buf out = BUF_INIT;
	struct wb_err e = WB_ERR_INIT;

	assert_int_equal(render_string("t", tmpl, strlen(tmpl), &vars, &out, &e), 0);
	assert_string_equal(out.ptr, want);
	buf_release(&out);
}

static void expect_error(const char *tmpl, const char *msg_part)
{
	struct buf out = BUF_INIT;
	struct wb_err e = WB_ERR_INIT;

	assert_int_equal(render_string("t", tmpl, strlen(tmpl), &vars, &out, &e), -1);
	assert_int_equal(e.code, WB_EUSAGE);
	if (!strstr(e.msg, msg_part))
		fail_msg("message '%s' lacks '%s'", e.msg, msg_part);
	buf_release(&out);
}

static void test_plain_text_is_copied(void **state)
{
	(void)state;
	expect("", "");
	expect("no tags at all\n", "no tags at all\n");
	expect("a { b } {c} }} x", "a { b } {c} }} x");
}

static void test_variables(void **state)
{
	(void)state;
	expect("hello {{comment:name}}!", "hello world!");
	expect("{{ comment:name }}{{toml:name}}", "world\"world\"");
	expect("[{{comment:no}}]", "[]");
}

static void test_if_else(void **state)
{
	(void)state;
	expect("{{#if yes}}A{{/if}}", "A");
	expect("{{#if no}}A{{/if}}", "");
	expect("{{#if no}}A{{else}}B{{/if}}", "B");
	expect("{{#if yes}}A{{else}}B{{/if}}", "A");
	expect("{{#if yes}}1{{#if no}}2{{else}}3{{/if}}4{{/if}}", "134");
}

static void test_standalone_tags_take_their_line(void **state)
{
	(void)state;
	expect("a\n{{#if yes}}\nb\n{{/if}}\nc\n", "a\nb\nc\n");
	expect("a\n  {{#if no}}\nb\n  {{else}}\nd\n{{/if}}  \nc\n", "a\nd\nc\n");
	expect("{{! a comment\n over lines }}\nx\n", "x\n");
	/* a variable alone on its line keeps the line */
	expect("{{comment:name}}\n", "world\n");
	/* inline tags do not eat the newline */
	expect("a {{#if yes}}b{{/if}}\n", "a b\n");
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("x\n{{ps:nope}}", "line 2: unknown placeholder 'nope'");
	expect_error("{{#if nope}}x{{/if}}", "unknown placeholder 'nope'");
	/* checked in the branch not taken too */
	expect_error("{{#if no}}{{ps:nope}}{{/if}}", "unknown placeholder 'nope'");
	expect_error("{{name", "unterminated tag");
	expect_error("{{#if yes}}x", "not closed");
	expect_error("x{{/if}}", "without {{#if}}");
	expect_error("{{else}}", "outside {{#if}}");
	expect_error("{{#if yes}}a{{else}}b{{else}}c{{/if}}", "second {{else}}");
	expect_error("{{ps:Name}}", "bad tag");
	expect_error("{{ps:a b}}", "bad tag");
	expect_error("{{ps:}}", "bad tag");
	expect_error("{{}}", "without a sink type");
	/* no untyped splice, no unknown sink */
	expect_error("{{name}}", "without a sink type");
	expect_error("{{raw:name}}", "unknown sink type 'raw'");
}

static void test_later_set_replaces(void **state)
{
	(void)state;
	tmpl_set(&vars, "name", "again");
	expect("{{comment:name}}", "again");
	tmpl_set(&vars, "name", "world");
}

static void test_deep_nesting_is_refused(void **state)
{
	struct buf t = BUF_INIT;

	(void)state;
	for (int i = 0; i < 20; i++)
		buf_adds(&t, "{{#if yes}}");
	for (int i = 0; i < 20; i++)
		buf_adds(&t, "{{/if}}");
	expect_error(t.ptr, "nested too deeply");
	buf_release(&t);
}

/* Every shipped template renders with the variables stage sets. */
static void test_shipped_templates_render(void **state)
{
	static const char *const files[] = {
		"containerd/config.v2.toml", "containerd/config.v3.toml",
		"cloudbase-init/cloudbase-init.conf",
		"cloudbase-init/cloudbase-init-unattend.conf",
		"cni/nat.conflist",
		"kubelet/StartKubelet.ps1",
	};
	static const char *const names[] = {
		"image", "windows_version", "pause_image", "cni", "cni_bin_dir",
		"cni_conf_dir", "service_manager", "provider", "containerd_version",
		"provider_azure", "provider_aws", "provider_vsphere",
		"provider_openstack", "provider_nutanix", "provider_generic_http", "provider_nocloud",
		"service", "binary", "args", "cni_bin_dirs",
	};
	struct tmpl_vars v = TMPL_VARS_INIT;

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		tmpl_set(&v, names[i], "x");
	tmpl_set(&v, "cni_bin_dir", "C:/opt/cni/bin");
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct buf out = BUF_INIT;
		struct wb_err e = WB_ERR_INIT;
		char *p = fs_join("recipes/templates", files[i]);

		if (render_file(p, &v, &out, &e) < 0)
			fail_msg("%s: %s", p, e.msg);
		assert_null(strstr(out.ptr, "{{"));
		free(p);
		buf_release(&out);
	}
	tmpl_vars_release(&v);
}

/* render VALUE through "{{SINK:v}}": 0 and the output in OUT, or -1 */
static int sink(const char *sink_name, const char *value, struct buf *out,
		struct wb_err *e)
{
	struct tmpl_vars v = TMPL_VARS_INIT;
	char *t = NULL;
	int ret;

	tmpl_set_from(&v, "v", value, "node.x at r.yaml:3:7");
	if (asprintf(&t, "{{%s:v}}", sink_name) < 0)
		abort();
	ret = render_string("t", t, strlen(t), &v, out, e);
	free(t);
	tmpl_vars_release(&v);
	return ret;
}

static void expect_sink(const char *sink_name, const char *value, const char *want)
{
	struct buf out = BUF_INIT;
	struct wb_err e = WB_ERR_INIT;

	if (sink(sink_name, value, &out, &e) < 0)
		fail_msg("%s: '%s' refused: %s", sink_name, value, e.msg);
	assert_string_equal(out.ptr, want);
	buf_release(&out);
}

static void refuse_sink(const char *sink_name, const char *value, const char *why)
{
	struct buf out = BUF_INIT;
	struct wb_err e = WB_ERR_INIT;

	if (sink(sink_name, value, &out, &e) == 0)
		fail_msg("%s: '%s' rendered as %s", sink_name, value, out.ptr);
	assert_int_equal(e.code, WB_EUSAGE);
	/* the message names the value's origin, the reason and the sink */
	if (!strstr(e.msg, "node.x at r.yaml:3:7") || !strstr(e.msg, why) ||
	    !strstr(e.msg, "template 't' line 1"))
		fail_msg("message '%s' lacks origin, template or '%s'", e.msg, why);
	buf_release(&out);
}

static void test_sink_toml(void **state)
{
	(void)state;
	expect_sink("toml", "registry.k8s.io/pause:3.10", "\"registry.k8s.io/pause:3.10\"");
	expect_sink("toml", "a\"b\\c\nd\x01\x7f", "\"a\\\"b\\\\c\\nd\\u0001\\u007F\"");
	refuse_sink("toml", "a\xff", "not valid UTF-8");
	expect_sink("toml_lit", "C:/opt/cni/bin", "'C:/opt/cni/bin'");
	refuse_sink("toml_lit", "a'b", "TOML literal string");
	refuse_sink("toml_lit", "a\nimports = ['x']", "line break");
	/* the containerd-version attack: a comment cannot take a new line */
	refuse_sink("comment", "2.1.4\nimports = ['C:/evil.toml']", "line break");
	refuse_sink("comment", "2.1.4\r", "line break");
	refuse_sink("comment", "a\xe2\x80\xa8" "b", "line separator");
	refuse_sink("comment", "a\xc2\x85" "b", "line separator");
	expect_sink("comment", "2.1.4", "2.1.4");
}

static void test_sink_ini_json_xml(void **state)
{
	(void)state;
	expect_sink("ini", "azure", "azure");
	refuse_sink("ini", "a\n[x]", "line break");
	refuse_sink("ini", " a", "blank");
	refuse_sink("ini", "a ;b", "comment or an interpolation");
	refuse_sink("ini", "$x", "interpolation");
	refuse_sink("ini", "100%", "interpolation");
	expect_sink("json", "a\"\n\xc3\xa9", "\"a\\\"\\n\\u00E9\"");
	refuse_sink("json", "\xc3", "not valid UTF-8");
	expect_sink("xml", "<a b='c'>&\n", "&lt;a b=&apos;c&apos;&gt;&amp;&#10;");
	refuse_sink("xml", "a\x01", "control character");
	refuse_sink("xml", "a\xef\xbf\xbe", "U+FFFE");
}

static void test_sink_powershell(void **state)
{
	(void)state;
	expect_sink("ps", "it's", "'it''s'");
	/* the typographic quotes PowerShell also ends a string at */
	refuse_sink("ps", "a\xe2\x80\x98" "b", "non-ASCII");
	refuse_sink("ps", "caf\xc3\xa9", "ANSI code page");
	refuse_sink("ps", "a\nb", "line break");
	expect_sink("ps_native", "C:\\Program Files\\x.msi", "'C:\\Program Files\\x.msi'");
	refuse_sink("ps_native", "a\" /qb \"b", "unescaped");
	refuse_sink("ps_native", "C:\\dir with space\\", "ends in \\");
	expect_sink("ps_msiprop", "LOGGINGSERIALPORTNAME=COM1", "'LOGGINGSERIALPORTNAME=COM1'");
	refuse_sink("ps_msiprop", "/qb", "PROPERTY=value");
	refuse_sink("ps_msiprop", "A=\"x\" TRANSFORMS=evil.mst", "unescaped");
	expect_sink("ps_path", "C:\\k", "'C:\\k'");
	refuse_sink("ps_path", "C:\\k;C:\\evil", "split or quote");
	refuse_sink("ps_path", "C:\\\"k", "split or quote");
	refuse_sink("ps_path", "", "empty");
	expect_sink("ps_binpath", "C:\\k", "'C:\\k'");
	refuse_sink("ps_binpath", "C:\\%TEMP%", "expands");
	refuse_sink("ps_binpath", "C:\\k\" --kubeconfig=x \"", "unescaped");
	expect_sink("ps_here", "{\n  \"a\": 1\n}", "{\n  \"a\": 1\n}");
	refuse_sink("ps_here", "{\n'@\nrm -r C:\\\n@'\n}", "here-string");
	expect_sink("hcl", "a\"${b}", "\"a\\\"$${b}\"");
	/* NFC would change these in Packer: refused (render_fuzz.py's finding) */
	refuse_sink("hcl", "\r:\xef\xac\x9f/C", "NFC");
	refuse_sink("hcl_in", "e\xcc\x81", "NFC");
	expect_sink("hcl", "caf\xc3\xa9", "\"caf\xc3\xa9\"");
	refuse_sink("md_code", "a`b", "Markdown");
	expect_sink("media_type", "application/vnd.oci.image.manifest.v1+json",
		    "application/vnd.oci.image.manifest.v1+json");
	refuse_sink("media_type", "application/x; }\n location / { alias /etc/; }", "media type");
	refuse_sink("media_type", "application/json; charset=utf-8", "media type");
	refuse_sink("media_type", "application", "media type");
	refuse_sink("media_type", "application/", "media type");
	refuse_sink("media_type", "/json", "media type");
	refuse_sink("media_type", "a/b/c", "media type");
	refuse_sink("media_type", "a/$b", "media type");
	refuse_sink("media_type", "-a/b", "media type");
}

static void test_sink_lists_and_records(void **state)
{
	struct tmpl_vars v = TMPL_VARS_INIT;
	struct wb_strlist l = WB_STRLIST_INIT;
	struct buf out = BUF_INIT;
	struct wb_err e = WB_ERR_INIT;
	const char *t = "{{ps:l}} {{ps:r}} {{ps:n}} {{ps_path:l}}";

	(void)state;
	wb_strlist_push(&l, "C:\\a");
	wb_strlist_push(&l, "C:\\b'c");
	tmpl_set_list(&v, "l", &l);
	tmpl_set_json(&v, "r", json_pack("[{s:s,s:i}]", "Name", "kubelet", "Port", 10250));
	tmpl_set_int(&v, "n", 21);
	assert_int_equal(render_string("t", t, strlen(t), &v, &out, &e), 0);
	assert_string_equal(out.ptr, "@('C:\\a', 'C:\\b''c') @(@{ Name = 'kubelet'; Port = 10250 }) "
			    "21 @('C:\\a', 'C:\\b''c')");
	/* one bad element refuses the whole list */
	wb_strlist_push(&l, "C:\\x;C:\\evil");
	tmpl_set_list(&v, "l", &l);
	buf_reset(&out);
	assert_int_equal(render_string("t", t, strlen(t), &v, &out, &e), -1);
	assert_non_null(strstr(e.msg, "PATH"));
	/* an empty element of a native argument list would be dropped */
	tmpl_set_list(&v, "l", &(struct wb_strlist)WB_STRLIST_INIT);
	wb_strlist_release(&l);
	wb_strlist_push(&l, "");
	tmpl_set_list(&v, "e", &l);
	buf_reset(&out);
	assert_int_equal(render_string("t", "{{ps_native:e}}", 15, &v, &out, &e), -1);
	assert_non_null(strstr(e.msg, "drops an empty argument"));
	wb_strlist_release(&l);
	tmpl_vars_release(&v);
	buf_release(&out);
}

static void test_trusted_is_explicit(void **state)
{
	struct tmpl_vars v = TMPL_VARS_INIT;
	struct buf out = BUF_INIT;
	struct wb_err e = WB_ERR_INIT;

	(void)state;
	tmpl_set_trusted(&v, "own", "[\"${path.root}\"]");
	tmpl_set(&v, "recipe", "x\ny");
	assert_int_equal(render_string("t", "{{trusted:own}}", 15, &v, &out, &e), 0);
	assert_string_equal(out.ptr, "[\"${path.root}\"]");
	/* a recipe value cannot be spliced raw ... */
	assert_int_equal(render_string("t", "{{trusted:recipe}}", 18, &v, &out, &e), -1);
	assert_non_null(strstr(e.msg, "cannot be rendered as trusted"));
	/* ... and winbuild's own text only renders as trusted */
	assert_int_equal(render_string("t", "{{ps:own}}", 10, &v, &out, &e), -1);
	assert_non_null(strstr(e.msg, "renders only as {{trusted:...}}"));
	/* a refused value in the branch not taken still fails */
	tmpl_set(&v, "no", "");
	assert_int_equal(render_string("t", "{{#if no}}{{comment:recipe}}{{/if}}", 35, &v,
				       &out, &e), -1);
	tmpl_vars_release(&v);
	buf_release(&out);
}

/* The plan checks service arguments with the sinks' own rules. */
static void test_sink_accepts(void **state)
{
	const char *why = NULL;
	size_t at = 99;

	(void)state;
	assert_int_equal(tmpl_sink_accepts("ps_binpath", "--greeting=hello world", &why, &at), 1);
	assert_null(why);
	assert_int_equal(tmpl_sink_accepts("ps_binpath", "--a=%PATH%", &why, &at), 0);
	assert_non_null(strstr(why, "holds a %"));
	assert_int_equal(at, 4);
	assert_int_equal(tmpl_sink_accepts("ps_binpath", "", &why, &at), 0);
	assert_non_null(strstr(why, "empty"));
	assert_int_equal(tmpl_sink_accepts("ps_binpath", "C:\\x\\", &why, &at), 0);
	assert_non_null(strstr(why, "ends in"));
	assert_int_equal(tmpl_sink_accepts("ps_native", "say \"hi\"", &why, &at), 0);
	assert_int_equal(at, 4);
	assert_int_equal(tmpl_sink_accepts("ps_native", "caf\xc3\xa9", &why, &at), 0);
	assert_non_null(strstr(why, "non-ASCII"));
	assert_int_equal(tmpl_sink_accepts("no_such_sink", "x", &why, &at), 0);
}

static void test_plan_grammars(void **state)
{
	static const char *const good_versions[] = {
		"2.1.4", "v1.33.0", "1.1.6-rc.1+build.5", "2024.1", "2.24", "1",
	};
	static const char *const bad_versions[] = {
		"", "v", "2.1.4\nimports", "2.1.4 ", "1..2", "1.2-", "1.2+", "a1",
		"1.2_3", "1.2-rc 1", "1.2\"", "1.2'",
	};
	static const char *const good_refs[] = {
		"registry.k8s.io/pause:3.10", "pause", "library/pause:3.9",
		"mcr.microsoft.com/oss/v2/kubernetes/pause:3.10.1-3",
		"localhost:5000/a/b_c__d-e--f:v1", "[::1]:5000/pause:1",
		"registry.corp.example/pause:3.9@sha256:"
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	};
	static const char *const bad_refs[] = {
		"", "x\"y", "Pause", "registry.k8s.io/pause:3.10\nimports",
		"registry.k8s.io//pause", "registry.k8s.io/pause:", "a/b:-x",
		"a/b@sha256:abc", "-a.io/b", "a.io:/b", "a/b/", "a b", "a/b:c'd",
		"a/b@sha256:0123456789abcdef0123456789abcdef@x",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(good_versions) / sizeof(*good_versions); i++)
		if (!tmpl_version_ok(good_versions[i]))
			fail_msg("version '%s' refused", good_versions[i]);
	for (size_t i = 0; i < sizeof(bad_versions) / sizeof(*bad_versions); i++)
		if (tmpl_version_ok(bad_versions[i]))
			fail_msg("version '%s' accepted", bad_versions[i]);
	for (size_t i = 0; i < sizeof(good_refs) / sizeof(*good_refs); i++)
		if (!tmpl_image_ref_ok(good_refs[i]))
			fail_msg("image ref '%s' refused", good_refs[i]);
	for (size_t i = 0; i < sizeof(bad_refs) / sizeof(*bad_refs); i++)
		if (tmpl_image_ref_ok(bad_refs[i]))
			fail_msg("image ref '%s' accepted", bad_refs[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_text_is_copied),
		cmocka_unit_test(test_variables),
		cmocka_unit_test(test_if_else),
		cmocka_unit_test(test_standalone_tags_take_their_line),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_later_set_replaces),
		cmocka_unit_test(test_deep_nesting_is_refused),
		cmocka_unit_test(test_shipped_templates_render),
		cmocka_unit_test(test_sink_toml),
		cmocka_unit_test(test_sink_ini_json_xml),
		cmocka_unit_test(test_sink_powershell),
		cmocka_unit_test(test_sink_lists_and_records),
		cmocka_unit_test(test_trusted_is_explicit),
		cmocka_unit_test(test_sink_accepts),
		cmocka_unit_test(test_plan_grammars),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
