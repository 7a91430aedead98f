/*
 * The cache of local services' coordinates (rank -> fabric address, pool base and key), and for services on this
 * host the mapping of their pool (the host path), which needs no fabric and so no common provider.
 */
#include "peers.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "host_id.h"
#include "host_map.h"
#include "lg.h"
#include "mmc/mmc.h"
#include "store.h"
#include "wire.h"

void peers_init(struct peers *p)
{
	pthread_rwlock_init(&p->lock, NULL);
	memset(p->by_rank, 0, sizeof(p->by_rank));
}

void peers_fini(struct peers *p)
{
	for (int i = 0; i < MMC_RANKS_MAX; i++) {
		if (p->by_rank[i])
			host_map_unref(p->by_rank[i]->map);
		free(p->by_rank[i]);
	}
	pthread_rwlock_destroy(&p->lock);
}

struct info_ctx {
	mmc_ServiceInfo info;
};

static int decode_info(struct mcall *c, uint32_t body, const uint8_t *data, size_t len)
{
	struct info_ctx *ctx = c->arg;
	pb_istream_t st = pb_istream_from_buffer(data, len);

	if (body != WB_SERVICE_INFO || !pb_decode(&st, mmc_ServiceInfo_fields, &ctx->info))
		return MMC_INTERNAL_ERROR;
	return ctx->info.result;
}

/* A service on this host whose pool we can map: copies go by memcpy, whatever either side's network provider. */
static bool try_host(struct mmc_store *s, const mmc_ServiceInfo *info, struct peer *p)
{
	for (uint32_t i = 0; i < info->segments_count; i++) {
		const mmc_Segment *sg = &info->segments[i];

		if (sg->media != MMC_MEDIA_DRAM || !sg->host_key)
			continue;
		if (!s->conf.host_path || !info->pool_path[0] || !host_is_mine(info->boot_id, info->host) ||
		    host_map_open(info->pool_path, sg->size, &p->map))
			return false;
		if (!host_map_keyed(p->map, sg->host_key)) { /* another pool under that name: the network it is */
			host_map_unref(p->map);
			p->map = NULL;
			return false;
		}
		p->host_key = sg->host_key;
		return true;
	}
	return false;
}

/* Builds a peer from the meta server's answer and puts it in the cache. */
static int fetch(struct mmc_store *s, uint32_t rank, struct peer *out)
{
	mmc_ServiceQuery q = {.rank = rank};
	struct info_ctx ctx;
	struct mcall c = {.decode = decode_info, .arg = &ctx};
	uint64_t losses = meta_conn_losses(s->meta);
	struct peer *p;
	uint32_t my_rank;
	uint64_t my_incarnation;
	int rc;

	memset(&ctx, 0, sizeof(ctx));
	rc = meta_call(s->meta, WB_SERVICE, mmc_ServiceQuery_fields, &q, &c);
	if (rc)
		return rc;
	p = calloc(1, sizeof(*p));
	if (!p)
		return MMC_MALLOC_FAILED;
	p->rank = rank;
	p->losses = losses;
	p->incarnation = ctx.info.incarnation;
	p->self =
	    store_ident(s, &my_rank, &my_incarnation) && rank == my_rank && ctx.info.incarnation == my_incarnation;
	if (!p->self && !try_host(s, &ctx.info, p) && strcmp(ctx.info.provider, fabric_provider(s->fab)) != 0) {
		lg_error("local service %u uses provider %s, this store %s, and its pool cannot be mapped here "
		         "(another host, or the host path off): they cannot reach each other",
		         rank, ctx.info.provider, fabric_provider(s->fab));
		free(p);
		return MMC_LINK_NOT_FOUND;
	}
	p->nsegs = ctx.info.segments_count;
	for (uint32_t i = 0; i < p->nsegs; i++) {
		p->segs[i].media = ctx.info.segments[i].media;
		p->segs[i].base = ctx.info.segments[i].base_addr;
		p->segs[i].key = ctx.info.segments[i].key;
		p->segs[i].size = ctx.info.segments[i].size;
	}
	if (!p->self && !p->map &&
	    fabric_peer_add(s->fab, ctx.info.fabric_addr.bytes, ctx.info.fabric_addr.size, &p->fa)) {
		free(p);
		return MMC_LINK_NOT_FOUND;
	}
	pthread_rwlock_wrlock(&s->peers.lock);
	/* the old entry's fabric address stays in the AV: an op in flight may still use it; its map stays mapped
	 * until the last transfer using it lets go */
	if (s->peers.by_rank[rank])
		host_map_unref(s->peers.by_rank[rank]->map);
	free(s->peers.by_rank[rank]);
	s->peers.by_rank[rank] = p;
	*out = *p;
	host_map_ref(out->map);
	pthread_rwlock_unlock(&s->peers.lock);
	return 0;
}

void peer_release(struct peer *p)
{
	host_map_unref(p->map);
	p->map = NULL;
}

void peers_sweep(struct mmc_store *s)
{
	uint64_t now = clock_ms(), last = atomic_load_explicit(&s->peers.swept_ms, memory_order_relaxed);

	if (now < last + PEERS_SWEEP_MS || !atomic_compare_exchange_strong(&s->peers.swept_ms, &last, now))
		return;
	pthread_rwlock_wrlock(&s->peers.lock);
	for (int i = 0; i < MMC_RANKS_MAX; i++) {
		struct peer *p = s->peers.by_rank[i];

		if (p && p->map && !host_map_usable(p->map, p->host_key, p->incarnation)) {
			s->peers.by_rank[i] = NULL;
			host_map_unref(p->map);
			free(p);
		}
	}
	pthread_rwlock_unlock(&s->peers.lock);
}

void peers_forget(struct mmc_store *s, uint32_t rank, const struct host_map *map)
{
	struct peer *p;

	if (rank >= MMC_RANKS_MAX)
		return;
	pthread_rwlock_wrlock(&s->peers.lock);
	p = s->peers.by_rank[rank];
	if (p && p->map == map) {
		s->peers.by_rank[rank] = NULL;
		host_map_unref(p->map);
		free(p);
	}
	pthread_rwlock_unlock(&s->peers.lock);
}

int peers_get(struct mmc_store *s, uint32_t rank, uint64_t incarnation, struct peer *out)
{
	struct peer *p;
	int rc;

	if (rank >= MMC_RANKS_MAX)
		return MMC_INVALID_PARAM;
	pthread_rwlock_rdlock(&s->peers.lock);
	p = s->peers.by_rank[rank];
	/* after a lost connection, ask again: the service may have re-registered its pool under a new key */
	if (p && (p->incarnation == incarnation || !incarnation) && p->losses == meta_conn_losses(s->meta)) {
		*out = *p;
		host_map_ref(out->map);
		pthread_rwlock_unlock(&s->peers.lock);
		return 0;
	}
	pthread_rwlock_unlock(&s->peers.lock);
	rc = fetch(s, rank, out);
	if (rc == 0 && incarnation && out->incarnation != incarnation) {
		peer_release(out);
		return MMC_LINK_NOT_FOUND; /* the blob's service is gone; a newer one has its rank */
	}
	return rc;
}
