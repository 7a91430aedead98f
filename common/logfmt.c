#include "logfmt.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "uri_mask.h"

struct out {
	char *p;
	size_t len; /* capacity, including the NUL */
	size_t n;   /* bytes written so far */
};

static void put(struct out *o, char c)
{
	if (o->n + 1 < o->len)
		o->p[o->n++] = c;
}

static void puts_n(struct out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put(o, s[i]);
}

static bool needs_quotes(const char *s, size_t n)
{
	if (n == 0)
		return true;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= ' ' || c == 0x7f || c == '"' || c == '=' || c == '\\')
			return true;
	}
	return false;
}

static void put_escaped(struct out *o, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			put(o, '\\');
			put(o, (char)c);
		} else if (c == '\n' || c == '\r' || c == '\t') {
			put(o, '\\');
			put(o, c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
		} else if (c < ' ' || c == 0x7f) {
			puts_n(o, "\\x", 2);
			put(o, hex[c >> 4]);
			put(o, hex[c & 15]);
		} else {
			put(o, (char)c);
		}
	}
}

/* One conversion specification, with any `*` width or precision already read from the arguments. */
struct spec {
	char text[48]; /* "%-08.3lld": the specification rewritten with numbers for `*` */
	size_t tn;
	char length[3]; /* "", "h", "hh", "l", "ll", "z", "j", "t", "L" */
	char conv;
	bool width;
	int precision; /* -1: none */
};

static void spec_add(struct spec *s, char c)
{
	if (s->tn + 1 < sizeof(s->text))
		s->text[s->tn++] = c;
	s->text[s->tn] = '\0';
}

static void spec_add_int(struct spec *s, int v)
{
	char num[16];

	snprintf(num, sizeof(num), "%d", v);
	for (char *c = num; *c; c++)
		spec_add(s, *c);
}

/* Reads the specification that starts after '%' at f; returns where it ends (past the conversion character). */
static const char *spec_parse(const char *f, struct spec *s, va_list *ap)
{
	memset(s, 0, sizeof(*s));
	s->precision = -1;
	spec_add(s, '%');
	while (*f && strchr("-+ #0'", *f))
		spec_add(s, *f++);
	if (*f == '*') {
		spec_add_int(s, va_arg(*ap, int));
		s->width = true;
		f++;
	}
	for (; *f >= '0' && *f <= '9'; f++) {
		spec_add(s, *f);
		s->width = true;
	}
	if (*f == '.') {
		spec_add(s, *f++);
		s->precision = 0;
		if (*f == '*') {
			s->precision = va_arg(*ap, int);
			spec_add_int(s, s->precision);
			f++;
		}
		for (; *f >= '0' && *f <= '9'; f++) {
			s->precision = s->precision * 10 + (*f - '0');
			spec_add(s, *f);
		}
	}
	for (size_t i = 0; *f && strchr("hlzjtLq", *f) && i < 2; i++) {
		s->length[i] = *f == 'q' ? 'l' : *f;
		if (*f == 'q')
			s->length[++i] = 'l';
		spec_add(s, s->length[i]);
		f++;
	}
	s->conv = *f;
	if (*f) {
		spec_add(s, *f);
		f++;
	}
	return f;
}

/* The formats are built above from the caller's own (checked) format string, one conversion at a time. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"

static int format_signed(char *tmp, size_t len, const struct spec *s, va_list *ap)
{
	if (!strcmp(s->length, "ll"))
		return snprintf(tmp, len, s->text, va_arg(*ap, long long));
	if (!strcmp(s->length, "l"))
		return snprintf(tmp, len, s->text, va_arg(*ap, long));
	if (!strcmp(s->length, "z"))
		return snprintf(tmp, len, s->text, va_arg(*ap, ssize_t));
	if (!strcmp(s->length, "j"))
		return snprintf(tmp, len, s->text, va_arg(*ap, intmax_t));
	if (!strcmp(s->length, "t"))
		return snprintf(tmp, len, s->text, va_arg(*ap, ptrdiff_t));
	return snprintf(tmp, len, s->text, va_arg(*ap, int)); /* "", h, hh: promoted to int */
}

static int format_unsigned(char *tmp, size_t len, const struct spec *s, va_list *ap)
{
	if (!strcmp(s->length, "ll"))
		return snprintf(tmp, len, s->text, va_arg(*ap, unsigned long long));
	if (!strcmp(s->length, "l"))
		return snprintf(tmp, len, s->text, va_arg(*ap, unsigned long));
	if (!strcmp(s->length, "z"))
		return snprintf(tmp, len, s->text, va_arg(*ap, size_t));
	if (!strcmp(s->length, "j"))
		return snprintf(tmp, len, s->text, va_arg(*ap, uintmax_t));
	if (!strcmp(s->length, "t"))
		return snprintf(tmp, len, s->text, va_arg(*ap, ptrdiff_t));
	return snprintf(tmp, len, s->text, va_arg(*ap, unsigned int));
}

/* Formats one non-string conversion into tmp; returns its length, or -1 for a conversion this does not know. */
static int format_scalar(char *tmp, size_t len, const struct spec *s, va_list *ap)
{
	switch (s->conv) {
	case 'd':
	case 'i':
		return format_signed(tmp, len, s, ap);
	case 'u':
	case 'o':
	case 'x':
	case 'X':
		return format_unsigned(tmp, len, s, ap);
	case 'c':
		return snprintf(tmp, len, s->text, va_arg(*ap, int));
	case 'p':
		return snprintf(tmp, len, s->text, va_arg(*ap, void *));
	case 'e':
	case 'E':
	case 'f':
	case 'F':
	case 'g':
	case 'G':
	case 'a':
	case 'A':
		if (!strcmp(s->length, "L"))
			return snprintf(tmp, len, s->text, va_arg(*ap, long double));
		return snprintf(tmp, len, s->text, va_arg(*ap, double));
	default:
		return -1;
	}
}

/*
 * The first max bytes of str (up to its NUL) as a string in buf. A URI the cut ends inside is dropped after its
 * "://": cut before its '@', its password could not be told from its host, and part of it would reach the log.
 */
static const char *bound(const char *str, size_t max, char *buf, size_t len)
{
	size_t k = strnlen(str, max);
	char *uri;

	if (k >= len)
		k = len - 1;
	memcpy(buf, str, k);
	buf[k] = '\0';
	if (k == max && (uri = strstr(buf, "://")) && !strpbrk(uri, " \t\n\"'") && (size_t)(uri - buf) + 6 < len)
		memcpy(uri, "://***", 7);
	return buf;
}

static void format_string(struct out *o, const struct spec *s, const char *str, bool quoted, bool value)
{
	char tmp[1024], masked[MMC_LOGFMT_ARG_MAX], bounded[MMC_LOGFMT_ARG_MAX];
	size_t n;

	if (!str)
		str = "(null)";
	if (s->precision >= 0) /* "%.*s" of bytes that need not end in a NUL: read no further than the precision */
		str = bound(str, (size_t)s->precision, bounded, sizeof(bounded));
	/* whatever the line, a URI's password never reaches a log */
	if (strstr(str, "://")) {
		uri_mask(str, masked, sizeof(masked));
		str = masked;
	}
	n = s->precision >= 0 ? strnlen(str, (size_t)s->precision) : strlen(str);
	if (s->width) { /* a padded column, not a field value */
		int w = snprintf(tmp, sizeof(tmp), s->text, str);

		puts_n(o, tmp, w < 0 ? 0 : (size_t)w < sizeof(tmp) ? (size_t)w : sizeof(tmp) - 1);
	} else if (quoted) {
		put_escaped(o, str, n);
	} else if (value && needs_quotes(str, n)) {
		put(o, '"');
		put_escaped(o, str, n);
		put(o, '"');
	} else {
		puts_n(o, str, n);
	}
}

#pragma GCC diagnostic pop

/*
 * Quoted spans of the format: one opened right after `=` is a field value and ends only at a `"` that a space or
 * the end follows, so `err=\"data dir \"%s\" is in use\"` is one field (its inner quotes come out escaped); one
 * opened anywhere else is prose (`cannot open \"%s\"`) and ends at the next `"`.
 */
enum span { SPAN_NONE, SPAN_FIELD, SPAN_PROSE };

static void quote_literal(struct out *o, enum span *q, const char *fmt, const char *f)
{
	if (*f != '"') {
		put(o, *f);
		return;
	}
	if (*q == SPAN_NONE) {
		*q = f > fmt && f[-1] == '=' ? SPAN_FIELD : SPAN_PROSE;
	} else if (*q == SPAN_PROSE || f[1] == ' ' || f[1] == '\0') {
		*q = SPAN_NONE;
	} else {
		put(o, '\\'); /* a quote inside a field value */
	}
	put(o, '"');
}

size_t logfmt_vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
	struct out o = {buf, len, 0};
	enum span quoted = SPAN_NONE;
	va_list args;

	if (len == 0)
		return 0;
	va_copy(args, ap);
	for (const char *f = fmt; *f;) {
		struct spec s;
		char tmp[512];
		int n;

		if (*f != '%') {
			quote_literal(&o, &quoted, fmt, f++);
			continue;
		}
		if (f[1] == '%') {
			put(&o, '%');
			f += 2;
			continue;
		}
		bool value = quoted == SPAN_NONE && f > fmt && f[-1] == '=';

		f = spec_parse(f + 1, &s, &args);
		if (s.conv == 's') {
			format_string(&o, &s, va_arg(args, const char *), quoted != SPAN_NONE, value);
			continue;
		}
		n = format_scalar(tmp, sizeof(tmp), &s, &args);
		if (n < 0) /* an unknown conversion: its argument type is unknown too, so stop here */
			break;
		puts_n(&o, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
	}
	va_end(args);
	o.p[o.n] = '\0';
	return o.n;
}

size_t logfmt_format(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	n = logfmt_vformat(buf, len, fmt, ap);
	va_end(ap);
	return n;
}
