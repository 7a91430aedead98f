#!/usr/bin/env python3
"""The differences from the reference that its own suites found (docs/kvcm.md, "Choices made for the reference's
newer versions"), each checked over HTTP and over gRPC."""
import sys
import unittest

import grpc_fixture as fx

MD = {"model_name": "m", "dtype": "FP8"}


def reg(instance, group="default"):
    return {"instance_group": group, "instance_id": instance, "block_size": 4, "model_deployment": MD,
            "location_spec_infos": [{"name": "tp0", "size": 64}]}


class Differences(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = fx.Server()

    @classmethod
    def tearDownClass(cls):
        assert cls.srv.stop() == []

    def call(self, t, service, route, body):
        return fx.call(self.srv, t, service, route, body)

    def code(self, reply):
        return reply["header"]["status"]["code"]

    def test_group_with_candidates_that_do_not_exist_yet(self):
        for t in ("http", "grpc"):
            g, st = "late_" + t, "later_storage_" + t
            grp = {"name": g, "storage_candidates": [st], "global_quota_group_name": g}
            self.assertEqual(self.code(self.call(t, "admin", "createInstanceGroup", {"instance_group": grp})), "OK")
            self.assertEqual(self.code(self.call(t, "meta", "registerInstance", reg("i_" + t, g))), "OK")
            r = self.call(t, "meta", "startWriteCache", {"instance_id": "i_" + t, "block_keys": [1],
                                                        "write_timeout_seconds": 30})
            self.assertEqual(self.code(r), "INTERNAL_ERROR")
            self.assertIn('candidate storage "%s" does not exist' % st, r["header"]["status"]["message"])
            self.assertEqual(self.code(self.call(t, "admin", "addStorage", {"storage": {
                "global_unique_name": st, "nfs": {"root_path": self.srv.root}}})), "OK")
            r = self.call(t, "meta", "startWriteCache", {"instance_id": "i_" + t, "block_keys": [1],
                                                        "write_timeout_seconds": 30})
            self.assertEqual(self.code(r), "OK")
            self.assertEqual(len(r["locations"]), 1)

    def test_inject_fault_reads_its_enums_like_every_other(self):
        self.call("http", "meta", "registerInstance", reg("f1"))
        for t in ("http", "grpc"):
            for body in ({"api_name": "GetCacheLocationLen", "fault_type": "FT_INTERNAL_ERROR"},
                         {"api_name": "GetCacheLocationLen"},
                         {"api_name": "GetCacheLocationLen", "fault_type": 0, "fault_trigger_strategy": "ALWAYS"}):
                if t == "grpc" and isinstance(body.get("fault_type"), int):
                    continue
                self.assertEqual(self.code(self.call(t, "debug", "injectFault", body)), "OK", body)
                r = self.call(t, "meta", "getCacheLocationLen", {"instance_id": "f1", "block_keys": [1]})
                self.assertEqual(self.code(r), "INTERNAL_ERROR")
                self.assertEqual(self.code(self.call(t, "debug", "clearFaults", {})), "OK")
        status, r = fx.http_call(self.srv, "debug", "injectFault", {"api_name": "X", "fault_type": "FT_NEWER_ONE"})
        self.assertEqual(r["header"]["status"]["code"], "OK")  # an unknown name is the default, value 0
        fx.http_call(self.srv, "debug", "clearFaults", {})

    def test_report_event_without_events_returns_extra_info(self):
        grp = {"name": "er", "storage_candidates": ["nfs_01"], "global_quota_group_name": "er",
               "extra_info": "{\"region\":\"a\"}", "event_report_storage_candidates": ["event_report_l2_default"]}
        self.assertEqual(self.code(self.call("http", "admin", "createInstanceGroup", {"instance_group": grp})), "OK")
        self.call("http", "meta", "registerInstance", reg("e1", "er"))
        for t in ("http", "grpc"):
            for events in ([], [{"event_type": "EVENT_HEARTBEAT", "heartbeat": {}}]):
                r = self.call(t, "meta", "reportEvent", {"instance_id": "e1", "host_ip_port": "10.1.1.1:1",
                                                         "storage_type": "ST_EVENT_REPORT_L2", "events": events})
                self.assertEqual(self.code(r), "OK")
                self.assertEqual(r["extra_info"], "{\"region\":\"a\"}", (t, events))

    def test_locations_carry_status_and_id(self):
        self.call("http", "meta", "registerInstance", reg("s1"))
        for t in ("http", "grpc"):
            k = 100 if t == "http" else 200
            w = self.call(t, "meta", "startWriteCache", {"instance_id": "s1", "block_keys": [k, k + 1],
                                                        "write_timeout_seconds": 30})
            self.assertEqual([l["status"] for l in w["locations"]], ["CLS_WRITING"] * 2)
            ids = [l["id"] for l in w["locations"]]
            self.assertTrue(all(ids) and len(set(ids)) == 2, ids)
            self.call(t, "meta", "finishWriteCache", {"instance_id": "s1", "write_session_id": w["write_session_id"],
                                                     "success_blocks": {"offset": 2}})
            for qt in ("QT_PREFIX_MATCH", "QT_BATCH_GET"):
                r = self.call(t, "meta", "getCacheLocation", {"instance_id": "s1", "query_type": qt,
                                                             "block_keys": [k, k + 1]})
                self.assertEqual([l["status"] for l in r["locations"]], ["CLS_SERVING"] * 2)
                self.assertEqual([l["id"] for l in r["locations"]], ids)
                for a, b in zip(w["locations"], r["locations"]):
                    for f in ("type", "spec_size", "location_specs"):
                        self.assertEqual(a[f], b[f])
            r = self.call(t, "meta", "getCacheLocation", {"instance_id": "s1", "query_type": "QT_BATCH_GET",
                                                         "block_keys": [k + 50]})
            self.assertEqual(r["locations"][0]["status"], "CLS_NOT_FOUND")
            self.assertEqual(r["locations"][0]["id"], "")

    def test_host_cache_state_answers_old_and_new_names(self):
        self.call("http", "meta", "registerInstance", reg("h1"))
        add = [{"event_type": "EVENT_BLOCK_ADD", "block_add": {"block_key": str(k), "medium": "mem",
                                                               "specs": [{"name": "tp0", "uri": "v6d://a/%d" % k}]}}
               for k in (1, 2)]
        self.call("http", "meta", "reportEvent", {"instance_id": "h1", "host_ip_port": "10.2.2.2:1",
                                                  "storage_type": "ST_EVENT_REPORT_L2", "events": add})
        for t in ("http", "grpc"):
            r = self.call(t, "meta", "getHostCacheState", {"instance_id": "h1", "query_type": "QT_PREFIX_MATCH",
                                                          "block_cache_keys": [1, 2, 3]})
            self.assertEqual(len(r["hosts"]), 1)
            h = r["hosts"][0]
            for name in ("local", "global", "prefix_match_blocks"):
                self.assertEqual(h[name], "2", (t, name))
            # without p2p_host_count the peer fields are left out (gRPC: proto3's 0)
            self.assertEqual((h.get("p2p_1_fetch", "0"), h.get("p2p_1_total_match", "0")), ("0", "0"))

    def test_cluster_info_names_the_grpc_ports(self):
        for t in ("http", "grpc"):
            e = self.call(t, "meta", "getClusterInfo", {})["leader_endpoint"]
            self.assertEqual((int(e["meta_rpc_port"]), int(e["meta_http_port"])), (self.srv.rpc_port, self.srv.http_port))
            self.assertNotIn("admin_rpc_port", e)  # the newest reference: not on the MetaService
            self.assertNotIn("admin_http_port", e)


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False, verbosity=2).result.wasSuccessful() else 1)
