/* stage/render: the template engine, and the shipped templates render. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/fs.h"
#include "stage/render.h"

static struct render_vars vars;

static int setup(void **state)
{
	(void)state;
	memset(&vars, 0, sizeof(vars));
	render_set(&vars, "name", "world");
	render_set(&vars, "yes", "1");
	render_set(&vars, "no", "");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	render_vars_release(&vars);
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
	expect("hello {{name}}!", "hello world!");
	expect("{{ name }}{{name}}", "worldworld");
	expect("[{{no}}]", "[]");
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
	expect("{{name}}\n", "world\n");
	/* inline tags do not eat the newline */
	expect("a {{#if yes}}b{{/if}}\n", "a b\n");
}

static void test_errors(void **state)
{
	(void)state;
	expect_error("x\n{{nope}}", "line 2: unknown placeholder 'nope'");
	expect_error("{{#if nope}}x{{/if}}", "unknown placeholder 'nope'");
	/* checked in the branch not taken too */
	expect_error("{{#if no}}{{nope}}{{/if}}", "unknown placeholder 'nope'");
	expect_error("{{name", "unterminated tag");
	expect_error("{{#if yes}}x", "not closed");
	expect_error("x{{/if}}", "without {{#if}}");
	expect_error("{{else}}", "outside {{#if}}");
	expect_error("{{#if yes}}a{{else}}b{{else}}c{{/if}}", "second {{else}}");
	expect_error("{{Name}}", "bad tag");
	expect_error("{{a b}}", "bad tag");
	expect_error("{{}}", "bad tag");
}

static void test_later_set_replaces(void **state)
{
	(void)state;
	render_set(&vars, "name", "again");
	expect("{{name}}", "again");
	render_set(&vars, "name", "world");
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
		"cni/sdnbridge.conflist", "cni/nat.conflist", "cni/win-bridge.conflist",
		"kubelet/StartKubelet.ps1", "kubelet/RegisterKubeletService.ps1",
	};
	static const char *const names[] = {
		"image", "windows_version", "pause_image", "cni", "cni_bin_dir",
		"cni_conf_dir", "service_manager", "provider", "containerd_version",
		"provider_azure", "provider_aws", "provider_vsphere",
		"provider_openstack", "provider_nutanix", "provider_generic_http",
	};
	struct render_vars v = RENDER_VARS_INIT;

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		render_set(&v, names[i], "x");
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
	render_vars_release(&v);
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
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
