#include "regbuf.h"

#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "mmc/mmc.h"

#define LOOKBACK 8 /* overlapping registrations: how many earlier starts to try */

void regbufs_init(struct regbufs *r)
{
	pthread_rwlock_init(&r->lock, NULL);
	r->v = NULL;
	r->n = r->cap = 0;
}

void regbufs_fini(struct regbufs *r)
{
	for (size_t i = 0; i < r->n; i++)
		fabric_mr_close(&r->v[i].mr);
	free(r->v);
	r->v = NULL;
	r->n = r->cap = 0;
	pthread_rwlock_destroy(&r->lock);
}

/* Index of the first entry whose addr > a. */
static size_t upper(const struct regbufs *r, uintptr_t a)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->v[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int regbufs_add(struct regbufs *r, struct fabric *f, void *buf, size_t len)
{
	struct regbuf e = {(uintptr_t)buf, len, {0}}, *v;
	size_t at;
	int rc;

	if (fabric_mr_reg(f, buf, len, false, &e.mr))
		return MMC_ERROR;
	pthread_rwlock_wrlock(&r->lock);
	if (!(v = array_grow(r->v, &r->cap, r->n + 1, sizeof(*v), 16))) {
		rc = MMC_MALLOC_FAILED;
		goto out;
	}
	r->v = v;
	at = upper(r, e.addr);
	memmove(&r->v[at + 1], &r->v[at], (r->n - at) * sizeof(*r->v));
	r->v[at] = e;
	r->n++;
	rc = 0;
out:
	pthread_rwlock_unlock(&r->lock);
	if (rc)
		fabric_mr_close(&e.mr);
	return rc;
}

int regbufs_del(struct regbufs *r, void *buf, size_t len)
{
	int rc = MMC_INVALID_PARAM;

	pthread_rwlock_wrlock(&r->lock);
	for (size_t i = 0; i < r->n; i++) {
		if (r->v[i].addr == (uintptr_t)buf && r->v[i].len == len) {
			fabric_mr_close(&r->v[i].mr);
			memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof(*r->v));
			r->n--;
			rc = 0;
			break;
		}
	}
	pthread_rwlock_unlock(&r->lock);
	return rc;
}

const struct regbuf *regbufs_find(const struct regbufs *r, const void *buf, size_t len)
{
	uintptr_t a = (uintptr_t)buf;
	size_t i = upper(r, a);

	for (size_t k = 0; k < LOOKBACK && i > 0; k++, i--) {
		const struct regbuf *e = &r->v[i - 1];

		if (a - e->addr <= e->len && len <= e->len - (a - e->addr))
			return e;
	}
	return NULL;
}
