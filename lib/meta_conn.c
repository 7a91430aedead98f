#include "meta_conn_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "lg.h"
#include "meta_auth.h"

#define CONNECT_MS       5000
#define BACKOFF_MIN      100
#define BACKOFF_MAX      2000
#define ELECTION_MS      150   /* how often to look again while the servers that answer all stand by... */
#define ELECTION_FAST_MS 30000 /* ...for this long: a lease and a load; past it the lock store is likely down */
#define SILENT_MS        10000 /* a server that announced no heartbeat timeout: the default one */

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

/* How long a server may stay silent, or leave what is sent to it unread: its heartbeat timeout (how long it waits
 * for a silent client), and at least a few pings unanswered. */
static uint64_t silence_limit(const struct client_conf *conf, const struct meta_session *sess)
{
	uint64_t limit = sess->heartbeat_timeout_ms ? sess->heartbeat_timeout_ms : SILENT_MS;

	return limit < 3 * (uint64_t)conf->c.heartbeat_ms ? 3 * (uint64_t)conf->c.heartbeat_ms : limit;
}

/* A send that cannot go on for the silence limit fails (SO_SNDTIMEO), and the sender drops the connection: a server
 * that stopped reading would otherwise hold the sending thread, and the send lock every other sender and the
 * keeper's pings wait on, for ever (TCP keeps a connection whose peer advertises a zero window). */
static void bound_sends(int fd, const struct client_conf *conf, const struct meta_session *sess)
{
	uint64_t ms = silence_limit(conf, sess);
	struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* One hello: what the session learns, and the challenge-response on the way. */
struct hello {
	struct meta_conn *mc;
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
	if ((rc = meta_auth_reply(&h->auth, &r)))
		return rc;
	/* here, on the thread that reads the frames in order: a task the server sends right after its answer runs */
	pthread_mutex_lock(&h->mc->lock);
	h->mc->authed = true;
	pthread_mutex_unlock(&h->mc->lock);
	return 0;
}

/* ---- connection life ---- */

/* The connection is down and its reader gone: forget the socket (under the lock: senders read fd) and close it. */
static void conn_drop_fd(struct meta_conn *mc, int fd)
{
	struct meta_tls *t;

	pthread_mutex_lock(&mc->lock);
	mc->state = MC_DOWN;
	mc->authed = false;
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
	struct hello h = {.mc = mc, .auth.token = &mc->conf->cred};
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
	mc->authed = false;
	mc->rd_owner = RD_NONE;
	mc->rd_failed = false;
	mc->rd.len = 0;
	pthread_mutex_unlock(&mc->lock);
	if (pthread_create(&mc->reader, NULL, mc_reader_main, mc)) {
		conn_drop_fd(mc, fd);
		return MMC_ERROR;
	}
	mc->reader_started = true;
	rc = say_hello(mc, &sess);
	if (rc == 0)
		bound_sends(fd, mc->conf, &sess);
	if (rc == 0 && mc->on_reconnect)
		rc = mc->on_reconnect(mc->owner, &sess);
	pthread_mutex_lock(&mc->lock);
	if (rc == 0 && mc->state == MC_CONNECTING) {
		mc->session = sess;
		atomic_store(&mc->heartbeat_timeout_ms, sess.heartbeat_timeout_ms);
		atomic_store(&mc->heard_ms, clock_ms());
		mc->state = MC_READY;
		pthread_cond_broadcast(&mc->state_cond);
	} else if (rc == 0) {
		rc = MMC_NOT_CONNECTED_META;
	}
	if (rc)
		mc_reader_end(mc);
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

/* Between pings: heartbeat_ms, and often enough that an idle session's grants stay trusted (meta_conn_held_until:
 * three quarters of the server's heartbeat timeout from the newest answered frame). Lock held. */
static uint64_t ping_every(const struct meta_conn *mc)
{
	uint64_t quarter = mc->session.heartbeat_timeout_ms / 4;

	return quarter && quarter < mc->conf->c.heartbeat_ms ? quarter : mc->conf->c.heartbeat_ms;
}

/*
 * A server that answers none of the pings for as long as it waits for a silent client (its heartbeat timeout) has
 * stopped (paused, hung, its host gone without a reset): the connection is dropped as a lost one, so that calls
 * waiting on it fail now rather than at timeout_ms, the store fails over to a new leader, and what this server
 * granted stops being used (meta_conn_losses moves). TCP alone would keep a paused server's connection up. Lock
 * held; true when it dropped it.
 */
static bool drop_if_silent(struct meta_conn *mc)
{
	uint64_t limit = silence_limit(mc->conf, &mc->session);
	uint64_t silent = clock_ms() - atomic_load(&mc->heard_ms);

	if (silent <= limit)
		return false;
	lg_warn(
	    "the meta server answered nothing for %llu ms (its heartbeat timeout: %llu ms): its connection is dropped",
	    (unsigned long long)silent, (unsigned long long)limit);
	shutdown(mc->fd, SHUT_RDWR); /* the reader fails what waits on it and ends the connection */
	return true;
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
			dl = clock_deadline(ping_every(mc));
			pthread_cond_timedwait(&mc->state_cond, &mc->lock, &dl);
			if (mc->stop || mc->state != MC_READY)
				continue;
			if (drop_if_silent(mc))
				continue;
			pthread_mutex_unlock(&mc->lock);
			meta_ping(mc);
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
	hmap_init(&mc->pending, mc_pending_hash, PENDING_MIN);
	pthread_mutex_init(&mc->lock, NULL);
	pthread_mutex_init(&mc->send_lock, NULL);
	clock_cond_init(&mc->state_cond);
	clock_cond_init(&mc->rd_cond);
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

void meta_conn_closing(struct meta_conn *mc)
{
	if (!mc)
		return;
	pthread_mutex_lock(&mc->lock);
	atomic_store(&mc->closing, true);
	pthread_cond_broadcast(&mc->state_cond);
	pthread_mutex_unlock(&mc->lock);
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
	hmap_free(&mc->pending);
	free(mc);
}

uint64_t meta_conn_losses(struct meta_conn *mc)
{
	return atomic_load(&mc->losses);
}

uint64_t meta_conn_held_until(struct meta_conn *mc)
{
	uint64_t sent = atomic_load_explicit(&mc->answered_sent_ms, memory_order_relaxed);
	uint64_t timeout = atomic_load_explicit(&mc->heartbeat_timeout_ms, memory_order_relaxed);

	return sent && timeout ? sent + timeout - timeout / 4 : UINT64_MAX;
}

void meta_conn_session(struct meta_conn *mc, struct meta_session *out)
{
	pthread_mutex_lock(&mc->lock);
	*out = mc->session;
	pthread_mutex_unlock(&mc->lock);
}
