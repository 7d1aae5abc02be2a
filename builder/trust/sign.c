/* Script signing through osslsigncode, spawned with posix_spawnp (no
 * shell): argv is built here, nothing is interpolated into a string. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trust/sign.h"
#include "lib/buf.h"

extern char **environ;

#define SIGN_STDERR_MAX 4096

int sign_requested(const struct sign_opts *o)
{
	return o->cert || o->key || o->pkcs12 || o->pkcs11_uri || o->pkcs11_module ||
	       o->pass_file || o->timestamp_url;
}

int sign_check_opts(const struct sign_opts *o, struct wb_err *e)
{
	int sources = !!o->key + !!o->pkcs12 + !!o->pkcs11_uri;

	if (sources != 1)
		return wb_error(e, WB_EUSAGE,
				"signing needs exactly one of --sign-key (with --sign-cert), "
				"--sign-pkcs12, --sign-pkcs11-uri");
	if (o->key && !o->cert)
		return wb_error(e, WB_EUSAGE, "--sign-key needs --sign-cert");
	if (o->pkcs12 && o->cert)
		return wb_error(e, WB_EUSAGE, "--sign-pkcs12 holds the certificate; drop --sign-cert");
	if (o->pkcs11_uri && (!o->pkcs11_module || !o->cert))
		return wb_error(e, WB_EUSAGE,
				"--sign-pkcs11-uri needs --sign-pkcs11-module and --sign-cert (a file or a PKCS#11 URI)");
	if (o->pkcs11_module && !o->pkcs11_uri)
		return wb_error(e, WB_EUSAGE, "--sign-pkcs11-module needs --sign-pkcs11-uri");
	return 0;
}

/* The last non-empty line of TEXT (in place). */
static const char *last_line(char *text)
{
	char *end = text + strlen(text), *p;

	while (end > text && (end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	p = strrchr(text, '\n');
	return p ? p + 1 : text;
}

/*
 * @where where the site signs staged executables (`site_signing`) -- the
 *   signer
 */
int sign_file(const struct sign_opts *o, const char *path, long long sign_time,
	      struct wb_err *e)
{
	const char *argv[32];
	size_t n = 0;
	char *tmp = xasprintf("%s.sign.tmp", path), when[32];
	posix_spawn_file_actions_t fa;
	struct buf err = BUF_INIT;
	int pipefd[2] = { -1, -1 }, status = 0, ret = -1, fa_ok = 0;
	pid_t pid;

	if (sign_check_opts(o, e) < 0)
		goto out;
	argv[n++] = o->program ? o->program : "osslsigncode";
	argv[n++] = "sign";
	if (o->pkcs12) {
		argv[n++] = "-pkcs12";
		argv[n++] = o->pkcs12;
	} else if (o->pkcs11_uri) {
		argv[n++] = "-pkcs11module";
		argv[n++] = o->pkcs11_module;
		argv[n++] = strncmp(o->cert, "pkcs11:", 7) ? "-certs" : "-pkcs11cert";
		argv[n++] = o->cert;
		argv[n++] = "-key";
		argv[n++] = o->pkcs11_uri;
	} else {
		argv[n++] = "-certs";
		argv[n++] = o->cert;
		argv[n++] = "-key";
		argv[n++] = o->key;
	}
	if (o->pass_file) {
		argv[n++] = "-readpass";
		argv[n++] = o->pass_file;
	}
	if (o->timestamp_url) {
		argv[n++] = "-ts";
		argv[n++] = o->timestamp_url;
	}
	if (sign_time >= 0) {
		snprintf(when, sizeof(when), "%lld", sign_time);
		argv[n++] = "-time";
		argv[n++] = when;
	}
	argv[n++] = "-h";
	argv[n++] = "sha256";
	argv[n++] = "-in";
	argv[n++] = path;
	argv[n++] = "-out";
	argv[n++] = tmp;
	argv[n] = NULL;

	unlink(tmp);   /* osslsigncode refuses to overwrite */
	if (pipe2(pipefd, O_CLOEXEC) < 0 || posix_spawn_file_actions_init(&fa)) {
		wb_error(e, WB_EIO, "cannot start osslsigncode: %s", strerror(errno));
		goto out;
	}
	fa_ok = 1;
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDERR_FILENO);
	errno = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	if (errno) {
		wb_error(e, WB_EIO, "cannot run '%s': %s", argv[0], strerror(errno));
		goto out;
	}
	close(pipefd[1]);
	pipefd[1] = -1;
	for (;;) {
		char chunk[512];
		ssize_t r = read(pipefd[0], chunk, sizeof(chunk));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (err.len < SIGN_STDERR_MAX)
			buf_add(&err, chunk, (size_t)r);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		wb_error(e, WB_EIO, "osslsigncode could not sign '%s' (%s %d): %s", path,
			 WIFEXITED(status) ? "exit" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
			 err.len ? last_line(err.ptr) : "no message");
		goto out;
	}
	if (rename(tmp, path) < 0) {
		wb_error(e, WB_EIO, "cannot replace '%s': %s", path, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	if (fa_ok)
		posix_spawn_file_actions_destroy(&fa);
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	if (ret < 0)
		unlink(tmp);
	free(tmp);
	buf_release(&err);
	return ret;
}

/*
 * @where where an emitted script is signed (osslsigncode, no shell; `emit
 *   --sign-scripts`)
 */
int sign_script(const struct sign_opts *o, const char *path, struct wb_err *e)
{
	return sign_file(o, path, -1, e);
}
