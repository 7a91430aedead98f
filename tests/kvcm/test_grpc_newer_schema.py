#!/usr/bin/env python3
"""Fields and a storage kind of the reference's newer schema that its own suites use (docs/kvcm.md, "the
reference's suites"): each over HTTP and gRPC, and the group fields across a restart."""
import os
import sys
import unittest
from urllib.parse import urlparse

import grpc_fixture as fx

MD = {"model_name": "m", "dtype": "FP8"}
MODES = {None: "GROUP_LRU", 0: "USAGE_PROPORTIONAL", "FIXED_PER_INSTANCE": "FIXED_PER_INSTANCE",
         "GROUP_LRU": "GROUP_LRU"}


def unwrap(v):
    """A google.protobuf-style wrapper as our stubs see it ({"value": x}, our package's message), or x itself."""
    return v.get("value") if isinstance(v, dict) else v


def group(name, mode=None, indexer=None):
    rs = {"storage_unique_name": "s", "reclaim_policy": "POLICY_LRU"}
    if mode is not None:
        rs["instance_reclaim_budget_policy"] = mode
    cc = {"reclaim_strategy": rs, "meta_indexer_config": dict(indexer or {"max_key_count": 100})}
    return {"name": name, "global_quota_group_name": name, "cache_config": cc}


class NewerSchema(unittest.TestCase):
    def setUp(self):
        self.srv = fx.Server()

    def tearDown(self):
        self.assertEqual(self.srv.stop(), [])

    def call(self, t, service, route, body):
        return fx.call(self.srv, t, service, route, body)

    def ok(self, t, service, route, body):
        r = self.call(t, service, route, body)
        self.assertEqual(r["header"]["status"]["code"], "OK", (t, route, r["header"]))
        return r

    def get_group(self, t, name):
        return self.ok(t, "admin", "getInstanceGroup", {"name": name})["instance_group"]["cache_config"]

    def test_budget_policy_is_kept_with_its_default(self):
        for t in ("http", "grpc"):
            for i, mode in enumerate(MODES):
                self.ok(t, "admin", "createInstanceGroup", {"instance_group": group("%s_%d" % (t, i), mode)})
        # GET, change an unrelated field, UPDATE: the policy stays
        g = self.ok("http", "admin", "getInstanceGroup", {"name": "http_2"})["instance_group"]
        g["user_data"] = "unrelated"
        self.ok("http", "admin", "updateInstanceGroup", {"instance_group": g, "current_version": g["version"]})
        for restart in (False, True):
            if restart:
                self.srv.restart()
            for t in ("http", "grpc"):
                for made_by in ("http", "grpc"):
                    for i, want in enumerate(MODES.values()):
                        got = self.get_group(t, "%s_%d" % (made_by, i))["reclaim_strategy"]
                        self.assertEqual(got["instance_reclaim_budget_policy"], want, (restart, t, made_by, i))

    def test_meta_indexer_config_newer_fields(self):
        for t in ("http", "grpc"):
            wrap = (lambda v: v) if t == "http" else (lambda v: {"value": v})
            given = {"max_key_count": 100, "mutex_enabled": wrap(False), "persist_metadata_interval_time_ms": wrap(0),
                     "meta_storage_backend_config": {"storage_type": "local", "memory_primary": True}}
            self.ok(t, "admin", "createInstanceGroup", {"instance_group": group("off_" + t, indexer=given)})
            self.ok(t, "admin", "createInstanceGroup", {"instance_group": group("absent_" + t)})
        for restart in (False, True):
            if restart:
                self.srv.restart()
            for t in ("http", "grpc"):
                for made_by in ("http", "grpc"):
                    mi = self.get_group(t, "off_" + made_by)["meta_indexer_config"]
                    self.assertIs(unwrap(mi["mutex_enabled"]), False, (restart, t, made_by))
                    self.assertEqual(int(unwrap(mi["persist_metadata_interval_time_ms"])), 0)
                    self.assertIs(mi["meta_storage_backend_config"]["memory_primary"], True)
                    mi = self.get_group(t, "absent_" + made_by)["meta_indexer_config"]
                    self.assertIs(unwrap(mi["mutex_enabled"]), True, (restart, t, made_by))
                    self.assertEqual(int(unwrap(mi["persist_metadata_interval_time_ms"])), 1000)

    def test_host_cache_state_peer_fields_only_with_p2p(self):
        self.ok("http", "meta", "registerInstance", {"instance_group": "default", "instance_id": "h", "block_size": 4,
                                                     "model_deployment": MD,
                                                     "location_spec_infos": [{"name": "tp0", "size": 64}]})
        add = [{"event_type": "EVENT_BLOCK_ADD", "block_add": {"block_key": str(k), "medium": "mem",
                                                               "specs": [{"name": "tp0", "uri": "v6d://a/%d" % k}]}}
               for k in (1, 2)]
        self.ok("http", "meta", "reportEvent", {"instance_id": "h", "host_ip_port": "10.2.2.2:1",
                                                "storage_type": "ST_EVENT_REPORT_L2", "events": add})
        q = {"instance_id": "h", "query_type": "QT_PREFIX_MATCH", "block_cache_keys": [1, 2, 3]}
        h = self.ok("http", "meta", "getHostCacheState", q)["hosts"][0]
        self.assertNotIn("p2p_1_fetch", h)
        self.assertNotIn("p2p_1_total_match", h)
        self.assertEqual(h["global"], h["local"])
        h = self.ok("http", "meta", "getHostCacheState", dict(q, p2p_host_count=1))["hosts"][0]
        self.assertEqual((h["p2p_1_fetch"], h["p2p_1_total_match"]), ("0", "2"))
        h = self.ok("grpc", "meta", "getHostCacheState", q)["hosts"][0]
        self.assertEqual((h["p2p_1_fetch"], h["p2p_1_total_match"], h["global"]), ("0", "0", "2"))

    def test_local_storage_is_a_file_per_key_store_under_the_allowed_roots(self):
        root = self.srv.root + "local/"
        for t in ("http", "grpc"):
            r = self.call(t, "admin", "addStorage", {"storage": {"global_unique_name": "out_" + t,
                                                                 "local": {"root_path": "/etc/kvcm/"}}})
            self.assertEqual(r["header"]["status"]["code"], "INVALID_ARGUMENT")
            self.ok(t, "admin", "addStorage", {"storage": {"global_unique_name": "loc_" + t,
                                                           "local": {"root_path": root + t, "key_count_per_file": 1}}})
            listed = [s for s in self.call(t, "admin", "listStorage", {})["storage"]
                      if s["global_unique_name"] == "loc_" + t]
            self.assertEqual(listed[0]["local"]["root_path"], root + t)
            self.ok(t, "admin", "createInstanceGroup", {"instance_group": {
                "name": "g_" + t, "storage_candidates": ["loc_" + t], "global_quota_group_name": "g_" + t}})
            self.ok(t, "meta", "registerInstance", {"instance_group": "g_" + t, "instance_id": "i_" + t,
                                                    "block_size": 4, "model_deployment": MD,
                                                    "location_spec_infos": [{"name": "tp0", "size": 64}]})
            w = self.ok(t, "meta", "startWriteCache", {"instance_id": "i_" + t, "block_keys": [16, 17],
                                                       "write_timeout_seconds": 30})
            paths = [urlparse(l["location_specs"][0]["uri"]).path for l in w["locations"]]
            self.assertEqual([int(os.path.basename(p), 16) for p in paths], [16, 17])
            self.assertTrue(all(p.startswith(root + t) for p in paths), paths)
            for p in paths:  # the client writes the data
                os.makedirs(os.path.dirname(p), exist_ok=True)
                open(p, "w").close()
            self.ok(t, "meta", "finishWriteCache", {"instance_id": "i_" + t, "write_session_id": w["write_session_id"],
                                                    "success_blocks": {"bool_masks": {"values": [True, True]}}})
            q = {"instance_id": "i_" + t, "query_type": "QT_PREFIX_MATCH", "block_keys": [16, 17]}
            self.assertEqual(len(self.ok(t, "meta", "getCacheLocation", q)["locations"]), 2)
            os.remove(paths[1])  # data lost: the location goes
            self.assertEqual(len(self.ok(t, "meta", "getCacheLocation", q)["locations"]), 1)


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False, verbosity=2).result.wasSuccessful() else 1)
