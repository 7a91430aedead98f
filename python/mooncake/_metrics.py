"""The client's counters and the HTTP server setup(enable_client_http_server=True) starts, as Mooncake's client
serves them: GET /metrics (Prometheus text), /metrics/summary (one line per operation) and /health."""
import http.server
import logging
import os
import threading

log = logging.getLogger("mooncake.store")

OPS = ("put", "get", "exist", "remove")


class Counters:
    """Keys, failed keys and bytes by operation, for /metrics. Thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self._keys = dict.fromkeys(OPS, 0)
        self._failed = dict.fromkeys(OPS, 0)
        self._bytes = dict.fromkeys(OPS, 0)
        self._prefetched_tokens = 0

    def add_prefetched_tokens(self, tokens):
        with self._lock:
            self._prefetched_tokens += tokens

    def add(self, op, keys, failed=0, nbytes=0):
        with self._lock:
            self._keys[op] += keys
            self._failed[op] += failed
            self._bytes[op] += nbytes

    def snapshot(self):
        with self._lock:
            return dict(self._keys), dict(self._failed), dict(self._bytes)

    def prefetched_tokens(self):
        with self._lock:
            return self._prefetched_tokens

    def prometheus(self):
        keys, failed, nbytes = self.snapshot()
        out = []
        for name, help_, values in (
                ("mooncake_client_keys_total", "Keys asked for, by operation.", keys),
                ("mooncake_client_failed_keys_total", "Keys whose operation failed (a miss counts for get).",
                 failed),
                ("mooncake_client_bytes_total", "Bytes put or read, by operation.", nbytes)):
            out.append("# HELP %s %s\n# TYPE %s counter\n" % (name, help_, name))
            out.extend('%s{op="%s"} %d\n' % (name, op, values[op]) for op in OPS)
        out.append("# HELP mooncake_client_prefetched_tokens_total Tokens the engine loaded from the store "
                   "(record_prefetched_tokens).\n# TYPE mooncake_client_prefetched_tokens_total counter\n"
                   "mooncake_client_prefetched_tokens_total %d\n" % self.prefetched_tokens())
        return "".join(out)

    def summary(self):
        keys, failed, nbytes = self.snapshot()
        return "".join("%s: keys=%d failed=%d bytes=%d\n" % (op, keys[op], failed[op], nbytes[op]) for op in OPS) + \
            "prefetched_tokens: %d\n" % self.prefetched_tokens()


def _handler(counters):
    pages = {"/metrics": counters.prometheus, "/metrics/summary": counters.summary, "/health": lambda: "OK\n"}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            page = pages.get(self.path.split("?", 1)[0])
            body = (page() if page else "not found\n").encode()
            self.send_response(200 if page else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):  # no line per scrape
            pass

    return Handler


class MetricsServer:
    """A threaded HTTP server on port serving counters; .port is the bound port, stop() ends it."""

    def __init__(self, counters, port, host="0.0.0.0"):
        self._srv = http.server.ThreadingHTTPServer((host, port), _handler(counters))
        self._srv.daemon_threads = True
        self._pid = os.getpid()
        self.port = self._srv.server_address[1]
        self._thread = threading.Thread(target=self._srv.serve_forever, name="mooncake-client-http", daemon=True)
        self._thread.start()

    def stop(self):
        if os.getpid() != self._pid:  # a forked child's copy: the serving thread is the parent's, not here to stop
            self._srv.socket.close()
            return
        self._srv.shutdown()
        self._srv.server_close()
        self._thread.join()


def start(counters, port):
    """The server on port, or None (logged) when it cannot listen: an observability flag never stops a setup."""
    try:
        srv = MetricsServer(counters, port)
    except (OSError, OverflowError) as e:
        log.warning("mooncake.store: enable_client_http_server: cannot listen on port %s (%s); the store runs "
                    "without its client HTTP server", port, e)
        return None
    log.info("mooncake.store: client HTTP server (/metrics, /metrics/summary, /health) on port %d", srv.port)
    return srv
