#include <stdlib.h>

#include "lib/buf.h"
#include "lib/fs.h"
#include "lib/json.h"

int json_write_file(const char *path, const json_t *root, size_t flags,
		    struct wb_err *e)
{
	struct buf b = BUF_INIT;
	char *text = json_dumps(root, flags);
	int ret;

	if (!text)
		return wb_error(e, WB_EIO, "cannot format '%s'", path);
	buf_adds(&b, text);
	buf_addc(&b, '\n');
	free(text);
	ret = fs_write_atomic(path, b.ptr, b.len, 0644, e);
	buf_release(&b);
	return ret;
}
