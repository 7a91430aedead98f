#!/usr/bin/env python3
"""Requests small on the wire that would decode to gigabytes: a JSON body of empty objects (jansson takes hundreds of
bytes for each) and a protobuf message of empty sub-messages (a struct each). Both are refused before they are
built (HTTP 413, gRPC RESOURCE_EXHAUSTED); the server's peak memory stays small, and it keeps answering. Before,
8 MiB of "{}," took the server to 2.1 GB for 3 s, every client of its one loop waiting."""
import json
import sys
import time
import unittest
import urllib.error
import urllib.request

import grpc_fixture as fx

PEAK_MAX = 400 << 20  # bytes of VmHWM: the server idles at a few tens of MiB


def peak_bytes(srv):
    with open("/proc/%d/status" % srv.proc.pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) << 10
    raise AssertionError("no VmHWM")


def post(srv, route, data):
    req = urllib.request.Request("http://127.0.0.1:%d/api/%s" % (srv.http_port, route), data=data,
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def raw_grpc(srv, route, data):
    """The status code name of route called with data as the request's bytes."""
    try:
        fx.raw_method(srv, "meta", route)(data, timeout=60)
        return "OK"
    except fx.grpc.RpcError as e:
        return e.code().name


class RequestMemory(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = fx.Server()

    @classmethod
    def tearDownClass(cls):
        bad = cls.srv.stop()
        assert bad == [], bad

    def test_a_json_body_of_empty_objects_is_refused_unbuilt(self):
        head, tail = b'{"instance_id":"i","location_spec_infos":[', b"{}]}"
        body = head + b"{}," * ((8 << 20) // 3 - 100) + tail  # under max_json_body_size (8 MiB)
        t0 = time.monotonic()
        self.assertEqual(post(self.srv, "registerInstance", body), 413)
        self.assertLess(time.monotonic() - t0, 5)
        self.assertLess(peak_bytes(self.srv), PEAK_MAX)
        self.assertEqual(post(self.srv, "getClusterInfo", b"{}"), 200, "still answering")

    def test_a_message_of_empty_sub_messages_is_refused_unbuilt(self):
        req_cls = fx.message_classes("meta", "registerInstance")[0]
        number = req_cls.DESCRIPTOR.fields_by_name["location_spec_infos"].number
        empty = bytes([number << 3 | 2, 0])
        data = empty * ((4 << 20) // 2 - 64)  # under grpc_max_message_size (4 MiB)
        self.assertEqual(raw_grpc(self.srv, "registerInstance", data), "RESOURCE_EXHAUSTED")
        self.assertLess(peak_bytes(self.srv), PEAK_MAX)
        self.assertEqual(raw_grpc(self.srv, "getClusterInfo", b""), "OK", "still answering")

    def test_a_large_request_of_real_keys_is_still_taken(self):
        reg = {"instance_group": "default", "instance_id": "big", "block_size": 4,
               "location_spec_infos": [{"name": "tp%d" % i, "size": 1024} for i in range(4)],
               "model_deployment": {"model_name": "m", "dtype": "FP8", "tp_size": 1, "dp_size": 1, "pp_size": 1,
                                    "use_mla": False}}
        self.assertEqual(post(self.srv, "registerInstance", json.dumps(reg).encode()), 200)
        keys = {"instance_id": "big", "block_keys": list(range(60000)), "query_type": "QT_BATCH_GET"}
        self.assertEqual(post(self.srv, "getCacheMeta", json.dumps(keys).encode()), 200)


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False, verbosity=2).result.wasSuccessful() else 1)
