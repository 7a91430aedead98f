#!/usr/bin/env python3
"""What the gRPC transport costs the server next to HTTP: server CPU (utime + stime of mmc-metaserver, from
/proc/PID/stat) per request, for the same requests over HTTP/1.1 JSON (keep-alive) and over gRPC, one client,
serial, for the four hot calls at 1, 128 and 2048 keys. The hot calls run typed over gRPC: the protobuf request
read into the handler's input, the reply encoded from its result (docs/kvcm.md, "gRPC"); the figure includes
HTTP/2 framing and protobuf decoding and encoding. Each case runs twice per transport, alternating; the CPU clock
ticks at 10 ms, so a short run is coarse: N scales every count.
usage: MMC_METASERVER=build/metaserver/mmc-metaserver /usr/bin/python3 bench/kvcm/grpc_cost.py [N] [call...]
       (N defaults to 4000; calls: getCacheLocation startWriteCache finishWriteCache reportEvent)"""
import http.client
import itertools
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "kvcm"))
import grpc_fixture as fx  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
CALLS = sys.argv[2:] or ["getCacheLocation", "startWriteCache", "finishWriteCache", "reportEvent"]
ER = "ST_EVENT_REPORT_L2"


def cpu(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def start_body(keys):
    return {"instance_id": "b", "block_keys": keys, "write_timeout_seconds": 600}


def setup(srv, keys):
    fx.http_call(srv, "meta", "registerInstance", {
        "instance_group": "default", "instance_id": "b", "block_size": 4, "model_deployment": {"model_name": "m",
                                                                                              "dtype": "FP8"},
        "location_spec_infos": [{"name": "tp0", "size": 64}, {"name": "tp1", "size": 64}]})
    _, w = fx.http_call(srv, "meta", "startWriteCache", start_body(keys))
    fx.http_call(srv, "meta", "finishWriteCache", {"instance_id": "b", "write_session_id": w["write_session_id"],
                                                   "success_blocks": {"offset": len(keys)}})


class Bodies:
    """The request bodies of one call: the same one each time, or fresh keys (startWriteCache) or a fresh session
    (finishWriteCache, opened over HTTP beforehand, not counted)."""

    def __init__(self, srv, call, nkeys):
        self.srv, self.call, self.nkeys = srv, call, nkeys
        self.base = itertools.count(10 ** 9, nkeys)

    def fresh_keys(self):
        b = next(self.base)
        return list(range(b, b + self.nkeys))

    def make(self, n):
        if self.call == "getCacheLocation":
            keys = list(range(1, self.nkeys + 1))
            return [{"instance_id": "b", "query_type": "QT_PREFIX_MATCH", "block_keys": keys}] * n
        if self.call == "startWriteCache":
            return [start_body(self.fresh_keys()) for _ in range(n)]
        if self.call == "finishWriteCache":
            out = []
            for _ in range(n):
                _, w = fx.http_call(self.srv, "meta", "startWriteCache", start_body(self.fresh_keys()))
                out.append({"instance_id": "b", "write_session_id": w["write_session_id"],
                            "success_blocks": {"offset": self.nkeys}})
            return out
        events = [{"event_type": "EVENT_BLOCK_ADD", "block_add": {
            "block_key": str(k), "medium": "mem", "specs": [{"name": "tp0", "uri": "v6d://h/%d" % k},
                                                            {"name": "tp1", "uri": "v6d://h/%db" % k}]}}
                  for k in range(1, self.nkeys + 1)]
        return [{"instance_id": "b", "host_ip_port": "10.0.0.1:80", "storage_type": ER, "events": events}] * n


def run_http(srv, call, bodies):
    c = http.client.HTTPConnection("127.0.0.1", srv.http_port)
    for body in bodies:
        c.request("POST", "/api/" + call, json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 200 and b'"code":"OK"' in r.read()
    c.close()


def run_grpc(srv, call, bodies):
    req_cls, resp_cls = fx.message_classes("meta", call)
    reqs = [fx.json_format.ParseDict(b, req_cls()) for b in bodies]
    fn = srv.channel(srv.rpc_port).unary_unary("/kv_cache_manager.proto.meta.MetaService/" + fx.method_of(call),
                                               request_serializer=req_cls.SerializeToString,
                                               response_deserializer=resp_cls.FromString)
    for req in reqs:
        assert fn(req, timeout=30).header.status.code == 1


def measure(srv, call, nkeys, n):
    bodies = Bodies(srv, call, nkeys)
    for name, fn in (("http", run_http), ("grpc", run_grpc), ("http", run_http), ("grpc", run_grpc)):
        fn(srv, call, bodies.make(20))  # warm
        todo = bodies.make(n)
        c0, t0 = cpu(srv.proc.pid), time.time()
        fn(srv, call, todo)
        c1, t1 = cpu(srv.proc.pid), time.time()
        print("%-16s %4d keys x %-5d %-9s  %10.1f  %15.1f" %
              (call, nkeys, n, name, (c1 - c0) / n * 1e6, (t1 - t0) / n * 1e6), flush=True)


def main():
    print("case                             transport  server CPU us/request  wall us/request")
    for nkeys in (1, 128, 2048):
        n = max(50, N // max(1, nkeys // 32))
        for call in CALLS:
            srv = fx.Server()
            try:
                setup(srv, list(range(1, nkeys + 1)))
                measure(srv, call, nkeys, n)
            finally:
                srv.stop()


if __name__ == "__main__":
    main()
