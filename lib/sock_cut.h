/*
 * Cutting this process's TCP connections to one peer from outside the library that owns them.
 *
 * libfabric's own way to close the connection to one peer (fi_av_remove with FI_AV_REMOVE_CLEANUP over rxm) crashes
 * the process in rxm's flush when an RMA answer from that peer is half received, which is just when a stalled or
 * late read must be cut off. A connection its peer drops (the peer killed mid-answer) goes down a path that survives
 * this: the provider reads the end of the stream and fails the connection's operations as any error. Shutting the
 * socket down from this side takes that same path: reads then return what the kernel holds and then the end of the
 * stream, and Linux answers data that arrives after it with a reset, so nothing of the connection is written into
 * memory once its operations have failed.
 */
#ifndef MMC_SOCK_CUT_H
#define MMC_SOCK_CUT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Shuts down (SHUT_RDWR) this process's TCP connection to the peer whose listening address is peer (a struct
 * sockaddr_in or sockaddr_in6, plen bytes): every socket dialled to that address, or, when there is none (the peer
 * opened the connection), the socket accepted on this process's listening address self from the peer's host, if
 * there is exactly one. With several, which is the peer's cannot be told: host_wide cuts them all (other processes
 * of that host reconnect), else none is cut. Returns how many were shut down; 0 also for an address that is not an
 * IPv4 or IPv6 one (no socket to find: RDMA providers). An IPv4-mapped IPv6 address matches its IPv4 one.
 * Thread-safe; the sockets stay open (their owner closes them), and a socket number closed and reused meanwhile is
 * left alone.
 */
int sock_cut(const void *peer, size_t plen, const void *self, size_t slen, bool host_wide);

#endif
