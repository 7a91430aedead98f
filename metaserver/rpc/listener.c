#include "listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "clock.h"
#include "conn.h"
#include "log.h"
#include "mmc/mmc.h"
#include "tcp_url.h"
#include "tls.h"

#define ACCEPT_PAUSE_MS 100

static int ratelimit_bucket;

/* At the limit, a new connection takes the place of the oldest one that has not finished its hello: half-open
 * connections cannot lock real clients out. */
static bool make_room(struct meta *m)
{
	uint32_t limit = m->rpc->max_connections ? m->rpc->max_connections : m->conf.max_connections;

	if (m->nconns < limit)
		return true;
	if (list_empty(&m->rpc->hello_waits))
		return false;
	conn_displace_oldest(m);
	return m->nconns < limit;
}

static void peer_name(const struct sockaddr *sa, char *out, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	snprintf(out, len, "?");
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		snprintf(out, len, "%s:%u", ip, ntohs(in->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		snprintf(out, len, "[%s]:%u", ip, ntohs(in6->sin6_port));
	}
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg)
{
	struct meta *m = arg;
	char peer[64];

	if (m->rpc->draining || !make_room(m)) {
		m->stats.rpc_refused[RPC_REFUSED_LIMIT] += !m->rpc->draining;
		log_ratelimited(&ratelimit_bucket, LOG_WARN, "op=accept err=%s",
		                m->rpc->draining ? "draining"
		                                 : "too_many_connections key=ock.mmc.meta.max_connections");
		evutil_closesocket(fd);
		return;
	}
	peer_name(sa, peer, sizeof(peer));
	conn_accept(m, fd, peer);
}

static void accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct meta *m = arg;

	if (m->rpc->listener && !m->rpc->draining)
		evconnlistener_enable(m->rpc->listener);
}

/*
 * accept() failed. Out of descriptors (EMFILE, ENFILE) or kernel memory, the listening socket stays readable and
 * libevent would call accept() again at once, forever. A descriptor held by a connection that never said hello is
 * worth less than the one waiting: free it and let the listener try again. With none to free, pause accepting for
 * a moment. Logged at most once a second.
 */
static void accept_error_cb(struct evconnlistener *l, void *arg)
{
	struct meta *m = arg;
	int err = EVUTIL_SOCKET_ERROR();
	uint64_t now = clock_ms();
	struct timeval pause = {0, ACCEPT_PAUSE_MS * 1000};
	bool exhausted = err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
	bool displace = exhausted && !list_empty(&m->rpc->hello_waits);

	if (now - m->rpc->accept_error_logged_ms >= 1000) {
		m->rpc->accept_error_logged_ms = now;
		log_warn("op=accept err=\"%s\" action=%s connections=%u", strerror(err),
		         displace    ? "displace_before_hello"
		         : exhausted ? "pause_accepting"
		                     : "none",
		         m->nconns);
	}
	if (displace) {
		conn_displace_oldest(m);
	} else if (exhausted) {
		evconnlistener_disable(l);
		event_add(m->rpc->accept_resume_ev, &pause);
	}
}

/* Redis's protected mode: a port others can reach needs credentials, or the operator's explicit word. */
static int check_exposure(const struct meta *m, const struct sockaddr *sa, const char *addr)
{
	if (tcp_addr_is_loopback(sa) || m->conf.auth_token[0] || rpc_tls_verifies_clients(m))
		return 0;
	if (m->conf.allow_insecure_bind) {
		log_warn("op=listen addr=%s warning=\"no credentials: anyone who reaches this port may read, write and "
		         "remove every key (ock.mmc.meta.allow_insecure_bind=true)\"",
		         addr);
		return 0;
	}
	log_error("op=listen addr=%s err=\"refusing a non-loopback address without credentials: set "
	          "ock.mmc.meta.auth_token (or ock.mmc.meta.auth_token_file), or ock.mmc.tls.enable with "
	          "ock.mmc.tls.ca.path, or ock.mmc.meta.allow_insecure_bind=true\"",
	          addr);
	return MMC_INVALID_PARAM;
}

/* Binds the first address of host that works. */
static int bind_first(struct meta *m, const struct addrinfo *ai, const char *host, uint16_t port)
{
	char addr[INET6_ADDRSTRLEN + 16];

	for (const struct addrinfo *a = ai; a; a = a->ai_next) {
		peer_name(a->ai_addr, addr, sizeof(addr));
		if (check_exposure(m, a->ai_addr, addr))
			return MMC_INVALID_PARAM;
		m->rpc->listener = evconnlistener_new_bind(
		    m->base, accept_cb, m, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 512,
		    a->ai_addr, (int)a->ai_addrlen);
		if (m->rpc->listener)
			return 0;
		log_warn("op=listen addr=%s err=\"%s\"", addr, strerror(errno));
	}
	log_error("op=listen host=\"%s\" port=%u err=no_address_could_be_bound", host, port);
	return MMC_ERROR;
}

int rpc_listen(struct meta *m, const char *host, uint16_t port, char *bound, size_t boundlen)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char portstr[8], addr[INET6_ADDRSTRLEN + 16];
	int rc;

	list_init(&m->rpc->hello_waits);
	snprintf(portstr, sizeof(portstr), "%u", port);
	rc = getaddrinfo(host, portstr, &hints, &ai);
	if (rc) {
		log_error("op=listen host=\"%s\" err=\"%s\"", host, gai_strerror(rc));
		/* a resolver not up yet (at boot) is no fault of the file: exit 4, which the units restart, not 2
		 * (errno for the start's message: getaddrinfo leaves it as it likes) */
		if (rc != EAI_AGAIN && rc != EAI_FAIL && rc != EAI_SYSTEM && rc != EAI_MEMORY)
			return MMC_INVALID_PARAM;
		errno = rc == EAI_MEMORY ? ENOMEM : rc == EAI_SYSTEM && errno ? errno : EAGAIN;
		return MMC_ERROR;
	}
	rc = bind_first(m, ai, host, port);
	freeaddrinfo(ai);
	if (rc)
		return rc;
	m->rpc->accept_resume_ev = evtimer_new(m->base, accept_resume_cb, m);
	if (!m->rpc->accept_resume_ev)
		return MMC_MALLOC_FAILED;
	evconnlistener_set_error_cb(m->rpc->listener, accept_error_cb);
	getsockname(evconnlistener_get_fd(m->rpc->listener), (struct sockaddr *)&ss, &len);
	peer_name((struct sockaddr *)&ss, addr, sizeof(addr));
	snprintf(bound, boundlen, "tcp://%s", addr);
	return 0;
}

void rpc_stop_listening(struct meta *m)
{
	if (m->rpc->listener) {
		evconnlistener_free(m->rpc->listener);
		m->rpc->listener = NULL;
	}
	if (m->rpc->accept_resume_ev) {
		event_free(m->rpc->accept_resume_ev);
		m->rpc->accept_resume_ev = NULL;
	}
}
