#include "json_in.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *jd_parse(const char *body, size_t len)
{
	json_error_t err;
	json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err);

	if (j && !json_is_object(j)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

bool jd_containers_over(const char *body, size_t len, size_t most)
{
	size_t n = 0;
	bool in_str = false;

	for (size_t i = 0; i < len; i++) {
		char c = body[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if ((c == '{' || c == '[') && ++n > most) {
			return true;
		}
	}
	return false;
}

/* block_keys -> blockKeys: protobuf's json_name, which parsers accept as well. */
static void camel(const char *name, char *out, size_t outlen)
{
	size_t n = 0;
	bool up = false;

	for (; *name && n + 1 < outlen; name++) {
		if (*name == '_') {
			up = true;
			continue;
		}
		out[n++] = up && *name >= 'a' && *name <= 'z' ? (char)(*name - 32) : *name;
		up = false;
	}
	out[n] = '\0';
}

json_t *jd_get(json_t *obj, const char *name)
{
	json_t *v = json_object_get(obj, name);
	char alt[96];

	if (!v && strchr(name, '_')) {
		camel(name, alt, sizeof(alt));
		v = json_object_get(obj, alt);
	}
	return v && !json_is_null(v) ? v : NULL;
}

static void bad(struct jd *d, const char *name, const char *want)
{
	if (!d->bad)
		snprintf(d->why, sizeof(d->why), "field \"%s\": expected %s", name, want);
	d->bad = true;
}

const char *jd_str(struct jd *d, json_t *obj, const char *name)
{
	json_t *v = jd_get(obj, name);

	if (!v)
		return "";
	if (!json_is_string(v)) {
		bad(d, name, "a string");
		return "";
	}
	return json_string_value(v);
}

bool jd_bool(struct jd *d, json_t *obj, const char *name)
{
	json_t *v = jd_get(obj, name);

	if (!v)
		return false;
	if (!json_is_boolean(v)) {
		bad(d, name, "a bool");
		return false;
	}
	return json_is_true(v);
}

bool jd_val_i64(json_t *v, int64_t *out)
{
	double r;

	if (json_is_integer(v)) {
		*out = (int64_t)json_integer_value(v);
		return true;
	}
	if (json_is_real(v)) {
		r = json_real_value(v);
		if (r != floor(r) || r < -9.2233720368547758e18 || r >= 9.2233720368547758e18)
			return false;
		*out = (int64_t)r;
		return true;
	}
	return json_is_string(v) && jd_str_i64(json_string_value(v), out);
}

bool jd_str_i64(const char *s, int64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	return *s && !*end && errno == 0 && !(s[0] == ' ' || s[0] == '\t');
}

int64_t jd_i64(struct jd *d, json_t *obj, const char *name)
{
	json_t *v = jd_get(obj, name);
	int64_t x = 0;

	if (v && !jd_val_i64(v, &x)) {
		bad(d, name, "an integer");
		return 0;
	}
	return x;
}

int32_t jd_i32(struct jd *d, json_t *obj, const char *name)
{
	int64_t x = jd_i64(d, obj, name);

	if (x < INT32_MIN || x > INT32_MAX) {
		bad(d, name, "a 32-bit integer");
		return 0;
	}
	return (int32_t)x;
}

bool jd_val_enum(json_t *v, const struct enum_desc *e, int *out)
{
	int64_t n;

	if (json_is_string(v))
		return jd_str_enum(json_string_value(v), e, out);
	if (!jd_val_i64(v, &n) || n < INT32_MIN || n > INT32_MAX)
		return false;
	*out = (int)n;
	return true;
}

bool jd_str_enum(const char *s, const struct enum_desc *e, int *out)
{
	int64_t n;

	if (enum_value(e, s, out))
		return true;
	if (jd_str_i64(s, &n)) {
		if (n < INT32_MIN || n > INT32_MAX)
			return false;
		*out = (int)n;
		return true;
	}
	*out = 0; /* an unknown name keeps the default */
	return true;
}

int jd_enum(struct jd *d, json_t *obj, const char *name, const struct enum_desc *e)
{
	json_t *v = jd_get(obj, name);
	int x = 0;

	if (v && !jd_val_enum(v, e, &x)) {
		bad(d, name, e->type);
		return 0;
	}
	return x;
}

static json_t *jd_typed(struct jd *d, json_t *obj, const char *name, json_type type, const char *want)
{
	json_t *v = jd_get(obj, name);

	if (v && json_typeof(v) != type) {
		bad(d, name, want);
		return NULL;
	}
	return v;
}

json_t *jd_obj(struct jd *d, json_t *obj, const char *name)
{
	return jd_typed(d, obj, name, JSON_OBJECT, "an object");
}

json_t *jd_arr(struct jd *d, json_t *obj, const char *name)
{
	return jd_typed(d, obj, name, JSON_ARRAY, "an array");
}

/* Converts one element of a repeated field into the slot at out; false when it has the wrong type. */
typedef bool elem_fn(json_t *v, void *out);

/*
 * A repeated field: its n elements converted by conv into a malloc'd array of elem-byte slots at *out. 0 and
 * *out NULL when it is absent or empty; also when it has more than max elements or no memory is left (d->too_many:
 * a clean INVALID_ARGUMENT), or an element of the wrong type (d bad: want names what it should be).
 */
static size_t repeated(struct jd *d, json_t *obj, const char *name, size_t max, size_t elem, elem_fn *conv,
                       const char *want, void **out)
{
	json_t *a = jd_arr(d, obj, name);
	size_t n = a ? json_array_size(a) : 0;
	char *v;

	*out = NULL;
	if (!n)
		return 0;
	if (n > max || !(v = malloc(n * elem))) {
		d->too_many = true;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (!conv(json_array_get(a, i), v + i * elem)) {
			bad(d, name, want);
			free(v);
			return 0;
		}
	}
	*out = v;
	return n;
}

static bool elem_i64(json_t *v, void *out)
{
	return jd_val_i64(v, out);
}

static bool elem_str(json_t *v, void *out)
{
	return (*(const char **)out = json_string_value(v)) != NULL;
}

size_t jd_i64s(struct jd *d, json_t *obj, const char *name, int64_t **out, size_t max)
{
	void *v;
	size_t n = repeated(d, obj, name, max, sizeof(int64_t), elem_i64, "integers", &v);

	*out = v;
	return n;
}

size_t jd_strs(struct jd *d, json_t *obj, const char *name, const char ***out, size_t max)
{
	void *v;
	size_t n = repeated(d, obj, name, max, sizeof(char *), elem_str, "strings", &v);

	*out = v;
	return n;
}

static json_t *norm_value(struct jd *d, const struct jfield *f, json_t *v);

static json_t *norm_default(const struct jfield *f)
{
	char b[24];
	int e;

	switch (f->type) {
	case JF_STR:
		return json_string("");
	case JF_I32:
		return json_integer(0);
	case JF_I64:
		snprintf(b, sizeof(b), "%lld", f->sub ? (long long)*(const int64_t *)f->sub : 0LL);
		return json_string(b);
	case JF_BOOL:
		return json_boolean(f->sub && *(const bool *)f->sub);
	case JF_DBL:
		return json_real(0);
	case JF_ENUM:
		e = ((const struct enum_desc *)f->sub)->values[0];
		snprintf(b, sizeof(b), "%s", enum_name(f->sub, e) ? enum_name(f->sub, e) : "0");
		return json_string(b);
	case JF_REP_STR:
	case JF_REP_MSG:
		return json_array();
	case JF_MAP_STR:
		return json_object();
	case JF_MSG:
		return NULL;
	}
	return NULL;
}

static json_t *norm_scalar(struct jd *d, const struct jfield *f, json_t *v)
{
	int64_t n;
	int e;
	char b[24];

	switch (f->type) {
	case JF_STR:
		return json_is_string(v) ? json_incref(v) : NULL;
	case JF_BOOL:
		return json_is_boolean(v) ? json_incref(v) : NULL;
	case JF_I32:
		return jd_val_i64(v, &n) && n >= INT32_MIN && n <= INT32_MAX ? json_integer(n) : NULL;
	case JF_I64:
		if (!jd_val_i64(v, &n))
			return NULL;
		snprintf(b, sizeof(b), "%lld", (long long)n);
		return json_string(b);
	case JF_DBL:
		if (json_is_number(v))
			return json_real(json_number_value(v));
		return NULL;
	case JF_ENUM:
		if (!jd_val_enum(v, f->sub, &e))
			return NULL;
		return enum_name(f->sub, e) ? json_string(enum_name(f->sub, e)) : json_integer(e);
	default:
		return NULL;
	}
}

static json_t *norm_array(struct jd *d, const struct jfield *f, json_t *v)
{
	struct jfield elem = {f->name, f->type == JF_REP_STR ? JF_STR : JF_MSG, f->sub};
	json_t *out;

	if (!json_is_array(v))
		return NULL;
	out = json_array();
	for (size_t i = 0; out && i < json_array_size(v); i++) {
		json_t *e = norm_value(d, &elem, json_array_get(v, i));

		if (!e || json_array_append_new(out, e)) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

static json_t *norm_map(json_t *v)
{
	const char *k;
	json_t *e, *out;

	if (!json_is_object(v))
		return NULL;
	out = json_object();
	json_object_foreach(v, k, e)
	{
		if (!json_is_string(e)) {
			json_decref(out);
			return NULL;
		}
		json_object_set(out, k, e);
	}
	return out;
}

static json_t *norm_value(struct jd *d, const struct jfield *f, json_t *v)
{
	switch (f->type) {
	case JF_MSG:
		return jd_normalize(d, v, f->sub);
	case JF_REP_STR:
	case JF_REP_MSG:
		return norm_array(d, f, v);
	case JF_MAP_STR:
		return norm_map(v);
	default:
		return norm_scalar(d, f, v);
	}
}

json_t *jd_normalize(struct jd *d, json_t *in, const struct jfield *schema)
{
	json_t *out;

	if (!json_is_object(in)) {
		bad(d, "(message)", "an object");
		return NULL;
	}
	out = json_object();
	if (!out)
		return NULL;
	for (const struct jfield *f = schema; f->name; f++) {
		json_t *v = jd_get(in, f->name), *n;

		n = v ? norm_value(d, f, v) : norm_default(f);
		if (v && !n) {
			bad(d, f->name, "another type");
			json_decref(out);
			return NULL;
		}
		if (n)
			json_object_set_new(out, f->name, n);
	}
	return out;
}

const char *jn_str(json_t *obj, const char *name)
{
	const char *s = json_string_value(json_object_get(obj, name));

	return s ? s : "";
}

int64_t jn_i64(json_t *obj, const char *name)
{
	int64_t x = 0;
	json_t *v = json_object_get(obj, name);

	if (v)
		jd_val_i64(v, &x);
	return x;
}

int jn_enum(json_t *obj, const char *name, const struct enum_desc *e)
{
	int x = 0;
	json_t *v = json_object_get(obj, name);

	if (v)
		jd_val_enum(v, e, &x);
	return x;
}

double jn_double(json_t *obj, const char *name)
{
	json_t *v = json_object_get(obj, name);

	return v && json_is_number(v) ? json_number_value(v) : 0;
}
