#include "json_lex.h"

#include <string.h>

void jlex_ws(struct jlex *x)
{
	while (x->p < x->end && (*x->p == ' ' || *x->p == '\n' || *x->p == '\r' || *x->p == '\t'))
		x->p++;
}

int jlex_peek(struct jlex *x)
{
	jlex_ws(x);
	return x->p < x->end ? (unsigned char)*x->p : -1;
}

bool jlex_done(struct jlex *x)
{
	jlex_ws(x);
	return x->p == x->end;
}

#define ONES  UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* Whether any of the 8 bytes of x is below n (n <= 128), or zero. */
#define BELOW(x, n) (((x)-ONES * (n)) & ~(x)&HIGHS)
#define ZERO(x)     BELOW(x, 1)

/*
 * The length of the run at p of bytes a string holds as they are: printable ASCII but '"' and '\\'. Control
 * characters and UTF-8 end the run too: jansson checks them, so they are its business. Eight bytes at a time,
 * since snapshot bodies are megabytes of URIs.
 */
static size_t plain_run(const char *p, const char *end)
{
	const char *q = p;
	uint64_t x, m;

	for (; end - q >= 8; q += 8) {
		memcpy(&x, q, 8);
		m = (x & HIGHS) | BELOW(x, 0x20) | ZERO(x ^ (ONES * '"')) | ZERO(x ^ (ONES * '\\')) |
		    ZERO(x ^ (ONES * 0x7f));
		if (m) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			/* the lowest flag is exact: a false one can only follow (be above) a true one */
			return (size_t)(q - p) + (size_t)__builtin_ctzll(m) / 8;
#else
			break;
#endif
		}
	}
	while (q < end && *q >= 0x20 && *q <= 0x7e && *q != '"' && *q != '\\')
		q++;
	return (size_t)(q - p);
}

bool jlex_plain(struct jlex *x, const char **s, size_t *len)
{
	if (!jlex_lit(x, '"'))
		return false;
	*s = x->p;
	*len = plain_run(x->p, x->end);
	x->p += *len;
	return x->p < x->end && *x->p++ == '"';
}

/* One escape after a backslash: the character it stands for, or 0 for \u and anything invalid. */
static char unescape(char c)
{
	static const char in[] = "\"\\/bfnrt", out[] = "\"\\/\b\f\n\r\t";
	const char *q = c ? memchr(in, c, sizeof(in) - 1) : NULL;

	return q ? out[q - in] : 0;
}

const char *jlex_str(struct jlex *x, char **out, size_t *len)
{
	char *start = *out, *o = *out, c;
	size_t run;

	if (!jlex_lit(x, '"'))
		return NULL;
	for (;;) {
		run = plain_run(x->p, x->end);
		memcpy(o, x->p, run);
		o += run;
		x->p += run;
		if (x->p == x->end)
			return NULL;
		c = *x->p++;
		if (c == '"')
			break;
		if (c != '\\' || x->p == x->end || !(c = unescape(*x->p++)))
			return NULL;
		*o++ = c;
	}
	*o = '\0';
	*out = o + 1;
	if (len)
		*len = (size_t)(o - start);
	return start;
}

bool jlex_int64(struct jlex *x, int64_t *out)
{
	bool neg;
	uint64_t u = 0, lim;
	const char *d;

	jlex_ws(x);
	neg = x->p < x->end && *x->p == '-';
	d = x->p + neg;
	lim = neg ? UINT64_C(1) << 63 : (uint64_t)INT64_MAX;
	/* jansson reads "-0" as an integer 0 but "-0" with a leading zero as invalid: both are left to it */
	if (d == x->end || *d < '0' || *d > '9' ||
	    (*d == '0' && (neg || (d + 1 < x->end && d[1] >= '0' && d[1] <= '9'))))
		return false;
	for (; d < x->end && *d >= '0' && *d <= '9'; d++) {
		if (u > (lim - (uint64_t)(*d - '0')) / 10)
			return false; /* jansson reads it as a real, or refuses it */
		u = u * 10 + (uint64_t)(*d - '0');
	}
	if (d < x->end && (*d == '.' || *d == 'e' || *d == 'E'))
		return false;
	*out = neg ? (int64_t)(0 - u) : (int64_t)u;
	x->p = d;
	return true;
}

static bool word(struct jlex *x, const char *w, size_t n)
{
	if ((size_t)(x->end - x->p) < n || memcmp(x->p, w, n) != 0)
		return false;
	x->p += n;
	return true;
}

bool jlex_bool(struct jlex *x, bool *v)
{
	jlex_ws(x);
	if (word(x, "true", 4))
		return (*v = true);
	*v = false;
	return word(x, "false", 5);
}

bool jlex_is(const char *k, size_t len, const char *name)
{
	return strlen(name) == len && memcmp(k, name, len) == 0;
}

/*
 * The items of a container between opening and closing, each read by fn (none is fine): at most JLEX_DEPTH_MAX
 * containers are open at once.
 */
static bool items(struct jlex *x, char opening, char closing, jlex_elem_fn *fn, void *ctx)
{
	if (x->depth == JLEX_DEPTH_MAX || !jlex_lit(x, opening))
		return false;
	x->depth++;
	if (!jlex_lit(x, closing)) {
		do {
			if (!fn(x, ctx))
				return false;
		} while (jlex_lit(x, ','));
		if (!jlex_lit(x, closing))
			return false;
	}
	x->depth--;
	return true;
}

struct members {
	jlex_member_fn *fn;
	void *ctx;
};

/* One member: its name, the colon, then the caller's reading of the value. */
static bool member(struct jlex *x, void *arg)
{
	const struct members *m = arg;
	const char *k;
	size_t len;

	return jlex_plain(x, &k, &len) && jlex_lit(x, ':') && m->fn(x, k, len, m->ctx);
}

bool jlex_object(struct jlex *x, jlex_member_fn *fn, void *ctx)
{
	struct members m = {fn, ctx};

	return items(x, '{', '}', member, &m);
}

bool jlex_array(struct jlex *x, jlex_elem_fn *fn, void *ctx)
{
	return items(x, '[', ']', fn, ctx);
}
