#include "uri_mask.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

struct sink {
	char *p;
	size_t len; /* capacity, including the NUL */
	size_t n;
};

static void put_n(struct sink *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n && o->n + 1 < o->len; i++)
		o->p[o->n++] = s[i];
}

static bool scheme_char(char c)
{
	return isalnum((unsigned char)c) || c == '+' || c == '-' || c == '.';
}

static bool ends_uri(char c)
{
	return c == '\0' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '\'';
}

/* The URI whose authority starts at a (just past "://"): copies it to o, masked; returns where it ends. */
static const char *mask_one(struct sink *o, const char *scheme, const char *a)
{
	const char *end = a, *at = NULL, *colon;

	while (!ends_uri(*end)) {
		if (*end == '@')
			at = end;
		end++;
	}
	/* '[' never starts user information: "redis://[user:password@]host" is a usage text, not a URI */
	if (!at || *a == '[' || ((size_t)(a - scheme) == 7 && strncmp(scheme, "file://", 7) == 0)) {
		put_n(o, a, (size_t)(end - a));
		return end;
	}
	colon = memchr(a, ':', (size_t)(at - a));
	if (colon)
		put_n(o, a, (size_t)(colon - a) + 1); /* the user stays: it names the account, it is not the secret */
	put_n(o, "***", 3);
	put_n(o, at, (size_t)(end - at));
	return end;
}

size_t uri_mask(const char *text, char *out, size_t outlen)
{
	struct sink o = {out, outlen, 0};
	const char *p = text, *sep;

	if (outlen == 0)
		return 0;
	while ((sep = strstr(p, "://"))) {
		const char *scheme = sep;

		while (scheme > p && scheme_char(scheme[-1]))
			scheme--;
		put_n(&o, p, (size_t)(sep + 3 - p));
		p = mask_one(&o, scheme, sep + 3);
	}
	put_n(&o, p, strlen(p));
	out[o.n] = '\0';
	return o.n;
}

bool uri_userinfo_maskable(const char *uri)
{
	const char *a = strstr(uri, "://"), *at;

	if (!a || !(at = strrchr(a += 3, '@')))
		return true;
	for (; a < at; a++)
		if (*a != '\0' && ends_uri(*a))
			return false;
	return true;
}
