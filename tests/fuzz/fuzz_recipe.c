/*
 * libFuzzer harness: the recipe loader (YAML → struct rnode with limits)
 * and the schema checker on whatever tree comes out.
 */
#include <stddef.h>
#include <stdint.h>

#include "recipe/node.h"
#include "recipe/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wb_strlist names = WB_STRLIST_INIT;
	struct wb_err e = WB_ERR_INIT;
	struct rnode *n = NULL;

	if (!rnode_load_buffer((const char *)data, size, "fuzz.yaml", &names, &n, &e) &&
	    n->type == RNODE_MAP) {
		struct wb_err e2 = WB_ERR_INIT;
		schema_check(n, schema_image, "", 0, &e2);
		wb_err_clear(&e2);
		schema_check(n, schema_component, "component", 0, &e2);
		wb_err_clear(&e2);
		schema_check(n, schema_override_only, "override", 1, &e2);
	}
	rnode_free(n);
	wb_strlist_release(&names);
	return 0;
}
