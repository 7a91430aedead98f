/*
 * The JSON lexer under the fast request readers, alone: the subset it accepts (escapes, integers, literals,
 * nesting) and what it must decline so that jansson reads the body instead (truncated input, \u, control bytes,
 * UTF-8, numbers jansson reads differently, nesting past JLEX_DEPTH_MAX). The readers' replies are compared with
 * jansson's in test_key_read.c and test_report_read.c; this file pins the edges those bodies do not reach.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "json_lex.h"

static char strings[8192]; /* decoded strings of one parse */

static struct jlex lex(const char *text)
{
	struct jlex x;

	jlex_init(&x, text, strlen(text));
	return x;
}

static bool value(struct jlex *x);

static bool member(struct jlex *x, const char *name, size_t len, void *ctx)
{
	(*(int *)ctx)++;
	return value(x);
}

static bool element(struct jlex *x, void *ctx)
{
	(*(int *)ctx)++;
	return value(x);
}

/* Any value of the subset, read the way a reader would; false where a reader would decline. */
static bool value(struct jlex *x)
{
	char *out = strings;
	int64_t i;
	bool b;
	int n = 0;

	switch (jlex_peek(x)) {
	case '{':
		return jlex_object(x, member, &n);
	case '[':
		return jlex_array(x, element, &n);
	case '"':
		return jlex_str(x, &out, NULL) != NULL;
	case 't':
	case 'f':
		return jlex_bool(x, &b);
	default:
		return jlex_int64(x, &i);
	}
}

/* Whether text is one whole document of the subset. */
static bool whole(const char *text)
{
	struct jlex x = lex(text);

	return value(&x) && jlex_done(&x);
}

/* The decoded string of text, or NULL when the lexer declines it. */
static const char *decoded(const char *text, size_t *len)
{
	struct jlex x = lex(text);
	char *out = strings;

	return jlex_str(&x, &out, len);
}

Test(json_lex, short_escapes_are_decoded)
{
	size_t len;
	const char *s = decoded("\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\"", &len);

	cr_assert_not_null(s);
	cr_expect_eq(len, 17);
	cr_expect_str_eq(s, "a\"b\\c/d\be\ff\ng\rh\ti");
}

Test(json_lex, strings_jansson_must_read_are_declined)
{
	const char *declined[] = {
	    "\"\\u0041\"",     /* \u: jansson decodes (and checks) it */
	    "\"\\x\"",         /* not an escape */
	    "\"a\nb\"",        /* a raw control character */
	    "\"caf\xc3\xa9\"", /* UTF-8: jansson validates it */
	    "\"del\x7f\"",     /* DEL */
	    "\"open",          /* unterminated */
	    "\"ends\\",        /* a backslash at the end */
	    "'single'",
	};

	for (size_t i = 0; i < sizeof(declined) / sizeof(declined[0]); i++)
		cr_expect_null(decoded(declined[i], NULL), "case %zu accepted: %s", i, declined[i]);
}

Test(json_lex, escapes_decode_at_every_offset)
{
	/* the plain runs are scanned eight bytes at a time: put the escape at every position of a word */
	for (size_t at = 0; at < 24; at++) {
		char text[64], want[64];
		size_t len;
		const char *s;

		snprintf(text, sizeof(text), "\"%.*s\\n%.*s\"", (int)at, "abcdefghijklmnopqrstuvwxyz", 5, "ABCDE");
		snprintf(want, sizeof(want), "%.*s\n%.*s", (int)at, "abcdefghijklmnopqrstuvwxyz", 5, "ABCDE");
		s = decoded(text, &len);
		cr_assert_not_null(s, "offset %zu", at);
		cr_expect_str_eq(s, want, "offset %zu", at);
		cr_expect_eq(len, strlen(want), "offset %zu", at);
	}
}

Test(json_lex, plain_strings_stay_in_place)
{
	struct jlex x = lex("  \"block_keys\" :");
	const char *s;
	size_t len;

	cr_assert(jlex_plain(&x, &s, &len));
	cr_expect_eq(len, 10);
	cr_expect(jlex_is(s, len, "block_keys"));
	cr_expect_not(jlex_is(s, len, "block_key"));
	cr_expect(jlex_lit(&x, ':'));
	x = lex("\"esc\\\"aped\"");
	cr_expect_not(jlex_plain(&x, &s, &len), "a plain string has no escape");
}

Test(json_lex, integers_as_jansson_reads_them)
{
	const struct {
		const char *text;
		bool ok;
		int64_t v;
	} cases[] = {
	    {"0", true, 0},
	    {"7", true, 7},
	    {"-1", true, -1},
	    {"9223372036854775807", true, INT64_MAX},
	    {"-9223372036854775808", true, INT64_MIN},
	    {"9223372036854775808", false, 0}, /* past int64: jansson makes it a real */
	    {"-9223372036854775809", false, 0},
	    {"99999999999999999999", false, 0},
	    {"-0", false, 0}, /* left to jansson */
	    {"01", false, 0}, /* invalid JSON */
	    {"-01", false, 0},
	    {"1.5", false, 0}, /* reals */
	    {"1e3", false, 0},
	    {"2E3", false, 0},
	    {"-", false, 0},
	    {"", false, 0},
	    {"+1", false, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct jlex x = lex(cases[i].text);
		int64_t v = 42;
		bool ok = jlex_int64(&x, &v);

		cr_expect_eq(ok, cases[i].ok, "case %zu (%s)", i, cases[i].text);
		if (ok && cases[i].ok) {
			cr_expect_eq(v, cases[i].v, "case %zu (%s)", i, cases[i].text);
			cr_expect(jlex_done(&x), "case %zu (%s) left text", i, cases[i].text);
		}
	}
}

Test(json_lex, an_integer_stops_at_its_last_digit)
{
	struct jlex x = lex(" 12,3]");
	int64_t v;

	cr_assert(jlex_int64(&x, &v));
	cr_expect_eq(v, 12);
	cr_expect(jlex_lit(&x, ','));
	cr_assert(jlex_int64(&x, &v));
	cr_expect_eq(v, 3);
	cr_expect(jlex_lit(&x, ']'));
	cr_expect(jlex_done(&x));
}

Test(json_lex, literals)
{
	struct jlex x = lex("true false");
	bool b;

	cr_expect(jlex_bool(&x, &b) && b);
	cr_expect(jlex_bool(&x, &b) && !b);
	cr_expect(jlex_done(&x));
	x = lex("tru");
	cr_expect_not(jlex_bool(&x, &b));
	x = lex("null");
	cr_expect_not(jlex_bool(&x, &b), "null is jansson's business");
	cr_expect_not(whole("null"));
}

Test(json_lex, nesting_and_counts)
{
	struct jlex x = lex("{\"a\":[1,2,{\"b\":[]}],\"c\":{},\"d\":\"e\"}");
	int n = 0;

	cr_expect(jlex_object(&x, member, &n));
	cr_expect_eq(n, 3, "members of the outer object");
	cr_expect(jlex_done(&x));
	cr_expect_eq(x.depth, 0, "every container closed");
	cr_expect(whole("[]"));
	cr_expect(whole("{}"));
	cr_expect(whole(" [ 1 , \"x\" , true ] "));
	cr_expect(whole("\t{\r\n\"k\"\t:\n[ ]\r}\n"), "the four white-space characters");
}

Test(json_lex, malformed_containers_are_declined)
{
	const char *bad[] = {
	    "[1,]", "[,1]", "[1 2]", "{\"a\":1,}", "{\"a\" 1}", "{\"a\":}", "{a:1}", "{\"a\":1",     "[1",
	    "[",    "{",    "]",     "[1}",        "{\"a\":1]", "\v[]",     "[]\f",  "{\"a\\n\":1}", /* an escaped
	                                                                                                member name:
	                                                                                                never one a
	                                                                                                reader knows */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_not(whole(bad[i]), "case %zu accepted: %s", i, bad[i]);
}

Test(json_lex, every_truncation_is_declined)
{
	const char *doc = "{\"events\":[{\"event_type\":\"EVENT_BLOCK_ADD\",\"block_add\":{\"block_key\":\"7\","
	                  "\"specs\":[{\"name\":\"tp\\t0\",\"uri\":\"file:///x?size=1\"}]}}],\"n\":-123,\"ok\":true}";
	char cut[512];

	cr_assert(whole(doc));
	for (size_t len = 0; len < strlen(doc); len++) {
		struct jlex x;

		memcpy(cut, doc, len);
		cut[len] = 'X'; /* a byte past the end the lexer must never read */
		jlex_init(&x, cut, len);
		cr_expect_not(value(&x) && jlex_done(&x), "prefix of %zu bytes accepted", len);
	}
}

/* n arrays nested: "[[[...]]]" */
static const char *nested(char *buf, size_t n)
{
	memset(buf, '[', n);
	memset(buf + n, ']', n);
	buf[2 * n] = '\0';
	return buf;
}

Test(json_lex, depth_is_limited)
{
	char buf[2 * (JLEX_DEPTH_MAX + 2) + 1];
	char siblings[8 * JLEX_DEPTH_MAX] = "[";

	cr_expect(whole(nested(buf, JLEX_DEPTH_MAX)), "JLEX_DEPTH_MAX levels");
	cr_expect_not(whole(nested(buf, JLEX_DEPTH_MAX + 1)), "one level more");
	/* closing a container gives its level back: many siblings never reach the limit */
	for (int i = 0; i < 2 * JLEX_DEPTH_MAX; i++)
		strcat(siblings, i ? ",[]" : "[]");
	strcat(siblings, "]");
	cr_expect(whole(siblings));
}
