/*
 * The meta server against a hostile or broken peer: malformed frames, absurd lengths, unknown bodies, limits and
 * dead connections. After each, a real client must still be served.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <mmc/mmc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mmc.pb-c.h"
#include "proc.h"
#include "raw_rpc.h"

static struct metaserver meta;

static void start(void)
{
	cr_assert_eq(metaserver_start(&meta, NULL), 0);
}

static void stop(void)
{
	cr_expect_eq(metaserver_cleanup(&meta), 0, "the metaserver log has a sanitizer report");
}

TestSuite(protocol, .init = start, .fini = stop, .timeout = 60);

static int dial(void)
{
	int fd = raw_dial(meta.rpc_port);

	cr_assert_geq(fd, 0);
	return fd;
}

static void send_raw(int fd, const void *p, size_t n)
{
	cr_assert_eq(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

static void send_frame(int fd, const Mmc__Frame *f)
{
	cr_assert_eq(raw_send(fd, f), 0);
}

/* The server closed the connection: recv returns 0 (or a reset). */
static void assert_closed(int fd)
{
	char c;

	cr_assert_leq(recv(fd, &c, 1, 0), 0, "the server should have dropped this connection");
	close(fd);
}

/* A real client still gets service. */
static void assert_serving(void)
{
	mmc_local_config c = mmc_default_local_config();
	mmc_store *s = mmc_create();
	char buf[100] = "still serving";

	snprintf(c.meta_service_url, sizeof(c.meta_service_url), "%s", meta.url);
	strcpy(c.protocol, "host_tcp");
	c.dram_size = 8u << 20;
	cr_assert_eq(mmc_setup(s, &c), 0);
	cr_assert_eq(mmc_init(s, 0, true), 0);
	cr_assert_eq(mmc_put_from(s, "alive", buf, sizeof(buf), MMC_COPY_H2G, NULL), 0);
	cr_assert_eq(mmc_get_into(s, "alive", buf, sizeof(buf), MMC_COPY_G2H), 0);
	cr_assert_eq(mmc_remove(s, "alive"), 0);
	mmc_destroy(s);
}

Test(protocol, zero_and_oversized_lengths_close_the_connection)
{
	static const uint8_t zero[4] = {0, 0, 0, 0}, huge[4] = {0xff, 0xff, 0xff, 0x7f};
	int fd = dial();

	send_raw(fd, zero, 4);
	assert_closed(fd);
	fd = dial();
	send_raw(fd, huge, 4);
	assert_closed(fd);
	assert_serving();
}

Test(protocol, garbage_bodies_close_the_connection)
{
	uint8_t junk[4 + 64];
	int fd;

	srand(7);
	for (int round = 0; round < 50; round++) {
		fd = dial();
		junk[0] = 64;
		junk[1] = junk[2] = junk[3] = 0;
		for (int i = 4; i < 68; i++)
			junk[i] = (uint8_t)rand();
		junk[4] = 0xff; /* an invalid tag up front: undecodable */
		send_raw(fd, junk, sizeof(junk));
		assert_closed(fd);
	}
	assert_serving();
}

Test(protocol, truncated_frames_and_dead_peers_are_harmless)
{
	static const uint8_t partial[] = {100, 0, 0, 0, 0x08, 0x01};

	for (int i = 0; i < 20; i++) {
		int fd = dial();

		send_raw(fd, partial, sizeof(partial));
		close(fd); /* dies mid-frame */
	}
	assert_serving();
}

Test(protocol, unknown_bodies_and_limits_get_an_error_reply)
{
	Mmc__Frame f = MMC__FRAME__INIT, *r;
	Mmc__KeyBatch kb = MMC__KEY_BATCH__INIT;
	Mmc__KeyItem *items[1], item = MMC__KEY_ITEM__INIT;
	Mmc__KeyItem **many;
	int fd = dial();

	/* through the hello: before it, no frame larger than a hello's is read */
	cr_assert_eq(raw_hello(fd, 0, NULL, false), 0);
	/* a reply-type body sent as a request: not served, answered with INVALID_PARAM */
	f.id = 5;
	f.body_case = MMC__FRAME__BODY_KEY_REPLY;
	f.key_reply = &(Mmc__KeyBatchReply)MMC__KEY_BATCH_REPLY__INIT;
	send_frame(fd, &f);
	r = raw_recv(fd);
	cr_assert_not_null(r);
	cr_assert_eq(r->id, 5);
	cr_assert_eq(r->body_case, MMC__FRAME__BODY_REPLY);
	cr_assert_eq(r->reply->result, MMC_INVALID_PARAM);
	mmc__frame__free_unpacked(r, NULL);

	/* an empty batch */
	f.id = 6;
	f.body_case = MMC__FRAME__BODY_EXIST;
	f.exist = &kb;
	send_frame(fd, &f);
	r = raw_recv(fd);
	cr_assert_not_null(r);
	cr_assert_eq(r->reply->result, MMC_INVALID_PARAM);
	mmc__frame__free_unpacked(r, NULL);

	/* one key too many */
	many = calloc(16385, sizeof(*many));
	item.key = "k";
	for (int i = 0; i < 16385; i++)
		many[i] = &item;
	kb.n_items = 16385;
	kb.items = many;
	f.id = 7;
	send_frame(fd, &f);
	r = raw_recv(fd);
	cr_assert_not_null(r);
	cr_assert_eq(r->reply->result, MMC_INVALID_PARAM);
	mmc__frame__free_unpacked(r, NULL);

	/* keys that are empty or too long fail per key, the rest is served */
	char longkey[300];
	memset(longkey, 'x', 299);
	longkey[299] = '\0';
	items[0] = &item;
	item.key = longkey;
	kb.n_items = 1;
	kb.items = items;
	f.id = 8;
	send_frame(fd, &f);
	r = raw_recv(fd);
	cr_assert_not_null(r);
	cr_assert_eq(r->body_case, MMC__FRAME__BODY_KEY_REPLY);
	cr_assert_eq(r->key_reply->n_items, 1);
	cr_assert_eq(r->key_reply->items[0]->result, MMC_INVALID_PARAM);
	mmc__frame__free_unpacked(r, NULL);
	free(many);
	close(fd);
	assert_serving();
}

/*
 * In every key batch body an empty key and a key one byte too long fail alone, and the longest key the wire allows is
 * served (absent here, so not INVALID_PARAM).
 */
/* The server's peak resident memory in bytes (VmHWM), or 0. */
static uint64_t peak_rss(void)
{
	char path[64], line[256];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)meta.pid);
	if (!(f = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/*
 * A batch of four million empty keys, with a field the hand decoder leaves to protobuf-c at its end: refused as a
 * batch too large (MMC_INVALID_PARAM) once its items are counted, before any is decoded. protobuf-c decoded all of
 * them first (some 400 MB for this 8 MB frame, 5 GB for the largest frame), and only then was the batch refused.
 */
Test(protocol, a_batch_of_millions_of_keys_is_refused_before_it_is_decoded)
{
	enum { N = 4 << 20 };
	size_t body = 2 * (size_t)N + 2, len = 2 + 2 + 4 + body, at = 0; /* id, tag, length, body */
	uint8_t *frame = malloc(4 + len);
	uint64_t before = peak_rss();
	Mmc__Frame *r;
	int fd = dial();

	cr_assert_not_null(frame);
	cr_assert_eq(raw_hello(fd, 0, NULL, false), 0);
	frame[at++] = (uint8_t)len, frame[at++] = (uint8_t)(len >> 8), frame[at++] = (uint8_t)(len >> 16);
	frame[at++] = (uint8_t)(len >> 24);
	frame[at++] = 0x08, frame[at++] = 9;                             /* id 9 */
	frame[at++] = (uint8_t)(MMC__FRAME__BODY_EXIST << 3 | 2 | 0x80); /* exist (a KeyBatch): a two-byte tag */
	frame[at++] = (uint8_t)(MMC__FRAME__BODY_EXIST >> 4);
	for (size_t v = body; v >= 0x80; v >>= 7)
		frame[at++] = (uint8_t)(v | 0x80);
	frame[at++] = (uint8_t)(body >> 21);
	for (int i = 0; i < N; i++)
		frame[at++] = 0x0a, frame[at++] = 0; /* items: KeyItem{} */
	frame[at++] = 0x78, frame[at++] = 1;         /* field 15: unknown to both decoders */
	cr_assert_eq(at, 4 + len);
	for (size_t sent = 0; sent < at;) { /* the server reads it as it comes: one send may take part of it */
		ssize_t n = send(fd, frame + sent, at - sent, MSG_NOSIGNAL);

		cr_assert_gt(n, 0);
		sent += (size_t)n;
	}
	free(frame);
	r = raw_recv(fd);
	cr_assert_not_null(r);
	cr_assert_eq(r->id, 9);
	cr_assert_eq(r->reply->result, MMC_INVALID_PARAM);
	mmc__frame__free_unpacked(r, NULL);
	cr_expect_lt(peak_rss(), before + (64u << 20), "the server's peak memory grew by %llu MB for an 8 MB frame",
	             (unsigned long long)((peak_rss() - before) >> 20));
	close(fd);
}

Test(protocol, every_key_batch_refuses_empty_and_long_keys_per_key)
{
	static const Mmc__Frame__BodyCase bodies[] = {
	    MMC__FRAME__BODY_EXIST,     MMC__FRAME__BODY_QUERY,   MMC__FRAME__BODY_GET,
	    MMC__FRAME__BODY_ADD_LEASE, MMC__FRAME__BODY_RELEASE, MMC__FRAME__BODY_REMOVE_LEASE,
	    MMC__FRAME__BODY_REMOVE,    MMC__FRAME__BODY_COMMIT,  MMC__FRAME__BODY_WRITE_FINISH,
	    MMC__FRAME__BODY_ALLOC,     MMC__FRAME__BODY_MALLOC,
	};
	char longer[MMC_KEY_MAX + 2], longest[MMC_KEY_MAX + 1];
	Mmc__KeyItem it[3] = {MMC__KEY_ITEM__INIT, MMC__KEY_ITEM__INIT, MMC__KEY_ITEM__INIT};
	Mmc__KeyItem *items[3] = {&it[0], &it[1], &it[2]};
	int fd = dial();

	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	memset(longest, 'y', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	it[0].key = "";
	it[1].key = longer;
	it[2].key = longest;
	cr_assert_eq(raw_hello(fd, 0, NULL, false), 0);
	for (size_t b = 0; b < sizeof(bodies) / sizeof(bodies[0]); b++) {
		bool alloc = bodies[b] == MMC__FRAME__BODY_ALLOC || bodies[b] == MMC__FRAME__BODY_MALLOC;
		Mmc__Frame f = MMC__FRAME__INIT, *r;
		Mmc__KeyBatch kb = MMC__KEY_BATCH__INIT;

		kb.items = items;
		kb.n_items = alloc ? 2 : 3; /* a valid new key, with no pool to place it in, would wait for room */
		kb.replica_num = 1;
		f.id = 100 + b;
		f.body_case = bodies[b];
		f.exist = &kb; /* every KeyBatch body is a member of the same oneof: one pointer */
		send_frame(fd, &f);
		r = raw_recv(fd);
		cr_assert_not_null(r);
		cr_assert_eq(r->body_case, MMC__FRAME__BODY_KEY_REPLY, "body %d", bodies[b]);
		cr_assert_eq(r->key_reply->n_items, kb.n_items, "body %d", bodies[b]);
		cr_assert_eq(r->key_reply->items[0]->result, MMC_INVALID_PARAM, "body %d, an empty key", bodies[b]);
		cr_assert_eq(r->key_reply->items[1]->result, MMC_INVALID_PARAM, "body %d, a key too long", bodies[b]);
		if (!alloc)
			cr_assert_neq(r->key_reply->items[2]->result, MMC_INVALID_PARAM, "body %d, the longest key",
			              bodies[b]);
		mmc__frame__free_unpacked(r, NULL);
	}
	close(fd);
	assert_serving();
}

/* An exist of {"abXcd", "ok"} with its length prefix, the X made a NUL, then `extra` bytes of a field (or none). */
static size_t nul_key_frame(uint8_t *out, uint64_t id, const uint8_t *extra, size_t nextra)
{
	Mmc__Frame f = MMC__FRAME__INIT;
	Mmc__KeyBatch kb = MMC__KEY_BATCH__INIT;
	Mmc__KeyItem a = MMC__KEY_ITEM__INIT, b = MMC__KEY_ITEM__INIT, *items[2] = {&a, &b};
	size_t len;
	uint8_t *x;

	a.key = "abXcd";
	b.key = "ok";
	kb.items = items;
	kb.n_items = 2;
	f.id = id;
	f.body_case = MMC__FRAME__BODY_EXIST;
	f.exist = &kb;
	len = mmc__frame__pack(&f, out + 4);
	x = memchr(out + 4, 'X', len);
	cr_assert_not_null(x);
	*x = '\0';
	if (nextra) /* memcpy's source may not be NULL, even for no bytes */
		memcpy(out + 4 + len, extra, nextra);
	len += nextra;
	for (int i = 0; i < 4; i++)
		out[i] = (uint8_t)(len >> (8 * i));
	return 4 + len;
}

/*
 * A key is a C string everywhere past the decoder: "ab\0cd" would be read as "ab", another key. Refused instead:
 * per key when the hand decoder reads the frame, the whole frame when protobuf-c would (a field the hand decoder
 * does not know sends it there).
 */
Test(protocol, a_key_holding_a_nul_is_refused_not_cut)
{
	static const uint8_t unknown[] = {0x98, 0x06, 0x01}; /* field 99, a varint: unknown to this version */
	uint8_t frame[128];
	Mmc__Frame *r;
	int fd = dial();

	cr_assert_eq(raw_hello(fd, 0, NULL, false), 0);
	send_raw(fd, frame, nul_key_frame(frame, 21, NULL, 0));
	r = raw_recv(fd);
	cr_assert_not_null(r);
	cr_assert_eq(r->body_case, MMC__FRAME__BODY_KEY_REPLY);
	cr_assert_eq(r->key_reply->n_items, 2);
	cr_assert_eq(r->key_reply->items[0]->result, MMC_INVALID_PARAM, "the key with a NUL, by hand");
	cr_assert_eq(r->key_reply->items[1]->result, 0, "the other key is answered (absent)");
	mmc__frame__free_unpacked(r, NULL);
	send_raw(fd, frame, nul_key_frame(frame, 22, unknown, sizeof(unknown)));
	r = raw_recv(fd);
	cr_assert_not_null(r);
	cr_assert_eq(r->id, 22);
	cr_assert_eq(r->body_case, MMC__FRAME__BODY_REPLY, "the frame protobuf-c would have read is refused whole");
	cr_assert_eq(r->reply->result, MMC_INVALID_PARAM);
	mmc__frame__free_unpacked(r, NULL);
	close(fd);
	assert_serving();
}

/* An exist batch of n keys of 70 bytes, with its length prefix, in *len bytes (the caller frees it). */
static uint8_t *exist_frame(uint64_t id, size_t n, size_t *len)
{
	Mmc__Frame f = MMC__FRAME__INIT;
	Mmc__KeyBatch kb = MMC__KEY_BATCH__INIT;
	Mmc__KeyItem *items = calloc(n, sizeof(*items)), **ptrs = calloc(n, sizeof(*ptrs));
	char(*keys)[71] = calloc(n, sizeof(*keys));
	uint8_t *buf;

	cr_assert(items && ptrs && keys);
	for (size_t i = 0; i < n; i++) {
		items[i] = (Mmc__KeyItem)MMC__KEY_ITEM__INIT;
		snprintf(keys[i], sizeof(keys[i]), "%064zx_piece", i);
		items[i].key = keys[i];
		ptrs[i] = &items[i];
	}
	kb.n_items = n;
	kb.items = ptrs;
	f.id = id;
	f.body_case = MMC__FRAME__BODY_EXIST;
	f.exist = &kb;
	buf = raw_pack(&f, len);
	cr_assert_not_null(buf);
	free(items);
	free(ptrs);
	free(keys);
	return buf;
}

static void expect_exist_reply(int fd, uint64_t id, size_t n)
{
	Mmc__Frame *r = raw_recv(fd);

	cr_assert_not_null(r, "no reply to frame %llu", (unsigned long long)id);
	cr_assert_eq(r->id, id);
	cr_assert_eq(r->body_case, MMC__FRAME__BODY_KEY_REPLY);
	cr_assert_eq(r->key_reply->n_items, n);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(r->key_reply->items[i]->result, 0); /* absent */
	mmc__frame__free_unpacked(r, NULL);
}

/*
 * The server reads a frame's rest straight from the socket and has the kernel wake it only once that rest is there
 * (plain TCP): a frame that comes in pieces, with pauses between them, inside its header or not, smaller or larger
 * than one such wake can wait for (about 1 MiB here), or together with the start of the next, is served all the same.
 */
Test(protocol, a_frame_that_comes_in_pieces_is_served)
{
	static const size_t counts[] = {1, 1024, 16000};
	int fd = dial();

	cr_assert_eq(raw_hello(fd, 0, NULL, false), 0);
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		size_t len, cuts[] = {2, 4, 100, 5000, 0, 0};
		uint8_t *buf = exist_frame(40 + c, counts[c], &len), *two;
		size_t at = 0;

		cuts[4] = len / 2;
		cuts[5] = len - 1;
		for (size_t k = 0; k < sizeof(cuts) / sizeof(cuts[0]); k++) {
			if (cuts[k] <= at || cuts[k] >= len)
				continue;
			send_raw(fd, buf + at, cuts[k] - at);
			at = cuts[k];
			usleep(20000);
		}
		send_raw(fd, buf + at, len - at);
		expect_exist_reply(fd, 40 + c, counts[c]);

		/* this frame whole and half the next in one send, the rest later */
		two = malloc(2 * len);
		cr_assert_not_null(two);
		memcpy(two, buf, len);
		memcpy(two + len, buf, len);
		send_raw(fd, two, len + len / 2);
		expect_exist_reply(fd, 40 + c, counts[c]);
		usleep(20000);
		send_raw(fd, two + len + len / 2, len - len / 2);
		expect_exist_reply(fd, 40 + c, counts[c]);
		free(two);
		free(buf);
	}
	close(fd);
	assert_serving();
}

Test(protocol, many_connections_come_and_go)
{
	int fds[200];

	for (int i = 0; i < 200; i++)
		fds[i] = dial();
	for (int i = 0; i < 200; i++)
		close(fds[i]);
	assert_serving();
}

/* One-key KeyBatch request on fd; returns the reply's only result (the caller frees *reply). */
static Mmc__KeyResult *key_call(int fd, uint64_t id, Mmc__Frame__BodyCase body, Mmc__KeyItem *item, Mmc__Frame **reply)
{
	Mmc__Frame f = MMC__FRAME__INIT;
	Mmc__KeyBatch kb = MMC__KEY_BATCH__INIT;
	Mmc__KeyItem *items[1] = {item};

	kb.n_items = 1;
	kb.items = items;
	kb.replica_num = 1;
	f.id = id;
	f.body_case = body;
	f.alloc = &kb; /* every key body is a KeyBatch in the same union */
	send_frame(fd, &f);
	*reply = raw_recv(fd);
	cr_assert_not_null(*reply);
	cr_assert_eq((*reply)->body_case, MMC__FRAME__BODY_KEY_REPLY);
	cr_assert_eq((*reply)->key_reply->n_items, 1);
	return (*reply)->key_reply->items[0];
}

/* A commit's checksum comes back with gets; one of an unknown type is refused and nothing is published. */
Test(protocol, commit_checksums_are_kept_or_refused)
{
	mmc_local_config c = mmc_default_local_config();
	mmc_store *s = mmc_create();
	Mmc__KeyItem item = MMC__KEY_ITEM__INIT;
	Mmc__KeyResult *res;
	Mmc__Frame *r;
	int fd;

	snprintf(c.meta_service_url, sizeof(c.meta_service_url), "%s", meta.url);
	strcpy(c.protocol, "host_tcp");
	c.dram_size = 8u << 20;
	cr_assert_eq(mmc_setup(s, &c), 0);
	cr_assert_eq(mmc_init(s, 0, true), 0); /* a pool for the allocations below */
	fd = dial();
	for (int round = 0; round < 2; round++) {
		bool known = round == 0;

		item.key = known ? "sum-kept" : "sum-refused";
		item.size = 4096;
		res = key_call(fd, 10 + (uint64_t)round, MMC__FRAME__BODY_ALLOC, &item, &r);
		cr_assert_eq(res->result, 0);
		item.token = res->token;
		mmc__frame__free_unpacked(r, NULL);
		item.checksum_type = known ? 1 : 99; /* MMC_WIRE_CHECKSUM_CRC32C; 99: no such type */
		item.checksum = 0xE3069283u;
		res = key_call(fd, 20 + (uint64_t)round, MMC__FRAME__BODY_COMMIT, &item, &r);
		cr_assert_eq(res->result, known ? 0 : MMC_INVALID_PARAM);
		mmc__frame__free_unpacked(r, NULL);
		item.token = 0;
		item.checksum_type = 0;
		res = key_call(fd, 30 + (uint64_t)round, MMC__FRAME__BODY_GET, &item, &r);
		cr_assert_eq(res->result, known ? 0 : MMC_OBJECT_NOT_EXISTS);
		cr_assert_eq(res->checksum_type, known ? 1u : 0u);
		cr_assert_eq(res->checksum, known ? 0xE3069283u : 0u);
		mmc__frame__free_unpacked(r, NULL);
	}
	close(fd);
	mmc_destroy(s);
	assert_serving();
}
