#!/usr/bin/env python3
"""One scenario, every MetaService, AdminService and DebugService route, run on two fresh servers: over HTTP/JSON
on one and over gRPC/protobuf on the other. Each reply of the HTTP run must parse into the method's response
message (so the .proto files lack nothing the HTTP API prints) and equal the gRPC run's reply once the values that
are random per server (ids, times, ports, paths) are masked."""
import json
import re
import sys
import unittest

import grpc_fixture as fx

MD = {"model_name": "m", "dtype": "FP8", "tp_size": 1, "dp_size": 1, "pp_size": 1, "use_mla": False}
REG = {"trace_id": "t1", "instance_group": "default", "instance_id": "i1", "block_size": 4,
       "location_spec_infos": [{"name": "tp0", "size": 1024}, {"name": "tp1", "size": 1024}],
       "model_deployment": MD}
GROUP = {"name": "g2", "storage_candidates": ["dummy_01"], "global_quota_group_name": "q",
         "max_instance_count": 10, "quota": {"capacity": "1000000000"}, "extra_info": "{\"x\":1}",
         "cache_config": {"reclaim_strategy": {"trigger_strategy": {"used_percentage": 0.9},
                                               "delay_before_delete_ms": 10},
                          "data_storage_strategy": "CPS_PREFER_3FS",
                          "meta_indexer_config": {"max_key_count": "1000"}}}
ER = "ST_EVENT_REPORT_L2"

SCENARIO = [
    # MetaService
    ("meta", "registerInstance", REG),
    ("meta", "registerInstance", dict(REG, block_size=8)),  # DUPLICATE_ENTITY
    ("meta", "getInstanceInfo", {"trace_id": "t2", "instance_id": "i1"}),
    ("meta", "getInstanceInfo", {"instance_id": "nope"}),
    ("meta", "startWriteCache", {"instance_id": "i1", "block_keys": [1, 2, 3], "write_timeout_seconds": 30}),
    ("meta", "finishWriteCache", {"instance_id": "i1", "write_session_id": "$WSID", "success_blocks": {"offset": 2}}),
    ("meta", "startWriteCache", {"instance_id": "i1", "block_keys": [1, 2, 3, 4], "write_timeout_seconds": 30}),
    ("meta", "finishWriteCache", {"instance_id": "i1", "write_session_id": "$WSID",
                                  "success_blocks": {"bool_masks": {"values": [True, False]}}}),
    ("meta", "finishWriteCache", {"instance_id": "i1", "write_session_id": "nope", "success_blocks": {"offset": 1}}),
    ("meta", "getCacheLocation", {"instance_id": "i1", "query_type": "QT_PREFIX_MATCH", "block_keys": [1, 2, 3]}),
    ("meta", "getCacheLocation", {"instance_id": "i1", "query_type": "QT_BATCH_GET", "block_keys": [1, 9, 3],
                                  "location_spec_names": ["tp1"]}),
    ("meta", "getCacheLocation", {"instance_id": "i1", "query_type": "QT_REVERSE_ROLL_SW_MATCH",
                                  "block_keys": [1, 2, 3], "sw_size": 1}),
    ("meta", "getCacheLocation", {"instance_id": "i1", "query_type": "QT_PREFIX_MATCH", "block_keys": [1, 2],
                                  "block_mask": {"offset": 1}}),
    ("meta", "getCacheLocation", {"instance_id": "nope", "block_keys": [1]}),
    ("meta", "getCacheLocation", {"instance_id": "i1", "query_type": "QT_PREFIX_MATCH_WITH_MAMBA", "block_keys": [1]}),
    ("meta", "getCacheLocationLen", {"instance_id": "i1", "query_type": "QT_PREFIX_MATCH", "block_keys": [1, 2, 3]}),
    ("meta", "getCacheMeta", {"instance_id": "i1", "block_keys": [1, 2, 9]}),
    ("meta", "getCacheMetaDetail", {"instance_id": "i1", "block_keys": [1, 9]}),
    ("meta", "startWriteCache", {"instance_id": "i1", "token_ids": list(range(12)), "write_timeout_seconds": 30,
                                 "min_replica_count": 1}),
    ("meta", "removeCache", {"instance_id": "i1", "block_keys": [2]}),
    ("meta", "getCacheLocation", {"instance_id": "i1", "query_type": "QT_BATCH_GET", "block_keys": [1, 2]}),
    ("meta", "trimCache", {"instance_id": "i1", "strategy": "TS_UNSPECIFIED"}),
    ("meta", "trimCache", {"instance_id": "i1", "strategy": "TS_TIMESTAMP"}),
    ("meta", "getClusterInfo", {"trace_id": "c"}),
    ("meta", "reportEvent", {"instance_id": "i1", "host_ip_port": "10.0.0.1:80", "storage_type": ER,
                             "events": [{"event_type": "EVENT_NODE_REGISTER", "node_register": {"mediums": ["mem"]}},
                                        {"event_type": "EVENT_BLOCK_ADD", "block_add": {
                                            "block_key": "1", "medium": "mem",
                                            "specs": [{"name": "tp0", "uri": "v6d://h/1"},
                                                      {"name": "tp1", "uri": "v6d://h/1b"}]}},
                                        {"event_type": "EVENT_BLOCK_ADD", "block_add": {
                                            "block_key": "7", "medium": "mem",
                                            "specs": [{"name": "tp0", "uri": "v6d://h/7"}]}},
                                        {"event_type": "EVENT_HEARTBEAT",
                                         "heartbeat": {"system_status": {"load": "1", "gpu": "ok"}}}]}),
    ("meta", "reportEvent", {"instance_id": "i1", "host_ip_port": "10.0.0.1:80", "storage_type": ER,
                             "events": [{"event_type": "EVENT_BLOCK_DELETE", "block_delete": {
                                 "block_key": "7", "medium": "mem", "spec_names": ["tp0"]}},
                                 {"event_type": "EVENT_BLOCK_ADD", "block_add": {"block_key": "x"}}]}),
    ("meta", "reportEvent", {"instance_id": "i1", "host_ip_port": "10.0.0.2:80", "storage_type": ER,
                             "events": [{"event_type": "EVENT_BLOCK_SNAPSHOT", "block_snapshot": {"blocks": [
                                 {"block_key": "1", "medium": "disk", "specs": [{"name": "tp0", "uri": "v6d://g/1"}]},
                                 {"block_key": "2", "medium": "disk", "specs": [{"name": "tp0", "uri": "v6d://g/2"}]},
                             ]}}]}),
    ("meta", "reportEvent", {"instance_id": "i1", "host_ip_port": "10.0.0.1:80", "storage_type": ER, "events": []}),
    ("meta", "reportEvent", {"instance_id": "i1", "host_ip_port": "", "storage_type": ER, "events": []}),
    ("meta", "getHostCacheState", {"instance_id": "i1", "query_type": "QT_PREFIX_MATCH", "block_cache_keys": [1, 2],
                                   "p2p_host_count": 2}),
    ("meta", "getHostCacheState", {"instance_id": "i1", "query_type": "QT_BATCH_GET", "block_cache_keys": [1]}),
    ("meta", "getCacheLocationsByBackend", {"instance_id": "i1", "query_type": "QT_BATCH_GET", "block_keys": [1, 2],
                                            "backend_selectors": [{"backend_type": "ST_NFS"},
                                                                  {"backend_type": ER, "strategy": "LSS_V6D_PREFIX"}]}),
    ("meta", "getCacheLocationsByBackend", {"instance_id": "i1", "query_type": "QT_BATCH_GET", "block_keys": [1]}),
    ("meta", "trimCache", {"instance_id": "i1", "strategy": "TS_REMOVE_ALL_CACHE"}),
    # AdminService
    ("admin", "addStorage", {"trace_id": "a", "storage": {"global_unique_name": "dummy_01",
                                                          "dummy": {"root_path": "/d/", "key_count_per_file": 1}}}),
    ("admin", "addStorage", {"storage": {"global_unique_name": "dummy_01", "dummy": {"root_path": "/d/"}}}),
    ("admin", "addStorage", {"storage": {"global_unique_name": "m1", "mmc": {"key_prefix": "kv/"}}}),
    ("admin", "addStorage", {"storage": {"global_unique_name": "x", "threefs": {"mountpoint": "/3fs"}}}),
    ("admin", "listStorage", {}),
    ("admin", "disableStorage", {"storage_unique_name": "m1"}),
    ("admin", "enableStorage", {"storage_unique_name": "m1"}),
    ("admin", "enableStorage", {"storage_unique_name": "nope"}),
    ("admin", "createInstanceGroup", {"instance_group": GROUP}),
    ("admin", "createInstanceGroup", {"instance_group": GROUP}),
    ("admin", "getInstanceGroup", {"name": "g2"}),
    ("admin", "updateInstanceGroup", {"instance_group": dict(GROUP, user_data="u"), "current_version": "0"}),
    ("admin", "updateInstanceGroup", {"instance_group": GROUP, "current_version": "1"}),
    ("admin", "listInstanceGroup", {}),
    ("admin", "registerInstance", dict(REG, instance_group="g2", instance_id="i2")),
    ("admin", "getInstanceInfo", {"instance_id": "i2"}),
    ("admin", "listInstanceInfo", {"instance_group_name": "g2"}),
    ("admin", "listInstanceInfo", {}),
    ("admin", "getCacheMeta", {"instance_id": "i1", "block_keys": [1]}),
    ("admin", "removeCache", {"instance_id": "i2", "block_keys": [1]}),
    ("admin", "checkHealth", {}),
    ("admin", "updateStorage", {"storage": {"global_unique_name": "dummy_01", "dummy": {"root_path": "/d2/"}},
                                "force_update": True}),
    ("admin", "updateStorage", {"storage": {"global_unique_name": "nope", "dummy": {"root_path": "/d2/"}}}),
    ("admin", "genConfigSnapshot", {}),
    ("admin", "loadConfigSnapshot", {"config_snapshot": "{\"storage_config\":[{\"global_unique_name\":\"s9\","
                                                        "\"dummy\":{\"root_path\":\"/s9/\"}}]}"}),
    ("admin", "loadConfigSnapshot", {"config_snapshot": "not json"}),
    ("admin", "getMetrics", {}),
    ("admin", "updateLogger", {"log_level": "INFO"}),
    ("admin", "updateLogger", {"log_level": "LOUD"}),
    ("admin", "removeInstance", {"instance_id": "i2"}),
    ("admin", "removeInstanceGroup", {"name": "g2"}),
    ("admin", "removeStorage", {"storage_unique_name": "m1"}),
    # DebugService
    ("debug", "injectFault", {"api_name": "GetCacheLocationLen", "fault_type": "FT_INTERNAL_ERROR",
                              "fault_trigger_strategy": "ALWAYS"}),
    ("meta", "getCacheLocationLen", {"instance_id": "i1", "block_keys": [1]}),
    ("debug", "removeFault", {"api_name": "GetCacheLocationLen"}),
    ("debug", "injectFault", {"api_name": "StartWriteCache", "fault_trigger_strategy": "ONCE", "trigger_at_call": 2}),
    ("meta", "startWriteCache", {"trace_id": "x_2", "instance_id": "i1", "block_keys": [5]}),
    ("debug", "clearFaults", {}),
    ("debug", "debugClock", {"freeze": True, "advance_ms": "5"}),
]

MASKED = {"write_session_id", "self_node_id", "leader_node_id", "node_id", "location_id", "create_time", "id",
          "elector_last_loop_time_ms", "now_ms", "committed_snapshot_version", "meta_rpc_port", "meta_http_port",
          "admin_rpc_port", "admin_http_port", "timestamp", "host", "metric_value"}


def mask(v, root):
    if isinstance(v, dict):
        return {k: ("*" if k in MASKED and v[k] not in ("", "0", 0) else mask(x, root)) for k, x in v.items()}
    if isinstance(v, list):
        return [mask(x, root) for x in v]
    if isinstance(v, str):
        v = v.replace(root, "$ROOT/")
        v = re.sub(r"[0-9a-f]{32}", "<hex32>", v)
        if v.startswith("{") or v.startswith("["):
            try:
                return json.dumps(mask(json.loads(v), root), sort_keys=True)
            except ValueError:
                pass
    return v


def normalize(d, root):
    h = d.get("header")
    if h and h.get("request_id"):
        h["request_id"] = re.sub(r"_\d+$", "_*", h["request_id"])
    return mask(d, root)


def run(srv, transport, steps):
    out, wsid = [], ""
    for service, route, body in steps:
        body = json.loads(json.dumps(body).replace("$WSID", wsid))
        if transport == "http":
            status, reply = fx.http_call(srv, service, route, body)
            d = ("HTTP", status) if status != 200 else fx.to_dict(fx.http_as_message(service, route, reply))
        else:
            try:
                d = fx.to_dict(fx.grpc_call(srv, service, route, body))
            except fx.grpc.RpcError as e:
                d = ("gRPC", e.code().name)
        if isinstance(d, dict):
            wsid = d.get("write_session_id") or wsid
            d = normalize(d, srv.root)
        out.append(((service, route), d))
    return out


class Parity(unittest.TestCase):
    def test_same_replies_over_http_and_grpc(self):
        a, b = fx.Server(), fx.Server()
        try:
            http, rpc = run(a, "http", SCENARIO), run(b, "grpc", SCENARIO)
        finally:
            bad = a.stop() + b.stop()
        self.assertEqual(bad, [])
        for i, (h, g) in enumerate(zip(http, rpc)):
            self.assertEqual(h, g, "step %d %s" % (i, h[0]))
        self.assertEqual(len(http), len(SCENARIO))


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False, verbosity=2).result.wasSuccessful() else 1)
