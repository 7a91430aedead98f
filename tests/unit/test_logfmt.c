/* logfmt values in libmmc's log messages and the formatter both logs share (common/logfmt.c). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lg.h"
#include "logfmt.h"

static char captured[MMC_LOG_LINE_MAX];

static void capture(int level, const char *msg)
{
	snprintf(captured, sizeof(captured), "%s", msg);
}

Test(logfmt, quoted_span_escapes_quotes_and_backslashes)
{
	char buf[256];

	logfmt_format(buf, sizeof(buf), "op=start err=\"%s\" n=1", "data dir \"d \"1\" \\x\" is in use");
	cr_assert_str_eq(buf, "op=start err=\"data dir \\\"d \\\"1\\\" \\\\x\\\" is in use\" n=1");
	/* a quote of the format inside a field value, not before a space: part of the value */
	logfmt_format(buf, sizeof(buf), "err=\"cannot open \"%s\": %s\"", "a\"b", "gone");
	cr_assert_str_eq(buf, "err=\"cannot open \\\"a\\\"b\\\": gone\"");
}

Test(logfmt, bare_value_is_quoted_only_when_needed)
{
	char buf[256];

	logfmt_format(buf, sizeof(buf), "a=%s b=%s c=%s d=%s", "plain", "two words", "k=v", "");
	cr_assert_str_eq(buf, "a=plain b=\"two words\" c=\"k=v\" d=\"\"");
}

Test(logfmt, control_characters_are_escaped)
{
	char buf[256];

	logfmt_format(buf, sizeof(buf), "err=\"%s\"", "line\nnext\tt\x01");
	cr_assert_str_eq(buf, "err=\"line\\nnext\\tt\\x01\"");
}

Test(logfmt, everything_else_as_printf_does)
{
	char buf[256], want[256];
	long long big = -1234567890123LL;

	logfmt_format(buf, sizeof(buf), "n=%d u=%u z=%zu ll=%lld x=%#x w=%5d p=%.2f pct=%% s=%.3s col=%-6s|", -3, 7u,
	              (size_t)9, big, 255, 42, 3.14159, "abcdef", "ab");
	snprintf(want, sizeof(want), "n=%d u=%u z=%zu ll=%lld x=%#x w=%5d p=%.2f pct=%% s=%.3s col=%-6s|", -3, 7u,
	         (size_t)9, big, 255, 42, 3.14159, "abcdef", "ab");
	cr_assert_str_eq(buf, want);
	logfmt_format(buf, sizeof(buf), "prose %s and %*d", "left as is", 4, 1);
	cr_assert_str_eq(buf, "prose left as is and    1");
}

Test(logfmt, truncates_inside_the_buffer)
{
	char buf[8];

	cr_assert_eq(logfmt_format(buf, sizeof(buf), "k=\"%s\"", "\"\"\"\"\"\""), 7);
	cr_assert_str_eq(buf, "k=\"\\\"\\\"");
}

Test(logfmt, libmmc_messages_reach_the_handler_escaped)
{
	mmc_set_log_handler(capture);
	lg_warn("ssd tier: cannot open \"%s\": %s", "/tmp/a\"b\\c", "No such file or directory");
	mmc_set_log_handler(NULL);
	cr_assert_str_eq(captured, "ssd tier: cannot open \"/tmp/a\\\"b\\\\c\": No such file or directory");
}

/* A URI's password never reaches a log, whoever wrote the line (common/uri_mask.c): the Redis lock's was logged in
 * clear by op=ha_start. */
Test(logfmt, a_uri_password_is_masked_in_every_string)
{
	char buf[512];

	logfmt_format(buf, sizeof(buf), "op=ha_start lock=\"%s\"", "redis://default:PASS@10.0.0.5:6379/1");
	cr_assert_str_eq(buf, "op=ha_start lock=\"redis://default:***@10.0.0.5:6379/1\"");
	logfmt_format(buf, sizeof(buf), "uri=%s", "redis://tok@h:1");
	cr_assert_str_eq(buf, "uri=redis://***@h:1");
	/* inside a longer message, twice; a password holding '@' and '/'; the precision cuts the masked text */
	logfmt_format(buf, sizeof(buf), "err=\"%s\"", "bad \"rediss://u:p@w/d@h:1\" and \"redis://:x@h:2\"");
	cr_assert_str_eq(buf, "err=\"bad \\\"rediss://u:***@h:1\\\" and \\\"redis://:***@h:2\\\"\"");
	/* a precision that cuts a URI before its '@': nothing of what may be its password shows */
	logfmt_format(buf, sizeof(buf), "s=%.16s", "redis://u:secretsecret@h");
	cr_assert_str_eq(buf, "s=redis://***");
	/* no password to mask: as it was */
	logfmt_format(buf, sizeof(buf), "a=%s b=%s c=%s", "tcp://10.0.0.1:5000", "file:///var/lib/a@b", "x@y");
	cr_assert_str_eq(buf, "a=tcp://10.0.0.1:5000 b=file:///var/lib/a@b c=x@y");
	logfmt_format(buf, sizeof(buf), "err=\"%s\"", "(expected redis://[user:password@]host:port)");
	cr_assert_str_eq(buf, "err=\"(expected redis://[user:password@]host:port)\"", "a usage text is not a URI");
}

/* "%.*s" of bytes with no NUL after them (a peer's GOAWAY text): nothing past the precision is read (ASan) */
Test(logfmt, a_precision_bounds_what_is_read)
{
	char buf[128], *raw = malloc(6);

	memcpy(raw, "abcdef", 6);
	logfmt_format(buf, sizeof(buf), "debug=\"%.*s\"", 6, raw);
	cr_assert_str_eq(buf, "debug=\"abcdef\"");
	logfmt_format(buf, sizeof(buf), "debug=%.*s", 3, raw);
	cr_assert_str_eq(buf, "debug=abc");
	free(raw);
}

Test(logfmt, libmmc_messages_mask_uri_passwords_too)
{
	mmc_set_log_handler(capture);
	lg_warn("cannot reach %s", "redis://u:hunter2@h:1");
	mmc_set_log_handler(NULL);
	cr_assert_str_eq(captured, "cannot reach redis://u:***@h:1");
}
