/*
 * A helper thread that takes no signals. The server's signals (SIGTERM, SIGHUP, SIGINT) are handled by libevent on
 * the loop thread, which expects to be the one they reach; a thread started with every signal blocked cannot steal
 * one. Thread-safe: the caller's own mask is restored before the call returns.
 */
#ifndef MMC_QUIET_THREAD_H
#define MMC_QUIET_THREAD_H

#include <pthread.h>

/* pthread_create(t, NULL, fn, arg) with every signal blocked in the new thread. Returns pthread_create's code. */
int quiet_thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
