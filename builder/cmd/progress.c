/*
 * The fetch's progress display: one bar per transfer and a total line on a
 * terminal, a "fetched"/"cached" line per artifact, and the run's log
 * lines printed between them (the bars are cleared first). A leaf of cmd/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "fetch/fetch.h"
#include "lib/buf.h"
#include "lib/redact.h"

static void human(unsigned long long n, char *out, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)n;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u)
		snprintf(out, len, "%.1f %s", v, unit[u]);
	else
		snprintf(out, len, "%llu B", n);
}

/* "x/y UNIT" (the unit Y needs), or "x/?" when Y is unknown. */
static void human_pair(unsigned long long x, unsigned long long y, char *out,
		       size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double f = 1;
	int u = 0;

	if (!y) {
		human(x, out, len);
		snprintf(out + strlen(out), len - strlen(out), "/?");
		return;
	}
	while (y / f >= 1024 && u < 4) {
		f *= 1024;
		u++;
	}
	if (u)
		snprintf(out, len, "%.1f/%.1f %s", (double)x / f, (double)y / f, unit[u]);
	else
		snprintf(out, len, "%llu/%llu B", x, y);
}

void cmd_progress_clear(struct cmd_progress *d)
{
	for (; d->drawn > 0; d->drawn--)
		redact_stdio_raw(stderr, "\033[1A\033[2K");   /* ours: as it is */
}

/*
 * @where progress totals known up front (lock file sizes, HEAD) and the
 *   progress display -- the display
 */
void cmd_progress_show(struct cmd_progress *d, const struct fetch_progress *p)
{
	char a[64], rate[32];
	double r;

	if (!d->tty)
		return;
	cmd_progress_clear(d);
	for (size_t i = 0; i < p->nxfers; i++) {
		const struct fetch_xfer_progress *x = &p->xfers[i];
		int pct = x->total ? (int)(x->now * 100 / x->total) : 0, w = 24;
		int fill = x->total ? pct * w / 100 : 0;

		if (x->waiting && x->holder == (long)getpid()) {
			fprintf(stderr, "  %-28.28s waiting for the same bytes in this run\n",
				x->name);
			d->drawn++;
			continue;
		}
		if (x->waiting) {
			fprintf(stderr, "  %-28.28s waiting for another winbuild", x->name);
			if (x->holder > 0)
				fprintf(stderr, " (pid %ld)", x->holder);
			fputs(" to download it\n", stderr);
			d->drawn++;
			continue;
		}
		human_pair(x->now, x->total, a, sizeof(a));
		fprintf(stderr, "  %-28.28s [%.*s%*s] %3d%% %s\n", x->name, fill,
			"########################", w - fill, "", pct, a);
		d->drawn++;
	}
	r = p->elapsed > 0 ? (double)p->bytes_now / p->elapsed : 0;
	human_pair(p->bytes_now, p->bytes_total, a, sizeof(a));
	human((unsigned long long)r, rate, sizeof(rate));
	fprintf(stderr, "  total %s, %s/s", a, rate);
	if (r > 0 && p->bytes_total > p->bytes_now)
		fprintf(stderr, ", ETA %.0fs", (double)(p->bytes_total - p->bytes_now) / r);
	fprintf(stderr, ", %zu/%zu done\n", p->items_done, p->items_total);
	d->drawn++;
}

void cmd_progress_item(struct cmd_progress *d, const struct fetch_item *it)
{
	char size[32], *how;

	if (d->run->quiet || d->run->json || it->status)
		return;
	cmd_progress_clear(d);
	human(it->size, size, sizeof(size));
	how = verify_evidence_describe(&it->ev);
	fprintf(stderr, "%s %s (%s, sha256 %.16s..., %s)\n",
		it->from_cache ? "cached " : "fetched", it->art->name, size, it->sha256, how);
	free(how);
}

static void log_emit(struct wb_log *log, int level, const char *msg)
{
	struct cmd_progress *d = log->ctx;

	cmd_progress_clear(d);
	if (d->inner.emit)
		d->inner.emit(&d->inner, level, msg);
}

void cmd_progress_init(struct cmd_progress *d, struct wb_run *run)
{
	memset(d, 0, sizeof(*d));
	d->run = run;
	d->tty = !run->no_progress && !run->quiet && !run->json && isatty(STDERR_FILENO);
	d->inner = run->log;
	d->log = run->log;
	d->log.emit = log_emit;
	d->log.ctx = d;
	if (run->quiet)
		d->log.level = WB_LOG_WARN;
}
