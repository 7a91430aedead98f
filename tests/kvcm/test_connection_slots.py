#!/usr/bin/env python3
"""Sockets that hold a connection slot without using it must not lock every client out (kvcm.service.max_connections):

- gRPC: connections that sent the HTTP/2 preface and keep pinging (any byte resets the idle timeout) are closed
  when they made no request within kvcm.service.request_timeout_ms, and at the limit a new connection takes the slot
  of the oldest that made none.
- HTTP, with accounts: connections answered 401 and kept alive, a request now and then, give their slot to a new
  one at the limit; a connection whose credentials passed keeps its own (its client would not resend a POST)."""
import socket
import sys
import threading
import time
import unittest

import grpc_fixture as fx

SLOTS = 4
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # + an empty SETTINGS
PING = bytes([0, 0, 8, 6, 0, 0, 0, 0, 0]) + b"12345678"


def pinger(port, stop):
    """A socket that speaks HTTP/2 and never asks anything: the preface, then a PING every 200 ms."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(PREFACE)

    def run():
        while not stop.is_set():
            try:
                s.sendall(PING)
            except OSError:
                return
            time.sleep(0.2)

    threading.Thread(target=run, daemon=True).start()
    return s


def closed_by_server(s, within):
    """Whether the server closed s within `within` seconds (reading what it sent meanwhile)."""
    s.settimeout(0.2)
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            if s.recv(65536) == b"":
                return True
        except socket.timeout:
            continue
        except OSError:
            return True
    return False


def http_request(s, body=b"{}", auth=None):
    """One POST of getClusterInfo on the kept-alive socket s: the status (0 when the server closed it)."""
    head = "POST /api/getClusterInfo HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
    if auth:
        head += "Authorization: %s\r\n" % auth
    s.sendall(head.encode() + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    s.settimeout(10)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                return 0
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        length = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
        while len(rest) < length:
            chunk = s.recv(65536)
            if not chunk:
                return 0
            rest += chunk
    except OSError:
        return 0
    return int(head.split()[1])


class Grpc(unittest.TestCase):
    def test_pinging_sockets_lock_nobody_out(self):
        srv = fx.Server("kvcm.service.max_connections=%d" % SLOTS, "kvcm.service.request_timeout_ms=1500")
        stop = threading.Event()
        try:
            socks = [pinger(srv.rpc_port, stop) for _ in range(SLOTS)]
            time.sleep(0.3)  # all accepted
            self.assertEqual(fx.to_dict(fx.grpc_call(srv, "meta", "getClusterInfo", {}))["header"]["status"]["code"],
                             "OK", "a real client takes the slot of a socket that asked nothing")
            self.assertTrue(all(closed_by_server(s, 3) for s in socks[1:]),
                            "sockets that asked nothing go after request_timeout_ms, pings or not")
            self.assertTrue(closed_by_server(socks[0], 1), "the oldest gave its slot")
            self.assertEqual(fx.to_dict(fx.grpc_call(srv, "meta", "getClusterInfo", {}))["header"]["status"]["code"],
                             "OK", "the client's channel, used again")
        finally:
            stop.set()
            self.assertEqual(srv.stop(), [])


class Http(unittest.TestCase):
    def test_sockets_answered_401_give_their_slot(self):
        srv = fx.Server("kvcm.service.max_connections=%d" % SLOTS)
        try:
            self.assertEqual(fx.http_call(srv, "admin", "addAccount", {
                "user_name": "root", "password": "pw1", "role": "ROLE_ADMIN"})[0], 200)
            root = fx.basic("root", "pw1")
            authed = socket.create_connection(("127.0.0.1", srv.http_port))
            for _ in range(5):  # right credentials: only the PBKDF2 time budget refuses them
                if http_request(authed, auth=root) == 200:
                    break
                time.sleep(1.1)
            strangers = [socket.create_connection(("127.0.0.1", srv.http_port)) for _ in range(SLOTS - 1)]
            self.assertEqual([http_request(s) for s in strangers], [401] * (SLOTS - 1), "kept alive after 401")
            late = socket.create_connection(("127.0.0.1", srv.http_port))
            self.assertEqual(http_request(late), 401, "answered, not 503: a 401 socket gave its slot")
            self.assertEqual(http_request(strangers[0]), 0, "the oldest 401 socket was the one closed")
            self.assertEqual(http_request(authed, auth=root), 200, "the authenticated one kept its slot")
        finally:
            self.assertEqual(srv.stop(), [])


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False, verbosity=2).result.wasSuccessful() else 1)
