/*
 * One transfer of the engine: its curl handle, the write callback that
 * hands the bytes to the job's sink, what a failed request means.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>

#include "fetch/engine.h"
#include "lib/text.h"

/* ---- transfers -------------------------------------------------------- */

/* A sink has room again (called on one of its threads). */
static void wake_engine(void *multi)
{
	curl_multi_wakeup(multi);
}

void xfer_tee_close(struct job *j, int bad)
{
	if (j->tee_fd >= 0)
		close(j->tee_fd);
	j->tee_fd = -1;
	j->tee_bad |= bad;
}

/* Start J's sink, with the tee when there is one. */
static int sink_begin(CURLM *multi, struct job *j)
{
	if (sink_start(&j->sink, j->fd, &j->dc, wake_engine, multi) < 0)
		return -1;
	if (j->tee_fd >= 0)
		sink_tee(&j->sink, j->tee_fd);
	return 0;
}

void xfer_main_reset(struct job *j)
{
	int tee_ok = !j->sink.started || j->tee_fd < 0 || sink_tee_ok(&j->sink);
	int err = sink_stop(&j->sink);

	if (!tee_ok)
		xfer_tee_close(j, 1);

	if (err && !j->io_error)
		j->io_error = err;
	if (j->fd >= 0) {
		if (ftruncate(j->fd, 0) < 0 || lseek(j->fd, 0, SEEK_SET) < 0)
			j->io_error = errno;
	}
	if (j->tee_fd >= 0 && (err || ftruncate(j->tee_fd, 0) < 0 ||
			       lseek(j->tee_fd, 0, SEEK_SET) < 0))
		xfer_tee_close(j, 1);
	if (j->dc_live)
		digest_release(&j->dc);
	j->dc_live = 0;
	j->have = 0;
}

static int main_begin(struct engine *en, struct job *j, struct wb_err *e)
{
	if (!j->tmp_path && cache_tmp_create(en->c, &j->tmp_path, &j->fd, e) < 0)
		return -1;
	if (!j->tee_asked && en->o->tee_open) {
		/* asked once: after a failed tee, the caller copies the entry */
		j->tee_asked = 1;
		j->tee_fd = en->o->tee_open(en->o->ctx, (size_t)(j - en->jobs), j->it);
	}
	if (!j->dc_live) {
		memset(&j->dc, 0, sizeof(j->dc));
		if (digest_init(&j->dc, j->needs.digest_algs, e) < 0)
			return -1;
		j->dc_live = 1;
	}
	if (!j->sink.started && sink_begin(en->multi, j) < 0)
		return wb_error(e, WB_EIO, "cannot start a writer thread: %s",
				strerror(errno));
	return 0;
}

void xfer_main_discard(struct job *j)
{
	xfer_main_reset(j);
	xfer_tee_close(j, 0);
	if (j->fd >= 0)
		close(j->fd);
	j->fd = -1;
	if (j->tmp_path)
		unlink(j->tmp_path);
	free(j->tmp_path);
	j->tmp_path = NULL;
}

unsigned long long xfer_target_cap(const struct job *j, size_t t)
{
	if (t == T_MAIN(j))
		return j->max_size;
	return slot_def(j, t).max;
}

/*
 * @where where bytes are hashed while downloading -- hands the bytes to the
 *   sink
 */
static size_t on_write(char *data, size_t sz, size_t nmemb, void *ud)
{
	struct job *j = ud;
	int r;
	size_t n = sz * nmemb;
	long code = 0;

	curl_easy_getinfo(j->h, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 300)
		return n;   /* an error body: never part of the artifact */
	if (j->target != T_MAIN(j)) {
		if (j->text[j->target].len + n > xfer_target_cap(j, j->target)) {
			j->too_big = 1;
			return 0;
		}
		buf_add(&j->text[j->target], data, n);
		j->attempt_bytes += n;
		return n;
	}
	if (j->have > 0 && code == 200 && j->attempt_bytes == 0) {
		/* We asked for a range and got the whole body: start over. */
		struct wb_err e = WB_ERR_INIT;

		xfer_main_reset(j);
		memset(&j->dc, 0, sizeof(j->dc));
		if (digest_init(&j->dc, j->needs.digest_algs, &e) < 0) {
			j->io_error = EIO;
			return 0;
		}
		j->dc_live = 1;
		if (sink_begin(j->multi, j) < 0) {
			j->io_error = errno;
			return 0;
		}
	}
	if (j->have + n > xfer_target_cap(j, T_MAIN(j))) {
		j->too_big = 1;
		return 0;
	}
	/* written and hashed on the sink's thread; errors surface here or at
	 * the end of the transfer (transfer_done drains) */
	r = j->can_pause ? sink_offer(&j->sink, data, n) : sink_add(&j->sink, data, n);
	if (r < 0) {
		j->io_error = j->sink.err;
		return 0;
	}
	if (r > 0) {
		/* the ring is full: serve the other transfers meanwhile */
		j->paused = 1;
		return CURL_WRITEFUNC_PAUSE;
	}
	j->have += n;
	j->attempt_bytes += n;
	return n;
}

/*
 * What the user can do about a failed request, appended to its message
 * ("" when there is nothing to add): a TLS failure names the CA options, a
 * client certificate that cannot be used the credentials file (401/403:
 * xfer_auth_hint; a 404 names the version where it is reported).
 * @where what a failed request tells the user to do (TLS, a client
 *   certificate, 404)
 */
const char *xfer_remedy(CURLcode rc)
{
	switch (rc) {
	case CURLE_SSL_CERTPROBLEM:
		return " (TLS: the client certificate or key of a client-cert entry in "
		       "the credentials file cannot be used: check its cert and key files)";
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_ISSUER_ERROR:
		return " (TLS: if this server or a proxy uses its own CA, give its "
		       "certificate with --cacert FILE or SSL_CERT_FILE=FILE)";
	default:
		return "";
	}
}

/*
 * @where what a 401/403 says (the host; which credential was sent, from
 *   where, or why none was)
 */
void xfer_auth_hint(const struct job *j, const char *url, char *out, size_t n)
{
	char host[300];

	creds_origin_text(url, host, sizeof(host));
	if (j->sent)
		snprintf(out, n, " (%s refused the credentials winbuild sent, from %s (%s): "
			 "check that they are current and may read this path)", host,
			 creds_from_name(j->sent->from), j->sent->where);
	else if (j->held)
		snprintf(out, n, " (no credentials sent: those from %s (%s) are for %s://%s "
			 "only, and this request went to %s (a redirect or a mirror): winbuild "
			 "never sends them to another host; give %s an entry of its own in "
			 "the credentials file or netrc)", creds_from_name(j->held->from),
			 j->held->where, j->held->scheme ? j->held->scheme : "http(s)",
			 j->held->host, host, host);
	else if (j->it->art->credential)
		snprintf(out, n, " (no credentials sent: the artifact names credential '%s' "
			 "(credential:), and the credentials file has no [%s] for %s: add it, "
			 "or fix the name)", j->it->art->credential, j->it->art->credential, host);
	else
		snprintf(out, n, " (no credentials sent: the credentials file and netrc have "
			 "none for %s; add one (docs/recipes.md, \"Credentials\": "
			 "--credentials FILE or --netrc-file FILE), or mirror the artifacts where "
			 "the build host can read them (winbuild mirror))", host);
}

int xfer_retryable(CURLcode rc, long code)
{
	if (rc == CURLE_HTTP_RETURNED_ERROR)
		return code >= 500 || code == 408 || code == 429;
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return 1;
	default:
		return 0;
	}
}

/* A server's URL for a message: at most 300 bytes, escaped (lib/text.h). */
char *xfer_shown_url(const char *url)
{
	struct buf b = BUF_INIT;
	size_t n = strlen(url);

	text_add_printable(&b, url, n > 300 ? 300 : n);
	if (n > 300)
		buf_adds(&b, "...");
	return buf_detach(&b, NULL);
}

/*
 * @where downloads: libcurl multi, `-j N`, retries, Range resume, size caps,
 *   TLS -- one transfer
 */
int xfer_start(struct engine *en, struct job *j, struct wb_err *e)
{
	const char *plan_url = j->urls[j->target].v[j->url_idx];
	const char *url = j->hop_url ? j->hop_url : plan_url;
	char range[48], *req;
	CURL *h;

	if (j->target == T_MAIN(j) && main_begin(en, j, e) < 0)
		return -1;
	if (j->target != T_MAIN(j))
		buf_reset(&j->text[j->target]);
	h = curl_easy_init();
	if (!h)
		return wb_error(e, WB_EIO, "cannot create a curl handle");
	j->h = h;
	j->multi = en->multi;
	j->paused = 0;
	j->can_pause = strncasecmp(url, "file:", 5) != 0;
	j->errbuf[0] = '\0';
	j->too_big = j->io_error = 0;
	j->attempt_bytes = 0;
	hop_transport_opts(en, h, url, j);
	curl_slist_free_all(j->hdr);
	j->hdr = NULL;
	req = hop_creds(&en->creds, h, plan_url, url, j->it->art->credential, &j->sent,
			&j->held, &j->hdr);
	curl_easy_setopt(h, CURLOPT_URL, req);   /* libcurl keeps its own copy */
	explicit_bzero(req, strlen(req));
	free(req);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, j);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, j->errbuf);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, en->low_speed_limit);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, en->low_speed_time);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, NULL);
	/* fewer, larger write callbacks: one write(2) and one digest update
	 * per 512 KiB instead of per 16 KiB */
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, FETCH_BUFFER_SIZE);
	if (j->target == T_MAIN(j)) {
		curl_off_t left = (curl_off_t)(en->max_size - j->have);
		curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, left);
		if (j->have > 0 && !strncasecmp(url, "http", 4)) {
			snprintf(range, sizeof(range), "%llu-", j->have);
			curl_easy_setopt(h, CURLOPT_RANGE, range);
		} else {
			xfer_main_reset(j);
			if (main_begin(en, j, e) < 0) {
				curl_easy_cleanup(h);
				j->h = NULL;
				return -1;
			}
		}
	} else {
		curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
				 (curl_off_t)xfer_target_cap(j, j->target));
	}
	if (curl_multi_add_handle(en->multi, h) != CURLM_OK) {
		curl_easy_cleanup(h);
		j->h = NULL;
		return wb_error(e, WB_EIO, "cannot add a curl transfer");
	}
	j->state = J_RUNNING;
	en->running++;
	return 0;
}
