#!/usr/bin/env python3
"""What the gRPC transport costs the server next to HTTP: server CPU (utime + stime of mmc-metaserver, from
/proc/PID/stat) per request, for the same requests over HTTP/1.1 JSON (keep-alive) and over gRPC, one client,
serial. The gRPC figure includes HTTP/2 framing, protobuf decode, the protobuf -> JSON mapping of the request and
the JSON -> protobuf mapping and encode of the reply (docs/kvcm.md, "gRPC").
usage: MMC_METASERVER=build/metaserver/mmc-metaserver /usr/bin/python3 bench/kvcm/grpc_cost.py [N]"""
import http.client
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "kvcm"))
import grpc_fixture as fx  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000


def cpu(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def setup(srv, keys):
    fx.http_call(srv, "meta", "registerInstance", {
        "instance_group": "default", "instance_id": "b", "block_size": 4, "model_deployment": {"model_name": "m",
                                                                                              "dtype": "FP8"},
        "location_spec_infos": [{"name": "tp0", "size": 64}, {"name": "tp1", "size": 64}]})
    _, w = fx.http_call(srv, "meta", "startWriteCache", {"instance_id": "b", "block_keys": keys,
                                                         "write_timeout_seconds": 60})
    fx.http_call(srv, "meta", "finishWriteCache", {"instance_id": "b", "write_session_id": w["write_session_id"],
                                                   "success_blocks": {"offset": len(keys)}})


def run_http(srv, body, n):
    c = http.client.HTTPConnection("127.0.0.1", srv.http_port)
    data = json.dumps(body)
    for _ in range(n):
        c.request("POST", "/api/getCacheLocation", data, {"Content-Type": "application/json"})
        c.getresponse().read()
    c.close()


def run_grpc(srv, body, n):
    req_cls, resp_cls = fx.message_classes("meta", "getCacheLocation")
    req = fx.json_format.ParseDict(body, req_cls())
    fn = srv.channel(srv.rpc_port).unary_unary("/kv_cache_manager.proto.meta.MetaService/GetCacheLocation",
                                               request_serializer=req_cls.SerializeToString,
                                               response_deserializer=resp_cls.FromString)
    for _ in range(n):
        fn(req, timeout=30)


def main():
    print("case                              transport  server CPU us/request  wall us/request")
    for nkeys in (1, 128, 2048):
        srv = fx.Server()
        try:
            keys = list(range(1, nkeys + 1))
            setup(srv, keys)
            body = {"instance_id": "b", "query_type": "QT_PREFIX_MATCH", "block_keys": keys}
            n = max(50, N // max(1, nkeys // 64))
            for name, fn in (("http", run_http), ("grpc", run_grpc), ("http", run_http), ("grpc", run_grpc)):
                fn(srv, body, 20)  # warm
                c0, t0 = cpu(srv.proc.pid), time.time()
                fn(srv, body, n)
                c1, t1 = cpu(srv.proc.pid), time.time()
                print("getCacheLocation %4d keys x %-5d %-9s  %10.1f  %15.1f" %
                      (nkeys, n, name, (c1 - c0) / n * 1e6, (t1 - t0) / n * 1e6))
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
