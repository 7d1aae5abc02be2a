/*
 * What every command says to the user: error and warning lines on stderr,
 * the usage line, and the record of both that --json's result carries
 * ("errors", "warnings"). A leaf of cmd/: it calls no other cmd/ file, so
 * any cmd/ object links (and unit-tests) without main.o. The idea of git's
 * usage.c and curl's tool_msgs.c.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "lib/buf.h"
#include "lib/redact.h"

/* Every error line printed through cmd_fail, cmd_errorf and cmd_usage, and
 * every warning of cmd_warnf, in order: the "errors" and "warnings" of the
 * --json result (cmd_json_finish). CLI state of the one run a process
 * makes, not a module's. */
static struct wb_strlist reported_errors;
static struct wb_strlist reported_warnings;
/* The matrix stages and emits on threads (cmd/pipematrix.c) and their
 * modules log through the run's sink (cmd_log_line): one line and its
 * record at a time. */
static pthread_mutex_t say_lock = PTHREAD_MUTEX_INITIALIZER;

/* MSG[0..LEN) as a new string, every URL in it redacted (lib/redact.h),
 * with room for each short secret value to become REDACTED */
static char *redacted_line(const char *msg, size_t len)
{
	size_t room = len * 9 + 9;
	char *m = xmalloc(room);

	memcpy(m, msg, len);
	m[len] = '\0';
	redact_text(m, room);
	return m;
}

void cmd_record_error(const char *msg, size_t len)
{
	char *m = redacted_line(msg, len);

	pthread_mutex_lock(&say_lock);
	wb_strlist_push(&reported_errors, m);
	pthread_mutex_unlock(&say_lock);
	free(m);
}

const struct wb_strlist *cmd_reported_errors(void)
{
	return &reported_errors;
}

const struct wb_strlist *cmd_reported_warnings(void)
{
	return &reported_warnings;
}

/* The one place a "winbuild: " line is written: "winbuild: PREFIX" and
 * MSG[0..LEN) on stderr, MSG kept in REC. */
static void say_line(struct wb_strlist *rec, const char *prefix, const char *msg, int len)
{
	/* every "winbuild: " line: no URL's secret shown */
	char *m = redacted_line(msg, (size_t)len);

	pthread_mutex_lock(&say_lock);
	fprintf(stderr, "winbuild: %s%s\n", prefix, m);
	wb_strlist_push(rec, m);
	pthread_mutex_unlock(&say_lock);
	free(m);
}

static void say(struct wb_strlist *rec, const char *prefix, const char *fmt, va_list ap)
{
	char msg[WB_ERR_MAX];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	say_line(rec, prefix, msg, (int)strlen(msg));
}

void cmd_warnf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(&reported_warnings, "warning: ", fmt, ap);
	va_end(ap);
}

/* The run's logger sink (struct wb_log, set up in main.c): a module's
 * error or warning is the same line, on the same channel, as the CLI's own
 * (issue 44: the fetch engine's "did not verify ...; trying the next URL"
 * warning used to reach stderr only, not --json's "warnings"); the other
 * levels are progress text, plain on stderr. */
void cmd_log_line(struct wb_log *log, int level, const char *msg)
{
	(void)log;
	if (level == WB_LOG_ERROR)
		say_line(&reported_errors, "", msg, (int)strlen(msg));
	else if (level == WB_LOG_WARN)
		say_line(&reported_warnings, "warning: ", msg, (int)strlen(msg));
	else
		fprintf(stderr, "%s\n", msg);
}

void cmd_errorf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(&reported_errors, "", fmt, ap);
	va_end(ap);
}

int cmd_fail(const struct wb_err *e)
{
	const char *p = e->msg[0] ? e->msg : "unknown error";

	/* one "winbuild: " line per line of the message (schema_check
	 * reports several errors at once) */
	for (;;) {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);

		say_line(&reported_errors, "", p, n);
		if (!nl)
			break;
		p = nl + 1;
	}
	return e->code ? e->code : WB_EIO;
}

int cmd_usage(const char *fmt, ...)
{
	char msg[WB_ERR_MAX], *line;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	line = xasprintf("usage: winbuild %s", msg);
	fprintf(stderr, "%s\n", line);
	cmd_record_error(line, strlen(line));
	free(line);
	return WB_EUSAGE;
}
