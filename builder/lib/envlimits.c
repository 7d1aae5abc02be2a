#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lib/envlimits.h"

enum kind { K_COUNT, K_SIZE };

static const struct limit {
	const char *name;
	enum kind kind;
	size_t off;
	unsigned long long def, min, max;
	const char *unit;
} limits[] = {
	{ "WINBUILD_RETRIES", K_COUNT, offsetof(struct env_limits, retries), 3, 1, 20, "tries" },
	{ "WINBUILD_RETRY_BACKOFF_MS", K_COUNT, offsetof(struct env_limits, backoff_ms),
	  1000, 0, 60000, "milliseconds" },
	{ "WINBUILD_CONNECT_TIMEOUT", K_COUNT, offsetof(struct env_limits, connect_timeout),
	  30, 1, 3600, "seconds" },
	{ "WINBUILD_LOW_SPEED_TIME", K_COUNT, offsetof(struct env_limits, low_speed_time),
	  60, 1, 3600, "seconds" },
	{ "WINBUILD_LOW_SPEED_LIMIT", K_COUNT, offsetof(struct env_limits, low_speed_limit),
	  100, 1, 1ULL << 30, "bytes/s" },
	{ "WINBUILD_MAX_SIZE", K_SIZE, offsetof(struct env_limits, max_size),
	  2ULL << 30, 1, 64ULL << 30, "bytes" },
	{ "WINBUILD_LOCK_TIMEOUT", K_COUNT, offsetof(struct env_limits, lock_timeout),
	  900, 0, 86400, "seconds" },
};

static int parse_digits(const char *s, const char **end, unsigned long long *out)
{
	unsigned long long n = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		if (n > (~0ULL - (unsigned)(*p - '0')) / 10)
			return -1;
		n = n * 10 + (unsigned)(*p - '0');
	}
	if (p == s)
		return -1;
	*end = p;
	*out = n;
	return 0;
}

int env_parse_size(const char *s, unsigned long long *out)
{
	static const struct { const char *suffix; unsigned shift; } sfx[] = {
		{ "", 0 }, { "k", 10 }, { "K", 10 }, { "KiB", 10 },
		{ "M", 20 }, { "MiB", 20 }, { "G", 30 }, { "GiB", 30 },
	};
	const char *end;
	unsigned long long n;

	if (parse_digits(s, &end, &n) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		if (strcmp(end, sfx[i].suffix))
			continue;
		if (sfx[i].shift && n > (~0ULL >> sfx[i].shift))
			return -1;
		*out = n << sfx[i].shift;
		return 0;
	}
	return -1;
}

/*
 * @where every limit read from the environment (`WINBUILD_MAX_SIZE`,
 *   `WINBUILD_RETRIES`, timeouts), strictly -- a bad value is exit 2, never
 *   the default
 */
int env_limits_read(struct env_limits *l, struct wb_err *e)
{
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		const struct limit *t = &limits[i];
		const char *v = getenv(t->name), *end = NULL;
		unsigned long long n = t->def;
		int bad = 0;

		if (v && *v) {
			if (t->kind == K_SIZE)
				bad = env_parse_size(v, &n) < 0;
			else
				bad = parse_digits(v, &end, &n) < 0 || *end;
			bad = bad || n < t->min || n > t->max;
		}
		if (bad)
			return wb_error(e, WB_EUSAGE,
					"%s='%s' is not a number of %s from %llu to %llu%s; "
					"fix or unset it", t->name, v, t->unit, t->min, t->max,
					t->kind == K_SIZE ? " (suffixes k, M, G: x1024)" : "");
		if (t->kind == K_SIZE)
			*(unsigned long long *)(void *)((char *)l + t->off) = n;
		else
			*(long *)(void *)((char *)l + t->off) = (long)n;
	}
	return 0;
}
