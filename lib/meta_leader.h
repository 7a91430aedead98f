/*
 * Which meta server to talk to, when ock.mmc.meta_service_url names several (comma-separated): the ones that stand
 * by answer hello with MMC_NOT_LEADER and the leader's address, the leader answers. This keeps the list and the
 * hint; meta_conn.c asks it where to dial and tells it how that went. Not thread-safe: meta_conn.c calls it only
 * from the thread doing the handshake (the opener, then the keeper).
 */
#ifndef MMC_META_LEADER_H
#define MMC_META_LEADER_H

#include <stddef.h>
#include <stdint.h>

#define META_ADDRS_MAX 16

struct meta_leader {
	char host[META_ADDRS_MAX][256];
	uint16_t port[META_ADDRS_MAX];
	unsigned n;
	unsigned cur;        /* the address dialled next */
	char hint_host[256]; /* the leader a standby named, tried before the list; "" : none */
	uint16_t hint_port;
	unsigned hint_uses; /* a hint is followed a few times at most: it may be stale */
};

/*
 * Parses "tcp://host:port[,tcp://host:port]..." (at most META_ADDRS_MAX; blanks around commas are allowed) into
 * ml (may be NULL: only checks). first_host/first_port get the first address. Returns 0 or MMC_INVALID_PARAM with a
 * message naming ock.mmc.meta_service_url in err.
 */
int meta_leader_parse(struct meta_leader *ml, const char *urls, char *first_host, size_t hostlen, uint16_t *first_port,
                      char *err, size_t errlen);

/* The address to dial now. */
void meta_leader_target(const struct meta_leader *ml, const char **host, uint16_t *port);
/* That address did not answer, or stands by without naming another leader: move on. */
void meta_leader_failed(struct meta_leader *ml);
/* A standby named the leader (tcp://host:port); "" or the address just tried counts as failed. */
void meta_leader_redirect(struct meta_leader *ml, const char *leader_url);
/* The address dialled answered as the leader: keep it first. */
void meta_leader_connected(struct meta_leader *ml);
/* How many addresses a handshake tries before it backs off: each once, and a hint or two. */
unsigned meta_leader_attempts(const struct meta_leader *ml);

#endif
