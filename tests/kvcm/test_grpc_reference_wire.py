#!/usr/bin/env python3
"""Our replies as the reference's own client decodes them, and the newest reference's fields over both transports.

The reference's stubs are generated from its meta_service.proto, not from ours: a field whose wire type differs
(CacheLocation.status was an enum varint here, a string there) is dropped by their decoder without an error. So
these replies are read with messages declared as the reference declares them (tair-kvcache commit 0b29f6b3:
field numbers and types only), compiled here from REFERENCE_WIRE."""
import atexit
import os
import shutil
import sys
import tempfile
import unittest

import grpc_fixture as fx
from grpc_tools import protoc

# The reference's CacheLocation and the replies that carry it, reduced to what these tests read.
REFERENCE_WIRE = """
syntax = "proto3";
package refwire;
message LocationSpec { string name = 1; string uri = 2; string node_id = 3; }
message CacheLocation {
  int32 type = 1; int32 spec_size = 2; repeated LocationSpec location_specs = 3;
  string id = 4; string status = 5; int64 create_time = 6;
}
message CacheLocationVector { repeated CacheLocation locations = 1; }
message StartWriteCacheResponse { string write_session_id = 2; repeated CacheLocation locations = 4; }
message GetCacheLocationResponse { repeated CacheLocation locations = 2; uint32 replication_capabilities = 4; }
message GetCacheMetaResponse {
  repeated CacheLocation locations = 2; repeated string metas = 3; repeated CacheLocationVector replica_locations = 4;
}
"""


def reference_messages():
    out = tempfile.mkdtemp(prefix="kvcm-refwire-", dir=os.environ.get("KVCM_GRPC_STUBS"))
    atexit.register(shutil.rmtree, out, True)
    with open(os.path.join(out, "refwire.proto"), "w") as f:
        f.write(REFERENCE_WIRE)
    if protoc.main(["protoc", "-I" + out, "--python_out=" + out, os.path.join(out, "refwire.proto")]) != 0:
        raise RuntimeError("grpc_tools.protoc failed on refwire.proto")
    sys.path.insert(0, out)
    import refwire_pb2
    return refwire_pb2


REF = reference_messages()
MD = {"model_name": "m", "dtype": "FP8"}


def reg(instance, **extra):
    body = {"instance_group": "default", "instance_id": instance, "block_size": 4, "model_deployment": MD,
            "location_spec_infos": [{"name": "tp0", "size": 64}]}
    body.update(extra)
    return body


class ReferenceWire(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = fx.Server()

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == []

    def as_reference(self, route, body, reply_cls):
        """route's reply over gRPC, decoded by the reference-shaped reply_cls."""
        req_cls, _ = fx.message_classes("meta", route)
        fn = self.srv.channel(self.srv.rpc_port).unary_unary(
            "/%s/%s" % (fx.SERVICES["meta"][1], fx.method_of(route)),
            request_serializer=req_cls.SerializeToString, response_deserializer=reply_cls.FromString)
        return fn(fx.json_format.ParseDict(body, req_cls()), timeout=30)

    def http(self, route, body, service="meta"):
        status, reply = fx.http_call(self.srv, service, route, body)
        self.assertEqual(status, 200, route)
        return reply

    def write(self, instance, keys):
        w = self.as_reference("startWriteCache", {"instance_id": instance, "block_keys": keys,
                                                  "write_timeout_seconds": 30}, REF.StartWriteCacheResponse)
        self.http("finishWriteCache", {"instance_id": instance, "write_session_id": w.write_session_id,
                                       "success_blocks": {"offset": len(keys)}})
        return w

    def test_status_reaches_the_reference_client(self):
        self.http("registerInstance", reg("w1"))
        w = self.write("w1", [1, 2])
        self.assertEqual([l.status for l in w.locations], ["CLS_WRITING"] * 2)
        r = self.as_reference("getCacheLocation", {"instance_id": "w1", "query_type": "QT_BATCH_GET",
                                                   "block_keys": [1, 2, 3]}, REF.GetCacheLocationResponse)
        self.assertEqual([l.status for l in r.locations], ["CLS_SERVING", "CLS_SERVING", "CLS_NOT_FOUND"])
        self.assertEqual([l.id for l in r.locations][:2], [l.id for l in w.locations])
        self.assertTrue(all(l.create_time > 0 for l in r.locations[:2]), r)
        self.assertEqual(r.locations[2].create_time, 0)
        self.assertEqual([s.node_id for l in r.locations for s in l.location_specs], [""] * 3)

    def test_http_prints_what_grpc_carries(self):
        self.http("registerInstance", reg("h1"))
        w = self.write("h1", [7])
        r = self.http("getCacheLocation", {"instance_id": "h1", "query_type": "QT_PREFIX_MATCH", "block_keys": [7]})
        loc = r["locations"][0]
        self.assertEqual((loc["status"], loc["id"]), ("CLS_SERVING", w.locations[0].id))
        self.assertEqual(loc["create_time"], str(w.locations[0].create_time))  # int64: a JSON string
        self.assertEqual(loc["location_specs"][0]["node_id"], "")
        self.assertEqual((r["hints"], r["replication_capabilities"]), ([], 0))
        g = fx.to_dict(fx.grpc_call(self.srv, "meta", "getCacheLocation", {"instance_id": "h1",
                                                                          "query_type": "QT_PREFIX_MATCH",
                                                                          "block_keys": [7]}))
        self.assertEqual(g["locations"], r["locations"])

    def test_get_cache_meta_lists_every_replica(self):
        self.http("registerInstance", reg("m1"))
        self.write("m1", [11])
        body = {"instance_id": "m1", "block_keys": [11, 12]}
        r = self.as_reference("getCacheMeta", body, REF.GetCacheMetaResponse)
        self.assertEqual([len(v.locations) for v in r.replica_locations], [1, 0])
        self.assertEqual(r.replica_locations[0].locations[0].status, "CLS_SERVING")
        h = self.http("getCacheMeta", body)
        self.assertEqual([len(v["locations"]) for v in h["replica_locations"]], [1, 0])
        a = self.http("getCacheMeta", body, service="admin")
        self.assertEqual(a["replica_locations"], h["replica_locations"])

    def test_replication_write_is_refused(self):
        self.http("registerInstance", reg("r1"))
        for t in ("http", "grpc"):
            for extra, code in (({}, "INVALID_ARGUMENT"), ({"replication_target_node_id": "42"}, "UNSUPPORTED")):
                body = dict({"instance_id": "r1", "block_keys": [21], "is_replication": True}, **extra)
                r = self.http("startWriteCache", body) if t == "http" else \
                    fx.to_dict(fx.grpc_call(self.srv, "meta", "startWriteCache", body))
                self.assertEqual(r["header"]["status"]["code"], code, (t, extra))
        r = self.http("getCacheLocation", {"instance_id": "r1", "query_type": "QT_BATCH_GET", "block_keys": [21]})
        self.assertEqual(r["locations"][0]["status"], "CLS_NOT_FOUND")  # nothing was written

    def test_affinity_strategy_json_round_trips(self):
        js = "{\"local_first\":true}"
        self.http("registerInstance", reg("a1", affinity_strategy_json=js))
        fx.grpc_call(self.srv, "meta", "registerInstance", reg("a2", affinity_strategy_json=js))
        for i in ("a1", "a2"):
            h = self.http("getInstanceInfo", {"instance_id": i})
            self.assertEqual(h["instance_info"]["affinity_strategy_json"], js)
            g = fx.to_dict(fx.grpc_call(self.srv, "meta", "getInstanceInfo", {"instance_id": i}))
            self.assertEqual(g["instance_info"]["affinity_strategy_json"], js)
        grp = {"name": "aff", "storage_candidates": ["nfs_01"], "affinity_strategy_json": js}
        fx.grpc_call(self.srv, "admin", "createInstanceGroup", {"instance_group": grp})
        h = self.http("getInstanceGroup", {"name": "aff"}, service="admin")
        self.assertEqual(h["instance_group"]["affinity_strategy_json"], js)


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False, verbosity=2).result.wasSuccessful() else 1)
