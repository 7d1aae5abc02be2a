/*
 * The limits winbuild reads from the environment (WINBUILD_RETRIES,
 * WINBUILD_MAX_SIZE, ...): one table, one strict reader. A value that is
 * set must parse whole and lie in its range; anything else is an error
 * naming the variable, never a silent fallback to the default (issue 25:
 * WINBUILD_MAX_SIZE=1M used to become 2 GiB). docs/hardening.md lists them.
 */
#ifndef WB_ENVLIMITS_H
#define WB_ENVLIMITS_H

#include "lib/err.h"

struct env_limits {
	long retries;              /* WINBUILD_RETRIES: tries per URL */
	long backoff_ms;           /* WINBUILD_RETRY_BACKOFF_MS */
	long connect_timeout;      /* WINBUILD_CONNECT_TIMEOUT: seconds */
	long low_speed_time;       /* WINBUILD_LOW_SPEED_TIME: seconds */
	long low_speed_limit;      /* WINBUILD_LOW_SPEED_LIMIT: bytes/s */
	unsigned long long max_size; /* WINBUILD_MAX_SIZE: bytes */
	long lock_timeout;         /* WINBUILD_LOCK_TIMEOUT: seconds */
};

/* Fill L from the environment (defaults for unset or empty variables).
 * Returns 0, or -1 with E (WB_EUSAGE) naming the variable, its value and
 * what it accepts. */
int env_limits_read(struct env_limits *l, struct wb_err *e);

/* Parse a size: decimal digits, optionally followed by one of the binary
 * suffixes k/K/KiB, M/MiB, G/GiB (x 1024^n). Returns 0 and sets *out, or
 * -1 on anything else (signs, spaces, fractions, overflow). */
int env_parse_size(const char *s, unsigned long long *out);

#endif
