/*
 * One download per artifact across processes.
 */
#include <stdlib.h>
#include <unistd.h>

#include "fetch/engine.h"

/* ---- one download per artifact across processes ---------------------- */

/* What names the bytes of IT, for its download lock: its pinned SHA-256
 * (recipe or lock file) when it has one, so runs that reach the same bytes
 * through other URLs (a mirror, upstream) share one download; else the ref
 * spec, the exact question whose answer the downloading run writes into
 * refs/ (the URL list alone would make a run wait for bytes its own
 * verification then does not find in a ref). */
static void dl_lock_key(const struct engine *en, const struct fetch_item *it,
			char key[65])
{
	const char *pin = verify_pinned_sha256(&it->art->verify, it->lock_sha256);
	char *spec;

	if (pin) {
		spec = xasprintf("winbuild-download 1\nsha256 %s\n", pin);
		for (char *p = spec; *p; p++)
			if (*p >= 'A' && *p <= 'F')
				*p = (char)(*p - 'A' + 'a');
	} else {
		spec = fetch_ref_spec(en->plan, it);
	}
	cache_ref_key(spec, key);
	free(spec);
}

/*
 * Before J's artifact transfer: take its download lock. 0: go ahead (held,
 * or given up on). 1: the job does not start now: another process holds
 * the lock (J polls again in 100 ms, shown as waiting in the progress), or
 * J finished, because once the lock was free the cache held its bytes.
 * After WINBUILD_LOCK_TIMEOUT seconds of waiting J downloads anyway: a
 * hung winbuild must not stop this one, and two downloads of the same
 * bytes are safe (cache_insert keeps the first).
 * @where one download per artifact across processes (the per-artifact
 *   download lock, the wait, its timeout) -- the wait and its timeout
 */
int dl_lock(struct engine *en, struct job *j)
{
	struct wb_err e = WB_ERR_INIT;
	double t = engine_now();
	char key[65], *quarantined;
	int r;

	if (j->dl_state == DL_HELD || j->dl_state == DL_SKIP)
		return 0;
	dl_lock_key(en, j->it, key);
	r = cache_dl_trylock(en->c, &j->dl, key, &j->dl_holder, &e);
	if (r < 0) {
		engine_log(en, WB_LOG_WARN, "artifact '%s': %s; downloading without it",
		     j->it->art->name, e.msg);
		cache_dl_unlock(en->c, &j->dl);
		j->dl_state = DL_SKIP;
		return 0;
	}
	if (r == 0) {
		if (j->dl_state != DL_WAITING) {
			j->dl_state = DL_WAITING;
			j->dl_since = t;
			if (j->dl_holder == (long)getpid())   /* two artifacts, one pin */
				engine_log(en, WB_LOG_INFO, "artifact '%s': waiting for another "
				     "artifact of this run with the same bytes", j->it->art->name);
			else
				engine_log(en, WB_LOG_INFO, "artifact '%s': waiting for another "
				     "winbuild (pid %ld) that is downloading it",
				     j->it->art->name, j->dl_holder);
		}
		if (t - j->dl_since < (double)en->lock_timeout) {
			j->not_before = t + 0.1;
			return 1;
		}
		engine_log(en, WB_LOG_WARN, "artifact '%s': still locked by another winbuild "
		     "(pid %ld) after %ld s (WINBUILD_LOCK_TIMEOUT); downloading it too",
		     j->it->art->name, j->dl_holder, en->lock_timeout);
		cache_dl_unlock(en->c, &j->dl);
		j->dl_state = DL_SKIP;
		return 0;
	}
	j->dl_state = DL_HELD;
	/* Whoever held the lock may have cached the bytes since refs_try_cache
	 * looked (also when it let go just before we tried): use them, through
	 * the same checks as any cache hit. The first look's quarantine report
	 * is kept (a second one was logged). */
	quarantined = j->it->quarantined;
	j->it->quarantined = NULL;
	r = refs_try_cache(en, j, &j->it->err);
	if (quarantined) {
		free(j->it->quarantined);
		j->it->quarantined = quarantined;
	}
	if (r < 0)
		engine_finish_job(en, j, j->it->err.code ? j->it->err.code : WB_EIO, &j->it->err);
	else if (r > 0)
		engine_finish_job(en, j, 0, NULL);
	return r != 0;
}
