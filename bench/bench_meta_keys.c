#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "bench_meta.h"
#include "proc.h"

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/*
 * As SGLang and LMCache make theirs. Names are made on the fly, not kept in a table: a table of 10^6 strings would
 * make the client pay two cache misses per random key at 10^6 and not at 10^3, and that would be charged to the
 * server.
 */
const char *key_name(char *buf, size_t i)
{
	static const char hex[] = "0123456789abcdef";
	char *p = buf;

	for (int w = 0; w < 4; w++) {
		uint64_t v = mix64((uint64_t)i * 4 + (uint64_t)w);

		for (int d = 0; d < 16; d++, v >>= 4)
			*p++ = hex[v & 15];
	}
	memcpy(p, "@tp0@kv", 8);
	return buf;
}

int put_meta(mmc_store *s, const char **keys, int batch, int *res)
{
	size_t sizes[FILL_CHUNK];
	mmc_gva gvas[FILL_CHUNK];
	int32_t ok[FILL_CHUNK] = {0};

	for (int i = 0; i < batch && i < FILL_CHUNK; i++)
		sizes[i] = TINY;
	if (batch > FILL_CHUNK || mmc_batch_malloc(s, keys, sizes, (size_t)batch, MMC_MEDIA_DRAM, 0, gvas) ||
	    mmc_batch_write_finish(s, keys, ok, (size_t)batch, res))
		return -1;
	for (int i = 0; i < batch; i++)
		if (!gvas[i] || res[i])
			return -1;
	return 0;
}

/* The first field of a schedstat file: time on a CPU, ns. */
static uint64_t task_ns(pid_t pid, const char *task)
{
	char path[320];
	unsigned long long ns = 0;
	FILE *f;

	if (task)
		snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", (int)pid, task);
	else
		snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%llu", &ns) != 1)
			ns = 0;
		fclose(f);
	}
	return ns;
}

uint64_t cpu_ns(pid_t pid)
{
	return task_ns(pid, NULL);
}

uint64_t cpu_all_ns(pid_t pid)
{
	char path[64];
	uint64_t total = 0;
	struct dirent *d;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (!(dir = opendir(path)))
		return 0;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.')
			total += task_ns(pid, d->d_name);
	closedir(dir);
	return total;
}

uint64_t proc_write_bytes(pid_t pid)
{
	return proc_number(pid, "io", "write_bytes");
}

uint64_t proc_status_bytes(pid_t pid, const char *field)
{
	return proc_number(pid, "status", field) << 10;
}
