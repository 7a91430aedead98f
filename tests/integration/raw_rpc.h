/*
 * A peer of the meta server's RPC port that writes frames by hand (protobuf-c), for tests that must say what libmmc
 * never would: skip the hello, send another wire version, hold a frame half-sent, claim another service's rank.
 */
#ifndef MMC_TEST_RAW_RPC_H
#define MMC_TEST_RAW_RPC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mmc.pb-c.h"

/* A TCP connection to 127.0.0.1:port (receives time out after 5 s), or -1. */
int raw_dial(uint16_t port);
/* f with its length prefix, in *len bytes (the caller frees it), or NULL. */
uint8_t *raw_pack(const Mmc__Frame *f, size_t *len);
/* Sends f with its length prefix. Returns 0 or -1. */
int raw_send(int fd, const Mmc__Frame *f);
/* The next frame (free with mmc__frame__free_unpacked(f, NULL)), or NULL at the end of the stream or a timeout. */
Mmc__Frame *raw_recv(int fd);
/* Whether the server closes fd within ms (reads and drops anything it still sends). */
bool raw_closed(int fd, int ms);
/*
 * Says hello (version 1 unless version is given) and, when challenged, proves token (NULL: sends a zero proof).
 * Returns the HelloReply's result, or 1 when the server challenged and token is NULL and prove is false (the
 * connection is then waiting for a proof), or -1 when the connection failed.
 */
int raw_hello(int fd, uint32_t version, const char *token, bool prove);
/* A hello claiming tenant, with a fresh client nonce into cn: the server's challenge (free it with
 * raw_prove_tenant), or NULL when it answered otherwise. */
Mmc__AuthChallenge *raw_hello_tenant(int fd, const char *tenant, uint8_t cn[32]);
/* The proof of token for tenant against ch (then freed): the HelloReply's result, or -1 when none came (closed). */
int raw_prove_tenant(int fd, const char *tenant, const char *token, const uint8_t cn[32], Mmc__AuthChallenge *ch);
/* Sends {id, body_case, body} where body is the message of that case. */
int raw_send_body(int fd, uint64_t id, Mmc__Frame__BodyCase body_case, void *body);

/* ---- the other side: a meta server played by a test, for libmmc to meet ---- */

struct raw_server {
	int lfd; /* listening on 127.0.0.1:port */
	uint16_t port;
	pthread_t th;                /* accepts until stopped, and hands each connection to conn */
	void (*conn)(int fd, int n); /* the n-th connection (from 0), closed once conn returns */
	atomic_bool stop;
};

/* Listens at a free loopback port and serves each connection with conn, one at a time, on a thread. 0 or -1. */
int raw_server_start(struct raw_server *s, void (*conn)(int fd, int n));
/* Sets stop, ends the listening socket (the thread's accept fails) and joins the thread. */
void raw_server_stop(struct raw_server *s);
/* A successful HelloReply to hello (a frame holding one), announcing heartbeat_timeout_ms. */
void raw_hello_reply(int fd, const Mmc__Frame *hello, uint32_t heartbeat_timeout_ms);

#endif
