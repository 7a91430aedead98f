/*
 * mmc-bench rtt: the floor under every call to the meta server on this machine. A bare 64-byte request and reply
 * over loopback TCP between two processes, the answering one asleep in epoll_wait() between requests as the meta
 * server's loop is once it stops polling, the asking one busy for a gap before each request (a put's RMA writes
 * before its put RPC) and then waiting for the reply as libmmc does: polling and yielding its core, or asleep in
 * read(). No mmc code runs: what it prints is the kernel's and the machine's share of a round trip, wake-ups
 * included, which no change to mmc can remove.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define MSG 64

static const char usage[] = "usage: mmc-bench rtt [options]\n"
                            "  --seconds S   per row (default 2; --quick: 0.2)\n"
                            "A 64-byte request and reply over loopback TCP, the answering process asleep in\n"
                            "epoll_wait between requests, the asking one busy for gap_us before each; it waits\n"
                            "for the reply polling (sched_yield between tries) or asleep in read().\n";

static const int gaps_us[] = {0, 100, 450};

static void no_delay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* The answering side: echoes each request, asleep in epoll_wait() in between, until the asking side closes. */
static void echo_main(int listener)
{
	struct epoll_event ev = {.events = EPOLLIN};
	char buf[MSG];
	int fd = accept(listener, NULL, NULL), ep = epoll_create1(0);

	if (fd < 0 || ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
		_exit(1);
	no_delay(fd);
	while (epoll_wait(ep, &ev, 1, -1) >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n <= 0 || write(fd, buf, (size_t)n) != n)
			break;
	}
	_exit(0);
}

static int reply_of(int fd, char *buf, int poll)
{
	size_t got = 0;

	while (got < MSG) {
		ssize_t n = recv(fd, buf + got, MSG - got, poll ? MSG_DONTWAIT : 0);

		if (n > 0)
			got += (size_t)n;
		else if (n == 0 || !poll)
			return -1;
		else
			sched_yield();
	}
	return 0;
}

static int one_row(int fd, int gap_us, int poll, double seconds)
{
	struct samples s = {0};
	char buf[MSG] = {0};
	double end = now_s() + seconds;
	int rc = 0;

	while (rc == 0 && (now_s() < end || s.n < 3)) {
		double t0 = now_s();

		while (now_s() - t0 < gap_us * 1e-6)
			; /* busy, as a caller moving bytes is */
		t0 = now_s();
		rc = write(fd, buf, MSG) == MSG ? reply_of(fd, buf, poll) : -1;
		samples_add(&s, now_s() - t0);
	}
	if (rc == 0)
		printf("%8d  %-6s %10zu %9.1f %9.1f\n", gap_us, poll ? "poll" : "sleep", s.n, samples_median(&s) * 1e6,
		       samples_p99(&s) * 1e6);
	samples_free(&s);
	return rc;
}

static int connect_to(int listener)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || getsockname(listener, (struct sockaddr *)&a, &len) ||
	    connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	no_delay(fd);
	return fd;
}

static int listen_loopback(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd >= 0 && (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int bench_rtt_main(int argc, char **argv, const char *self)
{
	struct bench_opts o;
	int rc = bench_parse(argc, argv, &o, usage), listener, fd, status;
	pid_t child;

	(void)self;
	if (rc)
		return rc > 0 ? 0 : 2;
	if ((listener = listen_loopback()) < 0) {
		perror("mmc-bench rtt: a loopback listener");
		return 1;
	}
	fflush(stdout);
	if ((child = fork()) == 0)
		echo_main(listener);
	fd = child > 0 ? connect_to(listener) : -1;
	close(listener);
	if (fd < 0) {
		fprintf(stderr, "mmc-bench rtt: no connection to the echoing process\n");
		if (child > 0)
			kill(child, SIGKILL);
		rc = 1;
	} else {
		printf(
		    "\n# a 64-byte request and reply over loopback TCP; the answering process sleeps in epoll_wait\n");
		printf("%8s  %-6s %10s %9s %9s\n", "gap_us", "wait", "calls", "p50_us", "p99_us");
		for (size_t g = 0; rc == 0 && g < sizeof(gaps_us) / sizeof(gaps_us[0]); g++)
			for (int poll = 1; rc == 0 && poll >= 0; poll--)
				rc = one_row(fd, gaps_us[g], poll, o.seconds);
		close(fd);
		if (rc)
			fprintf(stderr, "mmc-bench rtt: the echoing process went away\n");
	}
	if (child > 0)
		waitpid(child, &status, 0);
	return rc ? 1 : 0;
}
