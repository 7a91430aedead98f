#include "raw_rpc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int raw_dial(uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct timeval tv = {5, 0};

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

uint8_t *raw_pack(const Mmc__Frame *f, size_t *len)
{
	size_t n = mmc__frame__get_packed_size(f);
	uint8_t *buf = malloc(4 + n);

	if (!buf)
		return NULL;
	buf[0] = (uint8_t)n;
	buf[1] = (uint8_t)(n >> 8);
	buf[2] = (uint8_t)(n >> 16);
	buf[3] = (uint8_t)(n >> 24);
	mmc__frame__pack(f, buf + 4);
	*len = 4 + n;
	return buf;
}

int raw_send(int fd, const Mmc__Frame *f)
{
	size_t len = 0;
	uint8_t *buf = raw_pack(f, &len);
	ssize_t sent = buf ? send(fd, buf, len, MSG_NOSIGNAL) : -1;

	free(buf);
	return sent == (ssize_t)len ? 0 : -1;
}

int raw_send_body(int fd, uint64_t id, Mmc__Frame__BodyCase body_case, void *body)
{
	Mmc__Frame f = MMC__FRAME__INIT;

	f.id = id;
	f.body_case = body_case;
	f.hello = body; /* every body is a pointer in the same union */
	return raw_send(fd, &f);
}

Mmc__Frame *raw_recv(int fd)
{
	uint8_t hdr[4], *body;
	uint32_t len;
	size_t got = 0;
	Mmc__Frame *f;

	if (recv(fd, hdr, 4, MSG_WAITALL) != 4)
		return NULL;
	len = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 24;
	body = malloc(len ? len : 1);
	while (got < len) {
		ssize_t r = recv(fd, body + got, len - got, 0);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	f = got == len ? mmc__frame__unpack(NULL, len, body) : NULL;
	free(body);
	return f;
}

bool raw_closed(int fd, int ms)
{
	char buf[4096];

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, ms) != 1)
			return false;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			return true;
	}
}

/* HMAC-SHA256(token, label NUL a b): what lib/ and metaserver/ compute (common/auth_proof.c), written again here so
 * the test checks the wire, not the code under test. */
static void mac(const char *token, const char *label, const uint8_t *a, const uint8_t *b, uint8_t out[32])
{
	uint8_t msg[128];
	size_t l = strlen(label) + 1;
	unsigned int n;

	memcpy(msg, label, l);
	memcpy(msg + l, a, 32);
	memcpy(msg + l + 32, b, 32);
	HMAC(EVP_sha256(), token, (int)strlen(token), msg, l + 64, out, &n);
}

static int prove_as(int fd, const char *tenant, const char *token, const uint8_t *cn, const Mmc__AuthChallenge *ch)
{
	Mmc__AuthProof p = MMC__AUTH_PROOF__INIT;
	uint8_t proof[32] = {0};
	char label[64];
	Mmc__Frame *r;
	int rc;

	snprintf(label, sizeof(label), tenant ? "mmc-rpc-auth-1 client tenant=%s" : "mmc-rpc-auth-1 client", tenant);
	if (token && ch->server_nonce.len == 32)
		mac(token, label, ch->server_nonce.data, cn, proof);
	p.client_proof = (ProtobufCBinaryData){32, proof};
	if (raw_send_body(fd, 2, MMC__FRAME__BODY_AUTH_PROOF, &p))
		return -1;
	r = raw_recv(fd);
	rc = r && r->body_case == MMC__FRAME__BODY_HELLO_REPLY ? r->hello_reply->result : -1;
	if (r)
		mmc__frame__free_unpacked(r, NULL);
	return rc;
}

static int prove(int fd, const char *token, const uint8_t *cn, const Mmc__AuthChallenge *ch)
{
	return prove_as(fd, NULL, token, cn, ch);
}

/* Sends a hello with a fresh nonce (kept in cn for the proof) and returns the server's answer, or NULL. */
static Mmc__Frame *hello_exchange(int fd, uint32_t version, const char *tenant, uint8_t cn[32])
{
	Mmc__Hello h = MMC__HELLO__INIT;

	for (int i = 0; i < 32; i++)
		cn[i] = (uint8_t)rand();
	h.host = "raw-peer";
	h.version = version ? version : 1;
	h.tenant = (char *)tenant;
	h.client_nonce = (ProtobufCBinaryData){32, cn};
	if (raw_send_body(fd, 1, MMC__FRAME__BODY_HELLO, &h))
		return NULL;
	return raw_recv(fd);
}

Mmc__AuthChallenge *raw_hello_tenant(int fd, const char *tenant, uint8_t cn[32])
{
	Mmc__AuthChallenge *ch = NULL;
	Mmc__Frame *r = hello_exchange(fd, 1, tenant, cn);

	if (!r)
		return NULL;
	if (r->body_case == MMC__FRAME__BODY_AUTH_CHALLENGE && r->auth_challenge->server_nonce.len == 32) {
		ch = r->auth_challenge;
		r->auth_challenge = NULL; /* kept by the caller; the frame goes */
		r->body_case = MMC__FRAME__BODY__NOT_SET;
	}
	mmc__frame__free_unpacked(r, NULL);
	return ch;
}

int raw_prove_tenant(int fd, const char *tenant, const char *token, const uint8_t cn[32], Mmc__AuthChallenge *ch)
{
	int rc = prove_as(fd, tenant, token, cn, ch);

	mmc__auth_challenge__free_unpacked(ch, NULL);
	return rc;
}

int raw_hello(int fd, uint32_t version, const char *token, bool send_proof)
{
	uint8_t cn[32];
	Mmc__Frame *r = hello_exchange(fd, version, NULL, cn);
	int rc = -1;

	if (!r)
		return -1;
	if (r->body_case == MMC__FRAME__BODY_HELLO_REPLY)
		rc = r->hello_reply->result;
	else if (r->body_case == MMC__FRAME__BODY_AUTH_CHALLENGE)
		rc = token || send_proof ? prove(fd, token, cn, r->auth_challenge) : 1;
	mmc__frame__free_unpacked(r, NULL);
	return rc;
}

static void *raw_server_main(void *arg)
{
	struct raw_server *s = arg;

	for (int n = 0; !atomic_load(&s->stop); n++) {
		int fd = accept(s->lfd, NULL, NULL);

		if (fd < 0)
			break;
		s->conn(fd, n);
		close(fd);
	}
	return NULL;
}

int raw_server_start(struct raw_server *s, void (*conn)(int fd, int n))
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);

	s->conn = conn;
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) || listen(s->lfd, 4) ||
	    getsockname(s->lfd, (struct sockaddr *)&a, &alen))
		goto fail;
	s->port = ntohs(a.sin_port);
	atomic_store(&s->stop, false);
	if (pthread_create(&s->th, NULL, raw_server_main, s) == 0)
		return 0;
fail:
	if (s->lfd >= 0)
		close(s->lfd);
	return -1;
}

void raw_server_stop(struct raw_server *s)
{
	atomic_store(&s->stop, true);
	shutdown(s->lfd, SHUT_RDWR);
	close(s->lfd);
	pthread_join(s->th, NULL);
}

void raw_hello_reply(int fd, const Mmc__Frame *hello, uint32_t heartbeat_timeout_ms)
{
	Mmc__HelloReply r = MMC__HELLO_REPLY__INIT;

	r.session = 1;
	r.lease_ttl_ms = 5000;
	r.heartbeat_timeout_ms = heartbeat_timeout_ms;
	r.server_run = 0x5eed;
	r.version = hello->hello->version; /* the client's own: this server speaks it */
	raw_send_body(fd, hello->id, MMC__FRAME__BODY_HELLO_REPLY, &r);
}
