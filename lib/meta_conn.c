#include "meta_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "local_config.h"
#include "log.h"
#include "meta_auth.h"
#include "meta_tls.h"
#include "meta_leader.h"

#define BUCKETS          256
#define CONNECT_MS       5000
#define BACKOFF_MIN      100
#define BACKOFF_MAX      2000
#define ELECTION_MS      150   /* how often to look again while the servers that answer all stand by... */
#define ELECTION_FAST_MS 30000 /* ...for this long: a lease and a load; past it the lock store is likely down */
#define READ_PARK_MS     20    /* the reader thread keeps off the socket this long after a call: callers read */
#define READ_CHUNK       65536u

enum mc_state { MC_DOWN, MC_CONNECTING, MC_READY };

/*
 * Who owns what: lock guards state, fd, next_id, pending, session and the task route, and every write to them
 * takes it. The reader and keeper handles (reader_started, keeper_started) belong to the thread that starts and
 * joins them: meta_conn_open's caller, then the keeper alone. stop and losses are atomics, read without the lock.
 * send_lock only orders the bytes of whole frames on the socket; it is never held together with lock.
 */
struct meta_conn {
	const struct client_conf *conf;
	pthread_mutex_t lock;
	pthread_cond_t state_cond;
	pthread_mutex_t send_lock;
	enum mc_state state;
	int fd;
	uint64_t next_id;
	struct mcall *pending[BUCKETS];
	struct meta_session session;
	pthread_t reader, keeper;
	bool reader_started, keeper_started;
	_Atomic bool stop;
	meta_reconnect_fn on_reconnect;
	void *owner;
	meta_task_fn on_task;
	void *task_owner;
	_Atomic uint64_t losses;      /* connections lost so far: see meta_conn_losses() */
	struct meta_tls_ctx *tls_ctx; /* NULL: plain TCP */
	struct meta_tls *tls;         /* the session on fd, with tls_ctx */
	/* bumped (under send_lock) when fd and tls go: a sender that read them before checks this under send_lock,
	 * so it never writes to a closed (or reused) descriptor or a freed session */
	_Atomic uint64_t gen;
	struct meta_leader leader; /* which of the configured servers to dial (handshake thread only) */
	/*
	 * Who reads the socket (under lock). A caller waiting for its reply reads and dispatches every frame itself
	 * when nobody else does, which saves the reader thread's wake-up of it; the reader thread reads while no call
	 * is in flight (server tasks, a closed connection), and for callers that came while the socket was taken.
	 * Plain TCP only: under TLS the reader thread reads everything. rd belongs to the owner of the read side.
	 */
	enum { RD_NONE, RD_THREAD, RD_CALLER } rd_owner;
	bool rd_failed;         /* a caller's read failed (or the connection is being dropped): the reader ends it */
	unsigned inflight;      /* entries in pending[] */
	uint64_t rd_active_ms;  /* clock_ms() when the newest reply came in */
	pthread_cond_t rd_cond; /* the reader thread waits here while callers read */
	struct wbuf rd;         /* read and not yet dispatched */
};

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tls_free(void *p)
{
	wbuf_free(p);
	free(p);
}

static void tls_init(void)
{
	pthread_key_create(&tls_key, tls_free);
}

/* Each calling thread encodes into its own buffer, kept between calls. */
static struct wbuf *tls_wbuf(void)
{
	struct wbuf *b;

	pthread_once(&tls_once, tls_init);
	b = pthread_getspecific(tls_key);
	if (!b && (b = calloc(1, sizeof(*b))))
		pthread_setspecific(tls_key, b);
	return b;
}

/* ---- pending calls (lock held) ---- */

static void pending_add(struct meta_conn *mc, struct mcall *c)
{
	struct mcall **head = &mc->pending[c->id % BUCKETS];

	c->next = *head;
	*head = c;
	mc->inflight++;
}

static struct mcall *pending_take(struct meta_conn *mc, uint64_t id)
{
	struct mcall **p = &mc->pending[id % BUCKETS];

	while (*p && (*p)->id != id)
		p = &(*p)->next;
	if (*p) {
		struct mcall *c = *p;

		*p = c->next;
		mc->inflight--;
		return c;
	}
	return NULL;
}

static void fail_all(struct meta_conn *mc, int status)
{
	for (int i = 0; i < BUCKETS; i++) {
		while (mc->pending[i]) {
			struct mcall *c = mc->pending[i];

			mc->pending[i] = c->next;
			c->status = status;
			c->done = true;
			pthread_cond_signal(&c->cond);
		}
	}
	mc->inflight = 0;
}

/* ---- socket ---- */

/* flags: for send(2) (MSG_MORE); TLS ignores them. */
static int write_full(int fd, struct meta_tls *t, const void *buf, size_t len, int flags)
{
	const char *p = buf;

	if (t)
		return meta_tls_write(t, buf, len);
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | flags);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n < 0 && errno != EINTR) {
			return -1;
		}
	}
	return 0;
}

static int connect_to(const char *host, uint16_t port)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai, *a;
	char portstr[8];
	int fd = -1, one = 1;

	snprintf(portstr, sizeof(portstr), "%u", port);
	if (getaddrinfo(host, portstr, &hints, &ai))
		return -1;
	for (a = ai; a && fd < 0; a = a->ai_next) {
		struct pollfd pfd;
		int err = 0;
		socklen_t elen = sizeof(err);

		fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) && errno != EINPROGRESS)
			goto next;
		pfd = (struct pollfd){.fd = fd, .events = POLLOUT};
		if (poll(&pfd, 1, CONNECT_MS) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) || err)
			goto next;
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		continue;
	next:
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

/* ---- reader thread ---- */

static void dispatch(struct meta_conn *mc, const uint8_t *frame, size_t len)
{
	uint64_t id;
	uint32_t body;
	const uint8_t *data;
	size_t dlen;
	struct mcall *c;
	int status;

	if (wire_split(frame, len, &id, &body, &data, &dlen) || !id)
		return;
	if (body == WB_TASK) { /* a request from the server, not a reply */
		meta_task_fn fn;
		void *owner;

		pthread_mutex_lock(&mc->lock);
		fn = mc->on_task;
		owner = mc->task_owner;
		pthread_mutex_unlock(&mc->lock);
		if (fn)
			fn(owner, id, data, dlen);
		return;
	}
	pthread_mutex_lock(&mc->lock);
	c = pending_take(mc, id);
	mc->rd_active_ms = clock_ms(); /* a reader thread that read this reply parks now, not after one more */
	pthread_mutex_unlock(&mc->lock);
	if (!c)
		return; /* the caller timed out */
	status = c->decode ? c->decode(c, body, data, dlen) : 0;
	pthread_mutex_lock(&mc->lock);
	c->status = status;
	c->done = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&mc->lock);
}

/* Grows the read buffer to hold at least n bytes. */
static int rd_reserve(struct wbuf *b, size_t n)
{
	uint8_t *d;

	if (n <= b->cap)
		return 0;
	n = n < 2 * b->cap ? 2 * b->cap : n;
	if (!(d = realloc(b->data, n)))
		return -1;
	b->data = d;
	b->cap = n;
	return 0;
}

/* Dispatches every whole frame in the read buffer and keeps the rest. Returns 0, or -1 for a bad frame. */
static int rd_dispatch(struct meta_conn *mc)
{
	struct wbuf *b = &mc->rd;
	size_t off = 0;
	int rc = 0;

	while (b->len - off >= 4) {
		const uint8_t *h = b->data + off;
		uint32_t len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;

		if (len == 0 || len > MMC_FRAME_MAX) {
			lg_error("meta connection: bad frame length %u", len);
			rc = -1;
			break;
		}
		if (b->len - off - 4 < len) {
			rc = rd_reserve(b, 4 + (size_t)len);
			break;
		}
		dispatch(mc, h + 4, len);
		off += 4 + (size_t)len;
	}
	memmove(b->data, b->data + off, b->len - off);
	b->len -= off;
	return rc;
}

/* Reads what the connection has (blocking until something comes) and dispatches the whole frames. Only the owner of
 * the read side calls it. Returns 0, or -1: the connection is gone or sent a bad frame. */
static int read_frames(struct meta_conn *mc, int fd, struct meta_tls *tls)
{
	struct wbuf *b = &mc->rd;
	ssize_t n;

	if (rd_reserve(b, b->len + READ_CHUNK))
		return -1;
	n = tls ? meta_tls_read(tls, b->data + b->len, b->cap - b->len) : read(fd, b->data + b->len, b->cap - b->len);
	if (n < 0 && errno == EINTR)
		return 0;
	if (n <= 0)
		return -1;
	b->len += (size_t)n;
	return rd_dispatch(mc);
}

/* Plain TCP: waits up to ms (-1: without end) for the socket, then read_frames. Returns 0 (frames, or nothing yet)
 * or -1. */
static int read_some(struct meta_conn *mc, int fd, int ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	int r = poll(&pfd, 1, ms);

	if (r <= 0)
		return r < 0 && errno != EINTR ? -1 : 0;
	return read_frames(mc, fd, NULL);
}

/* The reader thread keeps off while a caller reads, and while calls have just been flowing (the next caller reads
 * its own reply); it reads when nobody waits (tasks, a closed connection) or a waiting caller cannot. Lock held. */
static bool reader_parks(const struct meta_conn *mc)
{
	if (mc->rd_owner == RD_CALLER)
		return true;
	return mc->inflight == 0 && clock_ms() < mc->rd_active_ms + READ_PARK_MS;
}

/* Plain TCP: reads only while no caller does. Returns when the connection is gone or must end. */
static void read_plain(struct meta_conn *mc, int fd)
{
	for (;;) {
		int rc;

		pthread_mutex_lock(&mc->lock);
		while (!mc->rd_failed && !atomic_load(&mc->stop) && reader_parks(mc)) {
			struct timespec dl = clock_deadline(READ_PARK_MS);

			pthread_cond_timedwait(&mc->rd_cond, &mc->lock, &dl);
		}
		if (mc->rd_failed || atomic_load(&mc->stop)) {
			pthread_mutex_unlock(&mc->lock);
			return;
		}
		mc->rd_owner = RD_THREAD;
		pthread_mutex_unlock(&mc->lock);
		rc = read_some(mc, fd, -1);
		pthread_mutex_lock(&mc->lock);
		mc->rd_owner = RD_NONE;
		pthread_mutex_unlock(&mc->lock);
		if (rc)
			return;
	}
}

static void *reader_main(void *arg)
{
	struct meta_conn *mc = arg;
	bool was_ready;
	int fd;

	pthread_mutex_lock(&mc->lock);
	fd = mc->fd;
	pthread_mutex_unlock(&mc->lock);
	if (mc->tls) /* under TLS the reader thread reads everything, blocking */
		while (read_frames(mc, fd, mc->tls) == 0)
			;
	else
		read_plain(mc, fd);
	pthread_mutex_lock(&mc->lock);
	was_ready = mc->state == MC_READY; /* not a handshake that failed (a standby's answer, say) */
	mc->state = MC_DOWN;
	atomic_fetch_add(&mc->losses, 1); /* before the callers learn of it: their transfers check it next */
	fail_all(mc, MMC_NOT_CONNECTED_META);
	pthread_cond_broadcast(&mc->state_cond);
	pthread_mutex_unlock(&mc->lock);
	if (!atomic_load(&mc->stop) && was_ready)
		lg_warn("lost the meta server connection; reconnecting");
	return NULL;
}

/* Makes the reader thread end the connection, parked or not (lock held). */
static void reader_end(struct meta_conn *mc)
{
	mc->rd_failed = true;
	pthread_cond_broadcast(&mc->rd_cond);
}

/* ---- calls ---- */

static int wait_ready(struct meta_conn *mc, const struct mcall *c)
{
	struct timespec dl;
	uint64_t now, end;

	/* a handshake call goes out before the connection is ready, but not once its reader has exited: nothing would
	 * read its reply or fail it, and it would wait out timeout_ms */
	if (c->bypass)
		return mc->stop || mc->state == MC_DOWN ? MMC_NOT_CONNECTED_META : 0;
	if (mc->state == MC_READY)
		return mc->stop ? MMC_NOT_CONNECTED_META : 0;
	if (!mc->conf->c.retry_ms || mc->stop)
		return MMC_NOT_CONNECTED_META;
	now = clock_ms();
	end = c->deadline_ms ? c->deadline_ms : now + mc->conf->c.retry_ms;
	if (end <= now)
		return MMC_NOT_CONNECTED_META;
	dl = clock_deadline(end - now);
	while (mc->state != MC_READY && !mc->stop)
		if (pthread_cond_timedwait(&mc->state_cond, &mc->lock, &dl) == ETIMEDOUT)
			break;
	return mc->state == MC_READY && !mc->stop ? 0 : MMC_NOT_CONNECTED_META;
}

/* The connection a sender read under the lock. */
struct link {
	int fd;
	struct meta_tls *tls;
	uint64_t gen;
};

static struct link link_of(struct meta_conn *mc)
{
	return (struct link){mc->fd, mc->tls, atomic_load(&mc->gen)};
}

static int send_frame(struct meta_conn *mc, struct link l, const struct wbuf *b, int flags)
{
	int rc = -1;

	pthread_mutex_lock(&mc->send_lock);
	if (atomic_load(&mc->gen) == l.gen) {
		rc = write_full(l.fd, l.tls, b->data, b->len, flags);
		if (rc)
			shutdown(l.fd, SHUT_RDWR); /* the reader sees it and fails everything pending */
	}
	pthread_mutex_unlock(&mc->send_lock);
	return rc ? MMC_NOT_CONNECTED_META : 0;
}

/* Milliseconds (rounded up) until a clock_deadline() deadline; 0 or less once it has passed. */
static int64_t ms_until(const struct timespec *dl)
{
	struct timespec now;
	int64_t ns;

	clock_gettime(CLOCK_REALTIME, &now);
	ns = (int64_t)(dl->tv_sec - now.tv_sec) * 1000000000 + (dl->tv_nsec - now.tv_nsec);
	return ns <= 0 ? 0 : (ns + 999999) / 1000000;
}

/* Whether this caller may read the socket of link l itself: plain TCP, still that connection, nobody reading. */
static bool may_read(const struct meta_conn *mc, struct link l)
{
	return !l.tls && mc->rd_owner == RD_NONE && !mc->rd_failed && mc->state != MC_DOWN && mc->fd == l.fd &&
	       atomic_load(&mc->gen) == l.gen;
}

/*
 * The caller reads the socket until its own reply is in or its deadline passes, dispatching every frame that comes
 * (other callers' replies, server tasks). Lock held on entry and return. Returns true when the deadline passed.
 */
static bool read_own(struct meta_conn *mc, struct mcall *c, struct link l, const struct timespec *dl)
{
	bool late = false;
	int rc = 0;

	mc->rd_owner = RD_CALLER;
	while (!c->done && rc == 0 && !late) {
		int64_t ms = ms_until(dl);

		late = ms <= 0;
		if (late)
			break;
		pthread_mutex_unlock(&mc->lock);
		rc = read_some(mc, l.fd, ms > INT32_MAX ? INT32_MAX : (int)ms);
		pthread_mutex_lock(&mc->lock);
	}
	mc->rd_owner = RD_NONE;
	if (rc) {
		shutdown(l.fd, SHUT_RDWR); /* a bad frame: the server must see the end too */
		reader_end(mc);            /* which fails every call still waiting, this one included */
	} else if (mc->inflight) {
		pthread_cond_broadcast(&mc->rd_cond); /* the reader thread reads for the callers still waiting */
	}
	return late;
}

/* How long the caller waits for its reply: timeout_ms, or less when its own deadline comes sooner. */
static uint64_t reply_wait_ms(const struct meta_conn *mc, const struct mcall *c)
{
	uint64_t now = clock_ms(), wait = mc->conf->c.timeout_ms;

	if (c->reply_by_ms)
		wait = c->reply_by_ms <= now ? 0 : c->reply_by_ms - now < wait ? c->reply_by_ms - now : wait;
	return wait;
}

int meta_call(struct meta_conn *mc, uint32_t body, const pb_msgdesc_t *fields, const void *msg, struct mcall *c)
{
	struct wbuf *b = tls_wbuf();
	struct timespec dl;
	struct link l;
	int rc;

	if (!b)
		return MMC_MALLOC_FAILED;
	pthread_cond_init(&c->cond, NULL);
	c->done = false;
	c->status = 0;
	pthread_mutex_lock(&mc->lock);
	rc = wait_ready(mc, c);
	if (rc)
		goto out_unlock;
	c->id = ++mc->next_id;
	c->losses = atomic_load(&mc->losses); /* stable under the lock while the connection is ready */
	rc = wire_encode(b, c->id, body, fields, msg);
	if (rc)
		goto out_unlock;
	pending_add(mc, c);
	l = link_of(mc);
	pthread_mutex_unlock(&mc->lock);

	/* a failed send completes the call through the reader; a send to a dropped link, with a timeout */
	send_frame(mc, l, b, 0);

	pthread_mutex_lock(&mc->lock);
	dl = clock_deadline(reply_wait_ms(mc, c));
	while (!c->done) {
		bool late = may_read(mc, l) ? read_own(mc, c, l, &dl)
		                            : pthread_cond_timedwait(&c->cond, &mc->lock, &dl) == ETIMEDOUT;

		if (late && !c->done && pending_take(mc, c->id)) {
			c->status = MMC_TIMEOUT;
			break;
		}
	}
	rc = c->status;
	if (rc == MMC_NOT_LEADER && !c->bypass) {
		/* the server stopped leading before it ran the call: drop it and follow the leader, and let the caller
		 * see a lost connection (it retries what is safe to repeat, within retry_ms) */
		if (mc->fd == l.fd && atomic_load(&mc->gen) == l.gen)
			shutdown(l.fd, SHUT_RDWR);
		rc = MMC_NOT_CONNECTED_META;
	}
out_unlock:
	pthread_mutex_unlock(&mc->lock);
	pthread_cond_destroy(&c->cond);
	return rc;
}

static int send_oneway(struct meta_conn *mc, uint32_t body, const pb_msgdesc_t *fields, const void *msg, int flags)
{
	struct wbuf *b = tls_wbuf();
	struct link l;
	int rc;

	if (!b)
		return MMC_MALLOC_FAILED;
	pthread_mutex_lock(&mc->lock);
	rc = mc->state == MC_READY ? 0 : MMC_NOT_CONNECTED_META;
	l = link_of(mc);
	pthread_mutex_unlock(&mc->lock);
	if (rc || (rc = wire_encode(b, 0, body, fields, msg)))
		return rc;
	return send_frame(mc, l, b, flags);
}

int meta_send(struct meta_conn *mc, uint32_t body, const pb_msgdesc_t *fields, const void *msg)
{
	return send_oneway(mc, body, fields, msg, 0);
}

int meta_send_deferred(struct meta_conn *mc, uint32_t body, const pb_msgdesc_t *fields, const void *msg)
{
	return send_oneway(mc, body, fields, msg, MSG_MORE);
}

void meta_conn_on_task(struct meta_conn *mc, meta_task_fn fn, void *owner)
{
	pthread_mutex_lock(&mc->lock);
	mc->task_owner = owner;
	mc->on_task = fn;
	pthread_mutex_unlock(&mc->lock);
}

int meta_reply(struct meta_conn *mc, uint64_t id, int result)
{
	struct wbuf *b = tls_wbuf();
	mmc_Reply r = {.result = result};
	struct link l;
	int rc;

	if (!b)
		return MMC_MALLOC_FAILED;
	pthread_mutex_lock(&mc->lock);
	rc = mc->state == MC_READY || mc->state == MC_CONNECTING ? 0 : MMC_NOT_CONNECTED_META;
	l = link_of(mc);
	pthread_mutex_unlock(&mc->lock);
	if (rc || (rc = wire_encode(b, id, WB_REPLY, mmc_Reply_fields, &r)))
		return rc;
	return send_frame(mc, l, b, 0);
}

int meta_decode_reply(struct mcall *c, uint32_t body, const uint8_t *data, size_t len)
{
	mmc_Reply r = mmc_Reply_init_zero;
	pb_istream_t s = pb_istream_from_buffer(data, len);

	if (body != WB_REPLY || !pb_decode(&s, mmc_Reply_fields, &r))
		return MMC_INTERNAL_ERROR;
	return r.result;
}

/* One hello: what the session learns, and the challenge-response on the way. */
struct hello {
	struct meta_session sess;
	struct meta_auth auth;
	mmc_AuthProof proof; /* the answer to an AuthChallenge */
};

#define HELLO_CHALLENGED 1 /* decode_hello: an AuthChallenge came, hello.proof answers it */

static int decode_hello(struct mcall *c, uint32_t body, const uint8_t *data, size_t len)
{
	mmc_HelloReply r = mmc_HelloReply_init_zero;
	pb_istream_t s = pb_istream_from_buffer(data, len);
	struct hello *h = c->arg;
	int rc;

	if (body == WB_AUTH_CHALLENGE && !h->auth.challenged) {
		rc = meta_auth_answer(&h->auth, data, len, &h->proof);
		return rc ? rc : HELLO_CHALLENGED;
	}
	if (body != WB_HELLO_REPLY || !pb_decode(&s, mmc_HelloReply_fields, &r))
		return MMC_INTERNAL_ERROR;
	h->sess.id = r.session;
	h->sess.lease_ttl_ms = r.lease_ttl_ms;
	h->sess.heartbeat_timeout_ms = r.heartbeat_timeout_ms;
	h->sess.server_run = r.server_run;
	/* a standby's redirect needs no proof: the leader it names must still prove the cluster secret */
	if (r.result == MMC_NOT_LEADER) {
		snprintf(h->sess.leader, sizeof(h->sess.leader), "%s", r.leader_address);
		return MMC_NOT_LEADER;
	}
	return meta_auth_reply(&h->auth, &r);
}

/* ---- connection life ---- */

/* The connection is down and its reader gone: forget the socket (under the lock: senders read fd) and close it. */
static void conn_drop_fd(struct meta_conn *mc, int fd)
{
	struct meta_tls *t;

	pthread_mutex_lock(&mc->lock);
	mc->state = MC_DOWN;
	mc->fd = -1;
	t = mc->tls;
	mc->tls = NULL;
	pthread_mutex_unlock(&mc->lock);
	shutdown(fd, SHUT_RDWR); /* a sender blocked on a full socket fails now, and lets go of send_lock */
	pthread_mutex_lock(&mc->send_lock);
	atomic_fetch_add(&mc->gen, 1);
	meta_tls_free(t);
	close(fd);
	pthread_mutex_unlock(&mc->send_lock);
}

/* A connected socket, through its TLS handshake when TLS is on. Returns 0 or MMC_*. */
static int dial(struct meta_conn *mc, int *fd, struct meta_tls **tls)
{
	const char *host;
	uint16_t port;
	int rc = 0;

	meta_leader_target(&mc->leader, &host, &port);
	*fd = connect_to(host, port);
	*tls = NULL;
	if (*fd < 0) {
		meta_leader_failed(&mc->leader);
		return MMC_NOT_CONNECTED_META;
	}
	if (mc->tls_ctx && !(*tls = meta_tls_connect(mc->tls_ctx, *fd, host, CONNECT_MS, &rc))) {
		close(*fd);
		*fd = -1;
	}
	return rc;
}

/* Hello, and the AuthProof when the server challenges. Returns 0 (sess filled) or MMC_*. */
static int say_hello(struct meta_conn *mc, struct meta_session *sess)
{
	struct hello h = {.auth.token = mc->conf->auth_token};
	mmc_Hello msg = mmc_Hello_init_zero;
	struct mcall c = {.decode = decode_hello, .arg = &h, .bypass = true};
	int rc;

	gethostname(msg.host, sizeof(msg.host) - 1);
	msg.pid = (uint32_t)getpid();
	if ((rc = meta_auth_hello(&h.auth, &msg)))
		return rc;
	rc = meta_call(mc, WB_HELLO, mmc_Hello_fields, &msg, &c);
	if (rc == HELLO_CHALLENGED)
		rc = meta_call(mc, WB_AUTH_PROOF, mmc_AuthProof_fields, &h.proof, &c);
	*sess = h.sess;
	return rc == HELLO_CHALLENGED ? MMC_INTERNAL_ERROR : rc;
}

/* Opens a socket to the address meta_leader names, starts its reader and says hello. Called without the lock. */
static int handshake_one(struct meta_conn *mc)
{
	struct meta_session sess = {0};
	struct meta_tls *tls;
	int fd, rc = dial(mc, &fd, &tls);

	if (rc)
		return rc;
	if (mc->reader_started)
		pthread_join(mc->reader, NULL);
	mc->reader_started = false;
	pthread_mutex_lock(&mc->lock);
	mc->fd = fd;
	mc->tls = tls;
	mc->state = MC_CONNECTING;
	mc->rd_owner = RD_NONE;
	mc->rd_failed = false;
	mc->rd.len = 0;
	pthread_mutex_unlock(&mc->lock);
	if (pthread_create(&mc->reader, NULL, reader_main, mc)) {
		conn_drop_fd(mc, fd);
		return MMC_ERROR;
	}
	mc->reader_started = true;
	rc = say_hello(mc, &sess);
	if (rc == 0 && mc->on_reconnect)
		rc = mc->on_reconnect(mc->owner);
	pthread_mutex_lock(&mc->lock);
	if (rc == 0 && mc->state == MC_CONNECTING) {
		mc->session = sess;
		mc->state = MC_READY;
		pthread_cond_broadcast(&mc->state_cond);
	} else if (rc == 0) {
		rc = MMC_NOT_CONNECTED_META;
	}
	if (rc)
		reader_end(mc);
	pthread_mutex_unlock(&mc->lock);
	if (rc) {
		shutdown(fd, SHUT_RDWR);
		pthread_join(mc->reader, NULL);
		mc->reader_started = false;
		/* TLS 1.3: the server checks our certificate after our side of the handshake is done, and its refusal
		 * is an alert the hello's read meets, not a lost connection */
		if (rc == MMC_NOT_CONNECTED_META && meta_tls_refused(tls))
			rc = MMC_NOT_AUTHORIZED;
		conn_drop_fd(mc, fd);
	}
	if (rc == MMC_NOT_LEADER)
		meta_leader_redirect(&mc->leader, sess.leader);
	else if (rc == 0)
		meta_leader_connected(&mc->leader);
	return rc;
}

/* Tries the configured servers (and the leader a standby names) until one leads; MMC_NOT_LEADER when some
 * answered but none leads right now (an election in progress). */
static int handshake(struct meta_conn *mc)
{
	int rc = MMC_NOT_CONNECTED_META;
	bool standby_seen = false;

	for (unsigned i = 0; i < meta_leader_attempts(&mc->leader) && !atomic_load(&mc->stop); i++) {
		rc = handshake_one(mc);
		standby_seen |= rc == MMC_NOT_LEADER;
		if (rc != MMC_NOT_LEADER && rc != MMC_NOT_CONNECTED_META)
			break;
		if (rc == MMC_NOT_CONNECTED_META && mc->leader.n == 1 && !mc->leader.hint_host[0])
			break; /* one server and it is not there: today's behaviour, back off */
	}
	return rc == MMC_NOT_CONNECTED_META && standby_seen ? MMC_NOT_LEADER : rc;
}

/*
 * The wait before the next handshake. Servers that answered but do not lead are electing one, which ends when the
 * old lease does (a few seconds): look again soon, or every call waiting for the leader waits a doubled backoff
 * past it. Jitter spreads a fleet of clients over the interval. An election that lasts (no server can take the
 * lock), or nothing answering at all, backs off to BACKOFF_MAX. *since: when the standbys began answering, 0 if not.
 */
static uint32_t retry_wait(int rc, uint32_t *backoff, uint64_t *since)
{
	uint64_t now = clock_ms();
	uint32_t wait = *backoff;

	if (rc != MMC_NOT_LEADER)
		*since = 0;
	else if (!*since)
		*since = now;
	if (rc == MMC_NOT_LEADER && now - *since < ELECTION_FAST_MS) {
		*backoff = BACKOFF_MIN;
		return ELECTION_MS / 2 + (uint32_t)(now * 2654435761u % ELECTION_MS);
	}
	*backoff = wait * 2 > BACKOFF_MAX ? BACKOFF_MAX : wait * 2;
	return wait;
}

static void *keeper_main(void *arg)
{
	struct meta_conn *mc = arg;
	uint32_t backoff = BACKOFF_MIN;
	uint64_t election_since = 0;
	int fd, rc;

	pthread_mutex_lock(&mc->lock);
	while (!mc->stop) {
		struct timespec dl;

		if (mc->state == MC_READY) {
			mmc_Ping ping = mmc_Ping_init_zero;

			dl = clock_deadline(mc->conf->c.heartbeat_ms);
			pthread_cond_timedwait(&mc->state_cond, &mc->lock, &dl);
			if (mc->stop || mc->state != MC_READY)
				continue;
			pthread_mutex_unlock(&mc->lock);
			meta_send(mc, WB_PING, mmc_Ping_fields, &ping);
			pthread_mutex_lock(&mc->lock);
			backoff = BACKOFF_MIN;
			continue;
		}
		/* down: the reader has exited; close its socket and try again */
		fd = mc->fd;
		pthread_mutex_unlock(&mc->lock);
		if (mc->reader_started) {
			pthread_join(mc->reader, NULL);
			mc->reader_started = false;
			conn_drop_fd(mc, fd);
		}
		rc = atomic_load(&mc->stop) ? MMC_NOT_CONNECTED_META : handshake(mc);
		if (rc == 0) {
			election_since = 0;
			lg_info("reconnected to the meta server");
			pthread_mutex_lock(&mc->lock);
			continue;
		}
		pthread_mutex_lock(&mc->lock);
		dl = clock_deadline(retry_wait(rc, &backoff, &election_since));
		if (!mc->stop)
			pthread_cond_timedwait(&mc->state_cond, &mc->lock, &dl);
	}
	pthread_mutex_unlock(&mc->lock);
	return NULL;
}

int meta_conn_open(struct meta_conn **out, const struct client_conf *conf)
{
	struct meta_conn *mc = calloc(1, sizeof(*mc));
	int rc;

	if (!mc)
		return MMC_MALLOC_FAILED;
	mc->conf = conf;
	mc->fd = -1;
	pthread_mutex_init(&mc->lock, NULL);
	pthread_mutex_init(&mc->send_lock, NULL);
	pthread_cond_init(&mc->state_cond, NULL);
	pthread_cond_init(&mc->rd_cond, NULL);
	if (conf->tls.enable && !(mc->tls_ctx = meta_tls_ctx_new(conf))) {
		meta_conn_close(mc);
		return MMC_INVALID_PARAM;
	}
	rc = meta_leader_parse(&mc->leader, conf->c.meta_service_url, (char[256]){0}, 256, &(uint16_t){0}, NULL, 0);
	if (rc == 0)
		rc = handshake(mc);
	/* servers that all stand by are electing a leader: wait for it like for a slow reply (timeout_ms) */
	for (uint64_t dl = clock_ms() + conf->c.timeout_ms; rc == MMC_NOT_LEADER && clock_ms() < dl;) {
		uint64_t since = 0;
		uint32_t backoff = BACKOFF_MIN, wait = retry_wait(rc, &backoff, &since);
		struct timespec ts = {(time_t)(wait / 1000), (long)(wait % 1000) * 1000000};

		nanosleep(&ts, NULL);
		rc = handshake(mc);
	}
	if (rc == MMC_NOT_LEADER)
		rc = MMC_NOT_CONNECTED_META;
	if (rc) {
		meta_conn_close(mc);
		return rc;
	}
	*out = mc;
	return 0;
}

int meta_conn_start(struct meta_conn *mc, meta_reconnect_fn on_reconnect, void *owner)
{
	mc->on_reconnect = on_reconnect;
	mc->owner = owner;
	if (pthread_create(&mc->keeper, NULL, keeper_main, mc))
		return MMC_ERROR;
	mc->keeper_started = true;
	return 0;
}

void meta_conn_close(struct meta_conn *mc)
{
	if (!mc)
		return;
	pthread_mutex_lock(&mc->lock);
	atomic_store(&mc->stop, true);
	if (mc->fd >= 0)
		shutdown(mc->fd, SHUT_RDWR);
	pthread_cond_broadcast(&mc->state_cond);
	pthread_cond_broadcast(&mc->rd_cond);
	pthread_mutex_unlock(&mc->lock);
	if (mc->keeper_started)
		pthread_join(mc->keeper, NULL);
	if (mc->reader_started)
		pthread_join(mc->reader, NULL);
	if (mc->fd >= 0)
		close(mc->fd);
	meta_tls_free(mc->tls);
	meta_tls_ctx_free(mc->tls_ctx);
	pthread_mutex_destroy(&mc->lock);
	pthread_mutex_destroy(&mc->send_lock);
	pthread_cond_destroy(&mc->state_cond);
	pthread_cond_destroy(&mc->rd_cond);
	wbuf_free(&mc->rd);
	free(mc);
}

uint64_t meta_conn_losses(struct meta_conn *mc)
{
	return atomic_load(&mc->losses);
}

void meta_conn_session(struct meta_conn *mc, struct meta_session *out)
{
	pthread_mutex_lock(&mc->lock);
	*out = mc->session;
	pthread_mutex_unlock(&mc->lock);
}
