#include "json_out.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jw_init(struct jw *w)
{
	memset(w, 0, sizeof(*w));
}

void jw_free(struct jw *w)
{
	free(w->buf);
	jw_init(w);
}

void jw_reset(struct jw *w)
{
	w->len = 0;
	w->comma = false;
	w->oom = false;
}

char *jw_take(struct jw *w, size_t *len)
{
	char *b = w->buf;

	*len = w->len;
	jw_init(w);
	return b;
}

static bool grow(struct jw *w, size_t n)
{
	size_t cap;
	char *b;

	if (w->oom)
		return false;
	if (w->max && w->len + n > w->max) {
		w->oom = true;
		return false;
	}
	cap = w->cap ? w->cap : 1024;
	while (cap < w->len + n)
		cap *= 2;
	b = realloc(w->buf, cap);
	if (!b) {
		w->oom = true;
		return false;
	}
	w->buf = b;
	w->cap = cap;
	return true;
}

static inline bool reserve(struct jw *w, size_t n)
{
	return w->len + n <= w->cap || grow(w, n);
}

static inline void put(struct jw *w, const char *s, size_t n)
{
	if (!reserve(w, n))
		return;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

static inline void putc_(struct jw *w, char c)
{
	if (!reserve(w, 1))
		return;
	w->buf[w->len++] = c;
}

static inline void sep(struct jw *w)
{
	if (w->comma)
		putc_(w, ',');
	w->comma = true;
}

static inline void opening(struct jw *w, char c)
{
	sep(w);
	putc_(w, c);
	w->comma = false;
}

static inline void closing(struct jw *w, char c)
{
	putc_(w, c);
	w->comma = true;
}

void jw_obj(struct jw *w)
{
	opening(w, '{');
}

void jw_obj_end(struct jw *w)
{
	closing(w, '}');
}

void jw_arr(struct jw *w)
{
	opening(w, '[');
}

void jw_arr_end(struct jw *w)
{
	closing(w, ']');
}

static void quoted(struct jw *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t run = 0;

	if (!reserve(w, n + 2))
		return;
	w->buf[w->len++] = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		put(w, s + run, i - run);
		run = i + 1;
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			put(w, e, 2);
		} else if (c == '\n') {
			put(w, "\\n", 2);
		} else if (c == '\t') {
			put(w, "\\t", 2);
		} else {
			char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};

			put(w, esc, 6);
		}
	}
	put(w, s + run, n - run);
	putc_(w, '"');
}

void jw_key(struct jw *w, const char *key)
{
	sep(w);
	quoted(w, key, strlen(key));
	putc_(w, ':');
	w->comma = false;
}

void jw_strn(struct jw *w, const char *s, size_t n)
{
	sep(w);
	quoted(w, s, n);
}

void jw_str(struct jw *w, const char *s)
{
	jw_strn(w, s ? s : "", s ? strlen(s) : 0);
}

/* A number (or a quoted one) formatted as fmt says: numbers are short, so a stack buffer holds any. */
__attribute__((format(printf, 2, 3))) static void number(struct jw *w, const char *fmt, ...)
{
	char b[40];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	sep(w);
	put(w, b, (size_t)n);
}

void jw_int(struct jw *w, long long v)
{
	number(w, "%lld", v);
}

void jw_i64s(struct jw *w, int64_t v)
{
	number(w, "\"%" PRId64 "\"", v);
}

void jw_u64s(struct jw *w, uint64_t v)
{
	number(w, "\"%" PRIu64 "\"", v);
}

void jw_bool(struct jw *w, bool v)
{
	sep(w);
	put(w, v ? "true" : "false", v ? 4 : 5);
}

void jw_double(struct jw *w, double v)
{
	number(w, "%.17g", v);
}

void jw_raw(struct jw *w, const char *json, size_t n)
{
	sep(w);
	put(w, json, n);
}

void jw_json(struct jw *w, const void *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);

	if (!s) {
		w->oom = true;
		return;
	}
	jw_raw(w, s, strlen(s));
	free(s);
}

void jw_kstr(struct jw *w, const char *key, const char *s)
{
	jw_key(w, key);
	jw_str(w, s);
}

void jw_kint(struct jw *w, const char *key, long long v)
{
	jw_key(w, key);
	jw_int(w, v);
}

void jw_ki64s(struct jw *w, const char *key, int64_t v)
{
	jw_key(w, key);
	jw_i64s(w, v);
}

void jw_kbool(struct jw *w, const char *key, bool v)
{
	jw_key(w, key);
	jw_bool(w, v);
}
