#!/usr/bin/env python3
"""The gRPC listener's transport rules, with a real gRPC client (python3-grpcio) and, for what a gRPC library
never sends, raw HTTP/2 frames: grpc-timeout deadlines, a cancelled call, the largest message, a malformed HTTP/2
frame and a malformed gRPC frame (the connection or stream is refused and the server goes on serving the others),
and the methods mmc does not have (UNIMPLEMENTED over gRPC, 404 over HTTP)."""
import json
import random
import re
import socket
import ssl
import struct
import sys
import threading
import time
import unittest

import grpc_fixture as fx
import h2_raw as h2

WINDOW_UPDATE = 8

PATH = "/kv_cache_manager.proto.meta.MetaService/GetClusterInfo"


def cluster_info_request(trace="t"):
    return fx.message_classes("meta", "getClusterInfo")[0](trace_id=trace).SerializeToString()


class Base(unittest.TestCase):
    extra = ()

    def setUp(self):
        self.srv = fx.Server(*self.extra)

    def tearDown(self):
        alive = self.srv.alive()
        bad = self.srv.stop()
        self.assertTrue(alive, "the server died")
        self.assertEqual(bad, [])

    def ok_call(self):
        r = fx.grpc_call(self.srv, "meta", "getClusterInfo", {"trace_id": "ok"}, timeout=10)
        self.assertEqual(r.header.status.code, 1)

    def full_request(self, c, sid, payload=None):
        c.send(h2.frame(h2.HEADERS, h2.END_HEADERS, sid, h2.header_block(PATH)) +
               h2.frame(h2.DATA, h2.END_STREAM, sid, h2.grpc_message(payload or cluster_info_request())))


class Transport(Base):
    def test_deadline_from_grpc_timeout(self):
        c = h2.Conn(self.srv.rpc_port)
        t0 = time.time()
        c.send(h2.frame(h2.HEADERS, h2.END_HEADERS, 1, h2.header_block(PATH, [("grpc-timeout", "300m")])))
        c.send(h2.frame(h2.HEADERS, h2.END_HEADERS, 3, h2.header_block(PATH)))  # no deadline: left open
        fs = c.frames(h2.stream_ended(1))
        took = time.time() - t0
        self.assertTrue(h2.stream_ended(1)(fs), fs)
        self.assertGreaterEqual(took, 0.25)
        self.assertTrue(h2.has_status(fs, 1, 4), "DEADLINE_EXCEEDED")
        self.assertFalse(h2.stream_ended(3)(c.frames(h2.stream_ended(3), timeout=1.0)))
        self.full_request(c, 5)  # the connection still serves calls
        fs = c.frames(h2.stream_ended(5))
        self.assertTrue(h2.has_status(fs, 5, 0))
        c.close()
        # a real client: its deadline passes while the request is still open
        ch = self.srv.channel(self.srv.rpc_port)
        never = threading.Event()
        fn = ch.stream_unary(PATH, request_serializer=lambda b: b, response_deserializer=lambda b: b)
        with self.assertRaises(fx.grpc.RpcError) as e:
            fn(iter(lambda: never.wait(5) and b"", None), timeout=0.3)
        self.assertEqual(e.exception.code(), fx.grpc.StatusCode.DEADLINE_EXCEEDED)
        self.ok_call()

    def test_bad_grpc_timeout(self):
        c = h2.Conn(self.srv.rpc_port)
        c.send(h2.frame(h2.HEADERS, h2.END_HEADERS, 1, h2.header_block(PATH, [("grpc-timeout", "12x")])) +
               h2.frame(h2.DATA, h2.END_STREAM, 1, h2.grpc_message(cluster_info_request())))
        self.assertTrue(h2.has_status(c.frames(h2.stream_ended(1)), 1, 13))
        c.close()

    def test_cancelled_call(self):
        ch = self.srv.channel(self.srv.rpc_port)
        release = threading.Event()
        fn = ch.stream_unary(PATH, request_serializer=lambda b: b, response_deserializer=lambda b: b)
        fut = fn.future(iter(lambda: release.wait(10) and b"", None), timeout=30)
        time.sleep(0.3)
        self.assertTrue(fut.cancel())
        release.set()
        self.ok_call()
        # raw: half a message, then RST_STREAM; the next stream of the connection is served
        c = h2.Conn(self.srv.rpc_port)
        c.send(h2.frame(h2.HEADERS, h2.END_HEADERS, 1, h2.header_block(PATH)) +
               h2.frame(h2.DATA, 0, 1, h2.grpc_message(cluster_info_request())[:4]) +
               h2.frame(h2.RST_STREAM, 0, 1, (8).to_bytes(4, "big")))
        self.full_request(c, 3)
        fs = c.frames(h2.stream_ended(3))
        self.assertTrue(h2.has_status(fs, 3, 0))
        self.assertFalse(any(f[2] == 1 and f[0] == h2.HEADERS for f in fs))
        c.close()

    def test_message_limit_4mib(self):
        big = {"trace_id": "x" * (5 << 20)}
        with self.assertRaises(fx.grpc.RpcError) as e:
            fx.grpc_call(self.srv, "meta", "getClusterInfo", big)
        self.assertEqual(e.exception.code(), fx.grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertIn("4194304", e.exception.details())
        r = fx.grpc_call(self.srv, "meta", "getInstanceInfo", {"trace_id": "y" * (3 << 20), "instance_id": "i"})
        self.assertEqual(r.header.status.code, 8)  # INSTANCE_NOT_EXIST: the call ran
        self.ok_call()

    def test_malformed_http2_frame(self):
        other = h2.Conn(self.srv.rpc_port)  # open before, must keep working
        bad = h2.Conn(self.srv.rpc_port)
        bad.send(h2.frame(h2.SETTINGS, 0, 0, b"\x00\x03\x00\x00\x00"))  # a SETTINGS length not a multiple of 6
        fs = bad.frames(lambda fs: False, timeout=5)
        self.assertTrue(bad.closed, "the connection is closed")
        self.assertTrue(any(f[0] == h2.GOAWAY for f in fs))
        bad.close()
        garbage = h2.Conn.__new__(h2.Conn)
        garbage.s, garbage.buf, garbage.closed = h2.socket.create_connection(("127.0.0.1", self.srv.rpc_port)), b"", False
        garbage.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + b"\xff" * 64)  # not even HTTP/2
        garbage.frames(lambda fs: False, timeout=5)
        self.assertTrue(garbage.closed)
        garbage.close()
        self.full_request(other, 1)
        self.assertTrue(h2.has_status(other.frames(h2.stream_ended(1)), 1, 0))
        other.close()
        self.ok_call()

    def test_a_header_list_past_the_advertised_size_closes_the_connection(self):
        # HPACK bomb: one 4000-byte value indexed, then 12000 one-byte references to it: 48 MB of headers decoded
        # out of a 16 KB frame, before any credential is looked at
        def length(n):  # an HPACK string length, 7-bit prefix (RFC 7541 5.1)
            if n < 127:
                return bytes([n])
            out, n = [127], n - 127
            while n >= 128:
                out.append(n % 128 | 128)
                n //= 128
            return bytes(out + [n])
        value = b"v" * 4000
        block = (h2.header_block(PATH) + b"\x40" + length(3) + b"x-b" + length(len(value)) + value +
                 b"\xbe" * 12000)
        self.assertLessEqual(len(block), 16384)
        bad = h2.Conn(self.srv.rpc_port)
        bad.send(h2.frame(h2.HEADERS, h2.END_HEADERS | h2.END_STREAM, 1, block))
        bad.frames(lambda fs: False, timeout=5)
        self.assertTrue(bad.closed, "the connection that sent it is closed")
        bad.close()
        # the same bomb as the request's trailers
        trailers = b"\x40" + length(3) + b"x-b" + length(len(value)) + value + b"\xbe" * 12000
        bad = h2.Conn(self.srv.rpc_port)
        bad.send(h2.frame(h2.HEADERS, h2.END_HEADERS, 1, h2.header_block(PATH)) +
                 h2.frame(h2.HEADERS, h2.END_HEADERS | h2.END_STREAM, 1, trailers))
        bad.frames(lambda fs: False, timeout=5)
        self.assertTrue(bad.closed, "the connection that sent them as trailers is closed")
        bad.close()
        self.ok_call()

    def test_malformed_grpc_frame(self):
        c = h2.Conn(self.srv.rpc_port)
        msg = cluster_info_request()
        c.send(h2.frame(h2.HEADERS, h2.END_HEADERS, 1, h2.header_block(PATH)) +
               h2.frame(h2.DATA, h2.END_STREAM, 1, h2.grpc_message(msg, length=len(msg) + 100)))
        c.send(h2.frame(h2.HEADERS, h2.END_HEADERS, 3, h2.header_block(PATH)) +
               h2.frame(h2.DATA, h2.END_STREAM, 3, h2.grpc_message(msg, flag=1)))  # compressed, no grpc-encoding
        c.send(h2.frame(h2.HEADERS, h2.END_HEADERS, 5, h2.header_block(PATH)) +
               h2.frame(h2.DATA, h2.END_STREAM, 5, b"\x00\x00"))  # shorter than a prefix
        self.full_request(c, 7)
        fs = c.frames(lambda fs: all(h2.stream_ended(s)(fs) for s in (1, 3, 5, 7)))
        for sid in (1, 3, 5):
            self.assertTrue(h2.has_status(fs, sid, 13), "stream %d INTERNAL" % sid)
        self.assertTrue(h2.has_status(fs, 7, 0))
        c.close()
        # a frame whose protobuf does not decode, from a real client
        fn = self.srv.channel(self.srv.rpc_port).unary_unary(PATH, request_serializer=lambda b: b,
                                                             response_deserializer=lambda b: b)
        with self.assertRaises(fx.grpc.RpcError) as e:
            fn(b"\x0a\xff\xff\xff", timeout=10)
        self.assertEqual(e.exception.code(), fx.grpc.StatusCode.INTERNAL)
        self.ok_call()

    def test_random_frames(self):
        # a seeded stream of well-sized frames of any type, flags, stream id and payload, on many connections;
        # some carry real gRPC requests in between: the server answers what it can, refuses the rest, stays up
        rng = random.Random(19)
        for n in range(40):
            c = h2.Conn(self.srv.rpc_port)
            out = b""
            for i in range(rng.randint(1, 30)):
                if rng.random() < 0.2:
                    sid = 2 * rng.randint(0, 50) + 1
                    out += h2.frame(h2.HEADERS, h2.END_HEADERS, sid, h2.header_block(PATH))
                    out += h2.frame(h2.DATA, h2.END_STREAM, sid, h2.grpc_message(cluster_info_request()))
                    continue
                payload = bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 64)))
                out += h2.frame(rng.randint(0, 12), rng.getrandbits(8), rng.choice((0, 1, 3, 2 * rng.randint(0, 9) + 1,
                                                                                   rng.getrandbits(31))), payload)
            try:
                c.send(out)
                c.frames(lambda fs: False, timeout=0.05)
            except OSError:
                pass  # the server closed it early: fine
            c.close()
        self.assertTrue(self.srv.alive())
        self.ok_call()

    def test_reset_of_a_stream_never_opened(self):
        # what python3-grpcio sends for a call cancelled before its HEADERS went out (h2_idle_rst.h)
        c = h2.Conn(self.srv.rpc_port)
        c.send(h2.frame(h2.RST_STREAM, 0, 9, (8).to_bytes(4, "big")))
        self.full_request(c, 11)
        fs = c.frames(h2.stream_ended(11))
        self.assertFalse(any(f[0] == h2.GOAWAY for f in fs))
        self.assertTrue(h2.has_status(fs, 11, 0))
        c.close()

    def test_concurrent_calls_and_cancels_on_one_connection(self):
        reg = {"instance_group": "default", "instance_id": "c1", "block_size": 4,
               "model_deployment": {"model_name": "m", "dtype": "FP8"},
               "location_spec_infos": [{"name": "tp0", "size": 64}]}
        self.assertEqual(fx.grpc_call(self.srv, "meta", "registerInstance", reg).header.status.code, 1)
        req_cls, resp_cls = fx.message_classes("meta", "startWriteCache")
        fn = self.srv.channel(self.srv.rpc_port).unary_unary(
            "/kv_cache_manager.proto.meta.MetaService/StartWriteCache",
            request_serializer=req_cls.SerializeToString, response_deserializer=resp_cls.FromString)
        errors = []

        def writer(t):
            try:
                for i in range(40):
                    req = req_cls(instance_id="c1", block_keys=[t * 1000 + i], write_timeout_seconds=30)
                    if i % 3 == 2:  # cancelled at once: often while its reply waits for the commit
                        fn.future(req, timeout=30).cancel()
                        continue
                    r = fn(req, timeout=30)
                    if r.header.status.code != 1 or len(r.locations) != 1:
                        errors.append(r)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.ok_call()

    def test_unimplemented_methods(self):
        # the leader-election admin calls are implemented (api/leader.c): without an election, demote is refused
        self.assertEqual(fx.http_call(self.srv, "admin", "getManagerClusterInfo", {})[0], 200)
        fn = self.srv.channel(self.srv.rpc_port).unary_unary("/no.Such/Method", request_serializer=lambda b: b,
                                                             response_deserializer=lambda b: b)
        with self.assertRaises(fx.grpc.RpcError) as e:
            fn(b"", timeout=10)
        self.assertEqual(e.exception.code(), fx.grpc.StatusCode.UNIMPLEMENTED)
        # the admin services are not on the meta port
        fn = self.srv.channel(self.srv.rpc_port).unary_unary(
            "/kv_cache_manager.proto.admin.AdminService/ListStorage", request_serializer=lambda b: b,
            response_deserializer=lambda b: b)
        with self.assertRaises(fx.grpc.RpcError) as e:
            fn(b"", timeout=10)
        self.assertEqual(e.exception.code(), fx.grpc.StatusCode.UNIMPLEMENTED)


class SmallLimit(Base):
    """kvcm.service.grpc_max_message_size is the limit; the debug service is absent without its key."""
    extra = ("kvcm.service.grpc_max_message_size=64KB",)

    def test_configured_message_limit(self):
        with self.assertRaises(fx.grpc.RpcError) as e:
            fx.grpc_call(self.srv, "meta", "getClusterInfo", {"trace_id": "x" * (100 << 10)})
        self.assertEqual(e.exception.code(), fx.grpc.StatusCode.RESOURCE_EXHAUSTED)
        fx.grpc_call(self.srv, "meta", "getClusterInfo", {"trace_id": "x" * (10 << 10)})
        self.ok_call()


class Budget(Base):
    """kvcm.service.max_buffered_size bounds the request bytes all streams of a port hold."""
    extra = ("kvcm.service.max_buffered_size=1MB",)

    def test_buffered_bytes_are_bounded(self):
        c = h2.Conn(self.srv.rpc_port)
        chunk = h2.grpc_message(b"\x00" * 16000, length=4 << 20)[:16384]
        for sid in (1, 3, 5):
            c.send(h2.frame(h2.HEADERS, h2.END_HEADERS, sid, h2.header_block(PATH)))
            for _ in range(25):  # 400 KB each, none finished
                c.send(h2.frame(h2.DATA, 0, sid, chunk))
        fs = c.frames(h2.stream_ended(5))
        self.assertTrue(h2.has_status(fs, 5, 8), "RESOURCE_EXHAUSTED for the stream that crossed 1 MB")
        self.assertFalse(h2.stream_ended(1)(fs))
        c.close()
        # the bytes of the closed connection are no longer counted: 900 KB fit again
        self.ok_call()  # by now the server has seen the close (it answers in order on its one loop)
        time.sleep(0.2)
        c = h2.Conn(self.srv.rpc_port)
        c.send(h2.frame(h2.HEADERS, h2.END_HEADERS, 1, h2.header_block(PATH)))
        for _ in range(55):
            c.send(h2.frame(h2.DATA, 0, 1, chunk))
        c.send(h2.frame(h2.DATA, h2.END_STREAM, 1, b""))
        fs = c.frames(h2.stream_ended(1))
        self.assertTrue(h2.has_status(fs, 1, 13), "INTERNAL: the prefix promised 4 MiB")  # not 8
        c.close()
        self.ok_call()


class UnauthenticatedBudget(Base):
    """Once accounts exist, a call's credentials are judged on its HEADERS, before its message is read: callers
    without them hold none of the request bytes kvcm.service.max_buffered_size bounds for everyone."""
    extra = ("kvcm.service.max_buffered_size=1MB",)

    def test_a_call_without_credentials_is_refused_before_its_message(self):
        status, _ = fx.http_call(self.srv, "admin", "addAccount",
                                 {"user_name": "eng", "password": "pw2", "role": "ROLE_USER"})
        self.assertEqual(status, 200)
        c = h2.Conn(self.srv.rpc_port)
        chunk = h2.grpc_message(b"\x00" * 16000, length=4 << 20)[:16384]
        for sid in (1, 3, 5):
            c.send(h2.frame(h2.HEADERS, h2.END_HEADERS, sid, h2.header_block(PATH)))
            for _ in range(25):  # 400 KB each, none finished: 1.2 MB would cross the 1 MB budget
                c.send(h2.frame(h2.DATA, 0, sid, chunk))
        def reset(fs, sid):
            return any(f[0] == h2.RST_STREAM and f[2] == sid for f in fs)
        fs = c.frames(lambda fs: all(h2.stream_ended(sid)(fs) and reset(fs, sid) for sid in (1, 3, 5)), timeout=5)
        for sid in (1, 3, 5):
            self.assertTrue(h2.has_status(fs, sid, 16), "stream %d: UNAUTHENTICATED, on its headers" % sid)
            self.assertFalse(h2.has_status(fs, sid, 8), "stream %d: its DATA counted against the budget" % sid)
            self.assertTrue(reset(fs, sid), "stream %d: not reset, it holds its slot while the peer sends" % sid)
        c.close()
        r = fx.grpc_call(self.srv, "meta", "getClusterInfo", {"trace_id": "ok"}, timeout=10,
                         metadata=(("authorization", fx.basic("eng", "pw2")),))
        self.assertEqual(r.header.status.code, 1)


class SlowRequest(Base):
    """A request must arrive whole within kvcm.service.request_timeout_ms of its HEADERS, as over HTTP: one that does
    not is answered DEADLINE_EXCEEDED and its bytes go back to the port's budget."""
    extra = ("kvcm.service.request_timeout_ms=500", "kvcm.service.max_buffered_size=1MB")

    def send_open(self, c, n):
        chunk = h2.grpc_message(b"\x00" * 16000, length=4 << 20)[:16384]
        c.send(h2.frame(h2.HEADERS, h2.END_HEADERS, 1, h2.header_block(PATH)))
        for _ in range(n):
            c.send(h2.frame(h2.DATA, 0, 1, chunk))

    def test_a_request_not_whole_in_time_is_refused(self):
        c = h2.Conn(self.srv.rpc_port)
        self.send_open(c, 55)  # 900 KB of a 4 MiB message, and no more
        t0 = time.time()
        fs = c.frames(h2.stream_ended(1), timeout=5)
        self.assertTrue(h2.has_status(fs, 1, 4), "DEADLINE_EXCEEDED for the request that stopped")
        self.assertLess(time.time() - t0, 3)
        # its 900 KB no longer count: another 900 KB fit under the 1 MB budget (read whole, then refused for the
        # length its prefix promised, INTERNAL, and not RESOURCE_EXHAUSTED for the budget)
        c2 = h2.Conn(self.srv.rpc_port)
        self.send_open(c2, 55)
        c2.send(h2.frame(h2.DATA, h2.END_STREAM, 1, b""))
        fs = c2.frames(h2.stream_ended(1))
        self.assertTrue(h2.has_status(fs, 1, 13), "the budget was given back")
        c.close()
        c2.close()
        self.ok_call()


class HeldReplies(Base):
    """Responses HTTP/2 flow control holds back (the peer grants no window) take no send buffer, so the output bound
    does not see them: a connection may hold 4 x kvcm.service.grpc_max_message_size of them (further calls are
    answered RESOURCE_EXHAUSTED), and a connection whose held responses do not move for the idle timeout is closed
    (a peer that pings and never reads)."""
    extra = ("kvcm.service.grpc_max_message_size=1024", "kvcm.service.idle_timeout_seconds=2")

    def windowless(self, calls):
        c = h2.Conn(self.srv.rpc_port)
        c.send(h2.frame(h2.SETTINGS, 0, 0, struct.pack(">HI", 4, 0)))  # INITIAL_WINDOW_SIZE 0: no DATA may come
        for i in range(calls):
            self.full_request(c, 2 * i + 1)
        return c

    def test_held_responses_are_bounded(self):
        n = 90
        c = self.windowless(n)
        time.sleep(0.5)
        c.send(h2.frame(h2.SETTINGS, 0, 0, struct.pack(">HI", 4, 65535)))  # now it reads
        fs = c.frames(lambda got: all(h2.stream_ended(2 * i + 1)(got) for i in range(n)))
        ok = sum(h2.has_status(fs, 2 * i + 1, 0) for i in range(n))
        refused = sum(h2.has_status(fs, 2 * i + 1, 8) for i in range(n))
        self.assertEqual(ok + refused, n, fs[-3:])
        self.assertGreater(ok, 0)
        self.assertGreater(refused, 0, "every one of %d responses was held for a peer that granted no window" % n)
        c.close()
        self.ok_call()

    def test_held_responses_that_do_not_move_close_the_connection(self):
        c = self.windowless(3)
        closed = False
        for _ in range(20):  # pings keep the connection from being idle; the held responses do not move
            c.send(h2.frame(6, 0, 0, b"\0" * 8))
            c.frames(lambda got: False, timeout=0.3)
            if c.closed:
                closed = True
                break
        self.assertTrue(closed, "a peer that pings and never reads keeps its responses held")
        c.close()
        self.ok_call()


class HttpReplyUnread(Base):
    """Over HTTP/1.1 a reply must be read whole within kvcm.service.idle_timeout_seconds, else the connection is
    closed (op=kvcm_close reason=reply_unread): evhttp's write timeout restarts whenever the peer takes some, so a
    peer reading a little now and then held a reply (38 MB here) as long as it liked."""
    extra = ("kvcm.service.idle_timeout_seconds=2",)

    def test_a_reply_read_a_little_at_a_time_is_cut(self):
        reg = {"instance_group": "default", "instance_id": "i", "block_size": 8,
               "model_deployment": {"model_name": "m", "dtype": "d"},
               "location_spec_infos": [{"name": "tp%d" % i, "size": 64} for i in range(4)]}
        self.assertEqual(fx.http_call(self.srv, "meta", "registerInstance", reg)[0], 200)
        keys = list(range(1, 60001))
        st, w = fx.http_call(self.srv, "meta", "startWriteCache",
                             {"instance_id": "i", "block_keys": keys, "write_timeout_seconds": 30})
        self.assertEqual(st, 200)
        st, _ = fx.http_call(self.srv, "meta", "finishWriteCache",
                             {"instance_id": "i", "write_session_id": w["write_session_id"],
                              "success_blocks": {"offset": len(keys)}})
        self.assertEqual(st, 200)
        body = json.dumps({"instance_id": "i", "block_keys": keys}).encode()
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        s.connect(("127.0.0.1", self.srv.http_port))
        s.sendall(b"POST /api/getCacheLocation HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        # the clock starts at the reply's first byte: a slow server (ASan, a loaded machine) may take many seconds
        # to build it, and the deadline is armed only once it is built
        s.settimeout(120)
        got = len(s.recv(1 << 16))
        self.assertGreater(got, 0, "no reply")
        s.settimeout(0.05)
        t0, closed, trickle = time.time(), False, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
        # 1 MB a quarter second: the kernel frees half the socket's 4 MB send buffer well within the idle timeout, so
        # evhttp sees progress and its write timeout never fires; the reply (38 MB) would take about 10 s. And a
        # byte of a next request each time, so that evhttp's read timeout, which runs while it writes, never fires
        # either: only the reply's own deadline can cut it.
        while not closed and time.time() - t0 < 20:
            burst = 0
            try:
                if trickle:
                    s.send(trickle[:1])
                    trickle = trickle[1:]
                while burst < 1 << 20:
                    n = len(s.recv(1 << 16))
                    if not n:
                        closed = True
                        break
                    burst += n
            except socket.timeout:
                pass
            except ConnectionError:
                closed = True
            got += burst
            time.sleep(0.25)
        s.close()
        self.assertTrue(closed, "the reply was still held for a slow reader after %.1f s (%d bytes read)"
                        % (time.time() - t0, got))
        self.assertLess(got, 30 << 20, "the reply was not cut before it was read whole")
        with open(self.srv.log_path, "rb") as f:
            self.assertIn(b"reason=reply_unread", f.read())
        self.ok_call()


def rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) * 1024


class SlowReader(unittest.TestCase):
    """A client that sends calls and reads none of the replies: the server holds at most 1 MiB of them for it, and
    reads no more of its calls, until it reads; then every call it took is answered. Over TLS too, where the
    socket's callbacks can run inside the server's send."""
    N = 150000  # about 30 MB of replies: the kernel's socket buffers take about 4 MB of them

    def connect(self, port, tls=None):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)  # before connect: a small window, no autotuning
        s.connect(("127.0.0.1", port))
        if tls:
            ctx = ssl.create_default_context(cafile=tls)
            ctx.check_hostname = False
            ctx.set_alpn_protocols(["h2"])
            s = ctx.wrap_socket(s)
        return s

    def flood(self, srv, s):
        big = (1 << 31) - 1  # windows as large as HTTP/2 allows: flow control does not hold the replies back
        s.sendall(h2.PREFACE + h2.frame(h2.SETTINGS, 0, 0, struct.pack(">HIHI", 1, 0, 4, big)) +
                  h2.frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", big - 65535)))
        before = rss_bytes(srv.proc.pid)
        body = h2.header_block(PATH)
        msg = h2.grpc_message(cluster_info_request())
        s.settimeout(3)
        sent = 0
        try:
            for first in range(0, self.N, 500):
                batch = b"".join(h2.frame(h2.HEADERS, h2.END_HEADERS, 2 * i + 1, body) +
                                 h2.frame(h2.DATA, h2.END_STREAM, 2 * i + 1, msg) for i in range(first, first + 500))
                s.sendall(batch)
                sent = first + 500
        except (socket.timeout, TimeoutError):
            pass  # the server stopped reading: what it took waits for us to read
        time.sleep(1)
        grown = rss_bytes(srv.proc.pid) - before
        # the server stopped reading (about 30 000 calls in); without the bound it reads them all and holds 26 MB
        # of replies. RSS is printed, not asserted: under ASan freed memory stays resident in its quarantine
        self.assertLess(sent, self.N, "the server read every call of a peer that reads nothing (%d MB more)"
                        % (grown >> 20))
        print("server RSS grew by %d kB, %d calls sent" % (grown >> 10, sent), file=sys.stderr)
        self.assertTrue(srv.alive())
        # it reads: the server goes on sending, and reading its calls again
        s.settimeout(5)
        buf, ended = b"", 0
        try:
            while True:
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                buf += chunk
                while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[:3], "big"):
                    n = int.from_bytes(buf[:3], "big")
                    if buf[3] in (h2.HEADERS, h2.DATA) and buf[4] & h2.END_STREAM or buf[3] == h2.RST_STREAM:
                        ended += 1
                    buf = buf[9 + n:]
        except (socket.timeout, TimeoutError):
            pass
        s.close()
        self.assertGreaterEqual(ended, sent, "once the peer reads, every call the server took is answered (%d of %d)"
                                % (ended, sent))

    def test_replies_a_peer_does_not_read_are_bounded(self):
        srv = fx.Server()
        try:
            self.flood(srv, self.connect(srv.rpc_port))
            fx.grpc_call(srv, "meta", "getClusterInfo", {"trace_id": "ok"}, timeout=10)
        finally:
            self.assertTrue(srv.alive(), "the server died")
            self.assertEqual(srv.stop(), [])

    def test_over_tls(self):
        import tempfile
        import tls_certs
        d = tempfile.mkdtemp(prefix="kvcm-grpc-tls-")
        ca, cert, key = tls_certs.make(d)
        srv = fx.Server("kvcm.service.tls.cert_file=" + cert, "kvcm.service.tls.key_file=" + key)
        try:
            self.flood(srv, self.connect(srv.rpc_port, tls=ca))
        finally:
            self.assertTrue(srv.alive(), "the server died")
            self.assertEqual(srv.stop(), [])
            fx.shutil.rmtree(d, ignore_errors=True)


class Exposure(unittest.TestCase):
    def test_public_rpc_bind_needs_credentials(self):
        with self.assertRaises(RuntimeError):  # refused at start-up, as a public kvcm.service.bind is
            fx.Server("kvcm.service.rpc_bind=0.0.0.0").stop()
        srv = fx.Server("kvcm.service.rpc_bind=0.0.0.0", "kvcm.service.allow_insecure_bind=true")
        try:
            self.assertEqual(fx.grpc_call(srv, "meta", "getClusterInfo", {}).header.status.code, 1)
        finally:
            self.assertEqual(srv.stop(), [])


class Tls(unittest.TestCase):
    """With kvcm.service.tls.* the gRPC ports speak TLS too (ALPN h2), with the HTTP ports' certificate."""

    def test_grpc_over_tls(self):
        import tempfile
        import tls_certs
        d = tempfile.mkdtemp(prefix="kvcm-grpc-tls-")
        ca, cert, key = tls_certs.make(d)
        srv = fx.Server("kvcm.service.tls.cert_file=" + cert, "kvcm.service.tls.key_file=" + key)
        try:
            creds = fx.grpc.ssl_channel_credentials(root_certificates=open(ca, "rb").read())
            with fx.grpc.secure_channel("127.0.0.1:%d" % srv.rpc_port, creds) as ch:
                req_cls, resp_cls = fx.message_classes("meta", "getClusterInfo")
                fn = ch.unary_unary(PATH, request_serializer=req_cls.SerializeToString,
                                    response_deserializer=resp_cls.FromString)
                self.assertEqual(fn(req_cls(trace_id="tls"), timeout=10).header.status.code, 1)
            with self.assertRaises(fx.grpc.RpcError) as e:  # plain HTTP/2 fails the handshake
                fx.grpc_call(srv, "meta", "getClusterInfo", {}, timeout=5)
            self.assertEqual(e.exception.code(), fx.grpc.StatusCode.UNAVAILABLE)
        finally:
            self.assertEqual(srv.stop(), [])
            fx.shutil.rmtree(d, ignore_errors=True)


class Disabled(Base):
    extra = ("kvcm.service.enable_grpc=false",)

    def test_no_listeners(self):
        self.assertEqual((self.srv.rpc_port, self.srv.admin_rpc_port), (0, 0))
        status, r = fx.http_call(self.srv, "meta", "getClusterInfo", {})
        self.assertEqual((status, r["leader_endpoint"]["meta_rpc_port"]), (200, 0))


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False, verbosity=2).result.wasSuccessful() else 1)
