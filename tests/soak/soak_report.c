/* Counters: per-key result codes by operation, and the summary the parent prints at the end. */
#include <inttypes.h>
#include <mmc/mmc.h>
#include <stdio.h>
#include <string.h>

#include "soak.h"

/* MMC_OK, MMC_ERROR, -3000..-3019, -3101..-3106, then one slot for anything else. */
int soak_code_slot(int code)
{
	if (code == MMC_OK)
		return 0;
	if (code == MMC_ERROR)
		return 1;
	if (code <= -3000 && code >= -3019)
		return 2 + (-3000 - code);
	if (code <= -3101 && code >= -3106)
		return 22 + (-3101 - code);
	return SOAK_CODES - 1;
}

int soak_slot_code(int slot)
{
	if (slot == 0)
		return MMC_OK;
	if (slot == 1)
		return MMC_ERROR;
	if (slot < 22)
		return -3000 - (slot - 2);
	return slot < SOAK_CODES - 1 ? -3101 - (slot - 22) : 1;
}

void soak_count(struct soak_counts *c, enum soak_op op, int code)
{
	int slot = soak_code_slot(code);

	c->keys[op]++;
	c->codes[op][slot]++;
	if (slot == SOAK_CODES - 1)
		c->other_code[op] = (uint64_t)(int64_t)code;
}

const char *soak_op_name(enum soak_op op)
{
	static const char *const names[OP_KINDS] = {
	    "put_from", "batch_put_from", "batch_put_from_layers",
	    "get_into", "batch_get_into", "batch_get_into_layers",
	    "remove",   "batch_remove",
	};

	return names[op];
}

#define SUM(field)                                                                                                     \
	do {                                                                                                           \
		t->field += s->field;                                                                                  \
	} while (0)

static void sum_slot(struct soak_counts *t, const struct soak_counts *s)
{
	for (int op = 0; op < OP_KINDS; op++) {
		SUM(calls[op]);
		SUM(keys[op]);
		SUM(corrupt_op[op]);
		for (int k = 0; k < SOAK_CODES; k++)
			SUM(codes[op][k]);
		if (s->other_code[op])
			t->other_code[op] = s->other_code[op];
	}
	SUM(bytes_put);
	SUM(bytes_read);
	SUM(correct);
	SUM(miss);
	SUM(corrupt);
	SUM(stale);
	SUM(older);
	SUM(resurrected);
	SUM(doubtful);
	SUM(sweeps);
}

static void print_ops(const struct soak_counts *t)
{
	printf("soak: calls (keys):");
	for (int op = 0; op < OP_KINDS; op++)
		printf(" %s=%" PRIu64 " (%" PRIu64 ")", soak_op_name(op), t->calls[op], t->keys[op]);
	printf("\n");
}

/* The code behind the "other" slot, as text (one per operation is kept: the last one seen). */
static const char *other(uint64_t code)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), " (e.g. %d)", (int)(int64_t)code);
	return buf;
}

/* One line per code that occurred, with how often each operation got it (per key). */
static void print_codes(const struct soak_counts *t)
{
	for (int k = 1; k < SOAK_CODES; k++) {
		uint64_t n = 0;

		for (int op = 0; op < OP_KINDS; op++)
			n += t->codes[op][k];
		if (!n)
			continue;
		if (k == SOAK_CODES - 1)
			printf("soak: other codes: %" PRIu64 " =", n);
		else
			printf("soak: code %s: %" PRIu64 " =", mmc_strerror(soak_slot_code(k)), n);
		for (int op = 0; op < OP_KINDS; op++)
			if (t->codes[op][k])
				printf(" %s:%" PRIu64 "%s", soak_op_name(op), t->codes[op][k],
				       k == SOAK_CODES - 1 ? other(t->other_code[op]) : "");
		printf("\n");
	}
}

uint64_t soak_report(const struct soak_run *run, uint64_t evictions, struct soak_counts *total)
{
	struct soak_counts t;

	memset(&t, 0, sizeof(t));
	for (uint32_t w = 0; w < run->keys.writers; w++)
		sum_slot(&t, &run->shm->slot[w]);
	print_ops(&t);
	print_codes(&t);
	printf("soak: bytes put=%" PRIu64 " MiB, read=%" PRIu64 " MiB; meta server evictions=%" PRIu64
	       "; verification sweeps=%" PRIu64 "\n",
	       t.bytes_put >> 20, t.bytes_read >> 20, evictions, t.sweeps);
	printf("soak: reads correct=%" PRIu64 " miss=%" PRIu64 " resurrected=%" PRIu64 " doubtful=%" PRIu64 "\n",
	       t.correct, t.miss, t.resurrected, t.doubtful);
	printf("soak: violations corrupt=%" PRIu64 " stale_after_remove=%" PRIu64 " older_version=%" PRIu64 "\n",
	       t.corrupt, t.stale, t.older);
	if (t.corrupt) {
		printf("soak: corrupt by operation:");
		for (int op = 0; op < OP_KINDS; op++)
			if (t.corrupt_op[op])
				printf(" %s=%" PRIu64, soak_op_name(op), t.corrupt_op[op]);
		printf("\n");
	}
	*total = t;
	return t.corrupt + t.stale + t.older;
}
