/*
 * Limits on unpacking one archive (unpack.limits in a recipe): the recipe
 * sets them (recipe/plan.h), stage/extract.c enforces them. Here, below
 * both, so the plan need not include stage/.
 */
#ifndef WB_EXTRACT_LIMITS_H
#define WB_EXTRACT_LIMITS_H

#define EXTRACT_DEFAULT_MAX_BYTES (4ULL << 30)    /* 4 GiB unpacked */
#define EXTRACT_DEFAULT_MAX_ENTRIES 100000ULL
#define EXTRACT_DEFAULT_MAX_RATIO 200ULL          /* unpacked / packed */
#define EXTRACT_DEFAULT_MAX_SECONDS 900ULL

struct extract_limits {
	unsigned long long max_bytes;     /* 0 = default */
	unsigned long long max_entries;   /* 0 = default */
	unsigned long long max_ratio;     /* 0 = default */
	unsigned long long max_seconds;   /* 0 = default */
};

#endif
