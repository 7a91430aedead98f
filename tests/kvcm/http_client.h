/*
 * A tiny blocking HTTP/1.1 client (keep-alive, Content-Length bodies) for the KVCM tests and benchmark.
 */
#ifndef MMC_TEST_HTTP_CLIENT_H
#define MMC_TEST_HTTP_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct hc {
	int fd;
	uint16_t port;
};

int hc_connect(struct hc *c, uint16_t port);
void hc_close(struct hc *c);
/* Sends method path with body (may be NULL) and reads the reply. Returns the HTTP status or -1; *out is the
 * malloc'd body (NUL-terminated). Reconnects once if the server closed a kept-alive connection. */
int hc_request(struct hc *c, const char *method, const char *path, const char *body, size_t len, char **out);

/* Sends `Authorization: Basic base64(user_colon_password)` with every later request of this process (NULL: none). */
void hc_set_auth(const char *user_colon_password);
/* The status line and headers of the last reply read by this process ("" before any). */
const char *hc_last_head(void);

/* GET /metrics on port and the value of one sample (its name and labels as printed) into *v, 0 when absent (a
 * double: exact for counters below 2^53). Returns the HTTP status or -1. */
int hc_metric(uint16_t port, const char *sample, double *v);

/* POST /api/<api> with a printf-formatted body; returns the parsed reply (NULL unless HTTP 200). */
json_t *hc_call(struct hc *c, const char *api, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
