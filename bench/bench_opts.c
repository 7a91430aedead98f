/* The flags every mmc-bench subcommand shares. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mmc/mmc.h>

#include "bench.h"
#include "bench_cluster.h"

#define DSR1_LAYERS 61
#define DSR1_K      ((size_t)128 << 10)
#define DSR1_V      ((size_t)16 << 10)

static uint64_t parse_size(const char *t)
{
	char *end;
	uint64_t v = strtoull(t, &end, 0);

	if (*end == 'k' || *end == 'K')
		v <<= 10;
	else if (*end == 'm' || *end == 'M')
		v <<= 20;
	else if (*end == 'g' || *end == 'G')
		v <<= 30;
	return v;
}

static int parse_list(char *arg, uint64_t *out, int max)
{
	int n = 0;

	for (char *t = strtok(arg, ","); t && n < max; t = strtok(NULL, ","))
		out[n++] = parse_size(t);
	return n;
}

static const char *protocol_of(const char *p)
{
	if (strcmp(p, "tcp") == 0)
		return "host_tcp";
	if (strcmp(p, "shm") == 0)
		return "host_shm";
	return p;
}

static void defaults(struct bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->protocols[0] = "host_shm";
	o->protocols[1] = "host_tcp";
	o->nprotocols = 2;
	o->sizes[0] = 64 << 10;
	o->sizes[1] = 1 << 20;
	o->nsizes = 2;
	o->batches[0] = 16;
	o->nbatches = 1;
	o->layers = 1;
	o->threads = o->procs = o->targets = 1;
	o->seconds = 2.0;
	o->sync[0] = 1;
	o->nsync = 1;
	o->index[0] = 1000;
	o->nindex = 1;
}

static int set_sync(struct bench_opts *o, const char *v)
{
	o->nsync = strcmp(v, "both") == 0 ? 2 : 1;
	o->sync[0] = strcmp(v, "off") != 0;
	o->sync[1] = 0;
	return strcmp(v, "on") && strcmp(v, "off") && strcmp(v, "both") ? -1 : 0;
}

static int set_checksum(struct bench_opts *o, const char *v)
{
	o->checksum = strcmp(v, "both") == 0 ? BENCH_CK_BOTH : strcmp(v, "on") == 0 ? BENCH_CK_ON : BENCH_CK_OFF;
	return strcmp(v, "on") && strcmp(v, "off") && strcmp(v, "both") ? -1 : 0;
}

static int set_protocols(struct bench_opts *o, char *v)
{
	o->nprotocols = 0;
	for (char *t = strtok(v, ","); t && o->nprotocols < 2; t = strtok(NULL, ","))
		o->protocols[o->nprotocols++] = protocol_of(t);
	return o->nprotocols ? 0 : -1;
}

static int one_flag(struct bench_opts *o, int c, char *arg)
{
	uint64_t v[BENCH_MAX_LIST];
	int n;

	switch (c) {
	case 'p':
		return set_protocols(o, arg);
	case 's':
		o->nsizes = parse_list(arg, v, BENCH_MAX_LIST);
		for (int i = 0; i < o->nsizes; i++)
			o->sizes[i] = v[i];
		return o->nsizes ? 0 : -1;
	case 'b':
		n = o->nbatches = parse_list(arg, v, BENCH_MAX_LIST);
		o->batch_given = true;
		for (int i = 0; i < n; i++)
			o->batches[i] = (int)v[i];
		return n ? 0 : -1;
	case 'k':
		o->nindex = parse_list(arg, o->index, BENCH_MAX_LIST);
		return o->nindex ? 0 : -1;
	case 'l':
		o->layers = atoi(arg);
		return 0;
	case 'S':
		o->dsr1 = strcmp(arg, "dsr1") == 0;
		return o->dsr1 || strcmp(arg, "flat") == 0 ? 0 : -1;
	case 'T':
		o->threads = atoi(arg);
		return 0;
	case 'P':
		o->procs = atoi(arg);
		return 0;
	case 'n':
		o->targets = atoi(arg);
		return 0;
	case 't':
		o->seconds = atof(arg);
		return 0;
	case 'y':
		return set_sync(o, arg);
	case 'c':
		return set_checksum(o, arg);
	case 'q':
		o->quick = true;
		o->seconds = 0.2;
		return 0;
	case 'R':
		o->no_raw = true;
		return 0;
	case 'D':
		o->no_redis = true;
		return 0;
	case 'U':
		o->unbacked = true;
		return 0;
	case 'N':
		o->tenant = true;
		return bench_tenant_setup();
	case 'K':
		o->check = true;
		return 0;
	case 'H':
		o->no_host_path = true;
		setenv("MMC_HOST_PATH", "off", 1); /* the targets this process starts inherit it */
		return 0;
	default:
		return -1;
	}
}

int bench_parse(int argc, char **argv, struct bench_opts *o, const char *usage)
{
	static const struct option opts[] = {
	    {"protocol", required_argument, NULL, 'p'},
	    {"sizes", required_argument, NULL, 's'},
	    {"batch", required_argument, NULL, 'b'},
	    {"layers", required_argument, NULL, 'l'},
	    {"shape", required_argument, NULL, 'S'},
	    {"threads", required_argument, NULL, 'T'},
	    {"procs", required_argument, NULL, 'P'},
	    {"targets", required_argument, NULL, 'n'},
	    {"seconds", required_argument, NULL, 't'},
	    {"sync", required_argument, NULL, 'y'},
	    {"keys", required_argument, NULL, 'k'},
	    {"quick", no_argument, NULL, 'q'},
	    {"no-raw", no_argument, NULL, 'R'},
	    {"no-redis", no_argument, NULL, 'D'},
	    {"checksum", required_argument, NULL, 'c'},
	    {"no-host-path", no_argument, NULL, 'H'},
	    {"unbacked", no_argument, NULL, 'U'},
	    {"tenant", no_argument, NULL, 'N'},
	    {"check", no_argument, NULL, 'K'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	defaults(o);
	optind = 1;
	while ((c = getopt_long(argc, argv, "p:s:b:l:S:T:P:n:t:y:k:c:qRDHh", opts, NULL)) != -1) {
		if (c == 'h' || one_flag(o, c, optarg)) {
			fputs(usage, c == 'h' ? stdout : stderr);
			return c == 'h' ? 1 : -1;
		}
	}
	if (o->layers < 1 || o->layers > MMC_LAYERS_MAX || o->threads < 1 || o->threads > 64 || o->procs < 1 ||
	    o->procs > 16 || o->targets < 1 || o->targets > 8 || o->seconds <= 0) {
		fputs(usage, stderr);
		return -1;
	}
	for (int i = 0; i < o->nbatches; i++)
		if (o->batches[i] < 1 || o->batches[i] > MMC_BATCH_MAX) {
			fputs(usage, stderr);
			return -1;
		}
	if (optind < argc) {
		fprintf(stderr, "mmc-bench: unexpected argument \"%s\"\n", argv[optind]);
		return -1;
	}
	if (o->check)
		puts("# options ok");
	return o->check ? 1 : 0;
}

void bench_shape(const struct bench_opts *o, size_t block, struct shape *sh)
{
	memset(sh, 0, sizeof(*sh));
	if (o->dsr1) {
		sh->name = "dsr1";
		sh->npieces = 2 * DSR1_LAYERS;
		for (int l = 0; l < DSR1_LAYERS; l++) {
			sh->piece[2 * l] = DSR1_K;
			sh->piece[2 * l + 1] = DSR1_V;
		}
		sh->block = DSR1_LAYERS * (DSR1_K + DSR1_V);
		return;
	}
	sh->name = o->layers > 1 ? "layers" : "flat";
	sh->block = block;
	sh->npieces = o->layers;
	for (int l = 0; l < o->layers; l++)
		sh->piece[l] = block / (size_t)o->layers;
	sh->piece[o->layers - 1] += block % (size_t)o->layers;
}

const char *bench_size_str(size_t b, char *buf, size_t len)
{
	if (b >= (1u << 20) && b % (1u << 20) == 0)
		snprintf(buf, len, "%zuMiB", b >> 20);
	else if (b >= 1024 && b % 1024 == 0)
		snprintf(buf, len, "%zuKiB", b >> 10);
	else
		snprintf(buf, len, "%zuB", b);
	return buf;
}

void bench_use_protocol(const struct bench_opts *o, const char *protocol)
{
	if (o->no_host_path && strcmp(protocol, "host_shm") == 0)
		setenv("FI_PROVIDER", "shm", 1);
	else if (o->no_host_path)
		unsetenv("FI_PROVIDER");
}

const char *bench_proto_str(const char *protocol)
{
	return strncmp(protocol, "host_", 5) == 0 ? protocol + 5 : protocol;
}
