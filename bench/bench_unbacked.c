/*
 * An unbacked lender for `mmc-bench meta --unbacked`: a local service registered by hand over the RPC port, with a
 * pool that no process has mapped. The meta server places, tracks and frees offsets in it as in any pool; nothing
 * writes a byte there (the benchmark's operations are metadata only), so an index of 10^7 objects costs the
 * machine the index alone, not 4 KiB of /dev/shm per object.
 */
#include "bench_unbacked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mmc/mmc.h"
#include "raw_rpc.h"

#define PING_MS 500 /* well inside the server's heartbeat_timeout_ms */

static int call(struct bench_unbacked *u, Mmc__Frame__BodyCase body_case, void *body, Mmc__Frame **reply)
{
	uint64_t id = ++u->next_id;

	if (raw_send_body(u->fd, id, body_case, body))
		return -1;
	while ((*reply = raw_recv(u->fd))) {
		if ((*reply)->id == id)
			return 0;
		mmc__frame__free_unpacked(*reply, NULL);
	}
	return -1;
}

/* A Register of the pool: new (rank -1), or a rejoin with what the first one gave. */
static int register_pool(struct bench_unbacked *u, uint64_t bytes, bool rejoin)
{
	Mmc__Register reg = MMC__REGISTER__INIT;
	Mmc__Segment seg = MMC__SEGMENT__INIT, *segs[1] = {&seg};
	uint8_t addr[16] = "unbacked";
	Mmc__Frame *r = NULL;
	int rc;

	reg.rank = rejoin ? (int32_t)u->rank : -1;
	if (rejoin) {
		reg.incarnation = u->incarnation;
		reg.secret = (ProtobufCBinaryData){u->secret_len, u->secret};
	}
	reg.fabric_addr = (ProtobufCBinaryData){sizeof(addr), addr};
	reg.provider = "unbacked"; /* no store can reach it: only metadata ever names it */
	seg.media = MMC_MEDIA_DRAM;
	seg.size = bytes;
	seg.base_addr = 0;
	reg.n_segments = 1;
	reg.segments = segs;
	if (call(u, MMC__FRAME__BODY_REGISTER, &reg, &r))
		return -1;
	rc = r->body_case == MMC__FRAME__BODY_SERVICE_INFO ? r->service_info->result : -1;
	if (rc == 0 && !rejoin) {
		u->rank = r->service_info->rank;
		u->incarnation = r->service_info->incarnation;
		u->secret_len = r->service_info->secret.len < sizeof(u->secret) ? r->service_info->secret.len : 0;
		memcpy(u->secret, r->service_info->secret.data, u->secret_len);
	}
	mmc__frame__free_unpacked(r, NULL);
	return rc;
}

/* The heartbeat of the service: a Ping every PING_MS, its reply read and dropped. */
static void *pinger(void *arg)
{
	struct bench_unbacked *u = arg;
	struct timespec ts = {0, PING_MS * 1000000L};

	while (!atomic_load(&u->stop)) {
		Mmc__Ping p = MMC__PING__INIT;
		Mmc__Frame *r = NULL;

		if (call(u, MMC__FRAME__BODY_PING, &p, &r) == 0)
			mmc__frame__free_unpacked(r, NULL);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int bench_unbacked_start(struct bench_unbacked *u, uint16_t port, uint64_t bytes)
{
	memset(u, 0, sizeof(*u));
	atomic_init(&u->stop, false);
	u->bytes = bytes;
	u->fd = raw_dial(port);
	if (u->fd < 0 || raw_hello(u->fd, 0, NULL, false) != 0 || register_pool(u, bytes, false)) {
		fprintf(stderr, "mmc-bench: the unbacked lender could not register %llu bytes\n",
		        (unsigned long long)bytes);
		if (u->fd >= 0)
			close(u->fd);
		return -1;
	}
	if (pthread_create(&u->thread, NULL, pinger, u)) {
		close(u->fd);
		return -1;
	}
	return 0;
}

void bench_unbacked_detach(struct bench_unbacked *u)
{
	atomic_store(&u->stop, true);
	pthread_join(u->thread, NULL);
	close(u->fd);
	u->fd = -1;
}

int bench_unbacked_rejoin(struct bench_unbacked *u, uint16_t port)
{
	int rc;

	atomic_store(&u->stop, false);
	u->fd = raw_dial(port);
	rc = u->fd < 0 || raw_hello(u->fd, 0, NULL, false) != 0 || register_pool(u, u->bytes, true) ? -1 : 0;
	if (rc)
		fprintf(stderr, "mmc-bench: the unbacked lender of rank %u could not rejoin\n", u->rank);
	if (pthread_create(&u->thread, NULL, pinger, u)) /* bench_unbacked_stop joins it either way */
		abort();
	return rc;
}

void bench_unbacked_stop(struct bench_unbacked *u)
{
	atomic_store(&u->stop, true);
	pthread_join(u->thread, NULL);
	close(u->fd);
}
