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

# A session started without write_timeout_seconds ends at the session sweep's next tick, which each server reaches
# at its own moment: later steps that name it would then differ only by timing. No tick comes within a run.
NO_SWEEP = "kvcm.write_session.sweep_interval_ms=60000"

# The hot calls (answered by typed_call.c without JSON) at 128 and 2048 keys, with their errors and edge cases, on
# servers allowing 4096 keys a request (so that one more is "too many").
MAX_KEYS = 4096
K128, K2048 = list(range(1000, 1128)), list(range(5000, 7048))
REG3 = dict(REG, instance_id="i3", location_spec_groups=[{"name": "ga", "spec_names": ["tp0"]},
                                                          {"name": "gb", "spec_names": ["tp0", "tp1"]}])


def adds(keys, medium="mem", host="h"):
    return [{"event_type": "EVENT_BLOCK_ADD", "block_add": {
        "block_key": str(k), "medium": medium, "specs": [{"name": "tp0", "uri": "v6d://%s/%s" % (host, k)},
                                                        {"name": "tp1", "uri": "v6d://%s/%sb" % (host, k)}]}}
            for k in keys]


def report(events, host="10.0.0.1:80", **kw):
    return dict({"instance_id": "i1", "host_ip_port": host, "storage_type": ER, "events": events}, **kw)


def loc(keys, **kw):
    return dict({"instance_id": "i1", "block_keys": keys}, **kw)


HOT = [
    ("meta", "registerInstance", REG),
    ("meta", "registerInstance", REG3),
    # startWriteCache / finishWriteCache
    ("meta", "startWriteCache", loc(K128, write_timeout_seconds=30)),
    ("meta", "finishWriteCache", {"instance_id": "i1", "write_session_id": "$WSID", "success_blocks": {"offset": 128}}),
    ("meta", "startWriteCache", loc(K2048, write_timeout_seconds=30)),
    ("meta", "finishWriteCache", {"instance_id": "i1", "write_session_id": "$WSID",
                                  "success_blocks": {"bool_masks": {"values": [i % 3 != 0 for i in range(2048)]}}}),
    ("meta", "startWriteCache", loc(K128 + [7, 7, 8], write_timeout_seconds=30)),  # offset mask, a repeated key
    ("meta", "startWriteCache", loc([9] + K128[:3] + [10] + K2048[:2])),  # bool mask
    ("meta", "finishWriteCache", {"instance_id": "i1", "write_session_id": "$WSID", "success_blocks": {}}),
    ("meta", "finishWriteCache", {"instance_id": "i1", "write_session_id": "$WSID", "success_blocks": {"offset": -1}}),
    ("meta", "finishWriteCache", {"instance_id": "i1", "write_session_id": "$WSID", "success_blocks": {"offset": 4}}),
    ("meta", "finishWriteCache", {"instance_id": "i1", "write_session_id": "$WSID",
                                  "success_blocks": {"bool_masks": {"values": [True] * 4}}}),
    ("meta", "finishWriteCache", {"instance_id": "i1", "write_session_id": "$WSID",
                                  "success_blocks": {"bool_masks": {"values": [True] * (MAX_KEYS + 1)}}}),
    ("meta", "finishWriteCache", {"instance_id": "i1", "write_session_id": "$WSID"}),
    ("meta", "finishWriteCache", {"instance_id": "i1", "success_blocks": {"offset": 1}}),
    ("meta", "finishWriteCache", {"instance_id": "i3", "write_session_id": "$WSID", "success_blocks": {"offset": 1}}),
    ("meta", "finishWriteCache", {"instance_id": "i1", "write_session_id": "$WSID",
                                  "success_blocks": {"bool_masks": {}}}),
    ("meta", "finishWriteCache", {"instance_id": "i1", "write_session_id": "$WSID", "success_blocks": {"offset": 1}}),
    ("meta", "startWriteCache", {"instance_id": "i1"}),
    ("meta", "startWriteCache", loc([])),
    ("meta", "startWriteCache", loc(list(range(20000, 20001 + MAX_KEYS)))),
    ("meta", "startWriteCache", {"instance_id": "i1", "token_ids": list(range(40000, 40000 + 4 * 2048 + 3))}),
    ("meta", "startWriteCache", {"instance_id": "i1", "token_ids": [1, 2, 3]}),
    ("meta", "startWriteCache", {"instance_id": "i1", "token_ids": list(range(4 * MAX_KEYS + 4))}),
    ("meta", "startWriteCache", loc([1], is_replication=True)),
    ("meta", "startWriteCache", loc([1], is_replication=True, replication_target_node_id="n1")),
    ("meta", "startWriteCache", loc(K128, min_replica_count=2, write_timeout_seconds=-5)),
    ("meta", "startWriteCache", loc([30, 31], instance_id="i3", location_spec_group_names=["ga", "gb"])),
    ("meta", "startWriteCache", loc([32, 33], instance_id="i3", location_spec_group_names=["ga"])),
    ("meta", "startWriteCache", loc([34], instance_id="i3", location_spec_group_names=["nope"])),
    ("meta", "startWriteCache", loc([35], instance_id="i3", location_spec_group_names=["ga"] * (MAX_KEYS + 1))),
    ("meta", "startWriteCache", loc([1], instance_id="nope")),
    ("meta", "startWriteCache", loc([1], instance_id="")),
    # getCacheLocation
    ("meta", "getCacheLocation", loc(K128, query_type="QT_PREFIX_MATCH")),
    ("meta", "getCacheLocation", loc(K2048, query_type="QT_PREFIX_MATCH")),
    ("meta", "getCacheLocation", loc(K2048, query_type="QT_BATCH_GET")),
    ("meta", "getCacheLocation", loc(K2048, query_type="QT_BATCH_GET", location_spec_names=["tp1", "nope"])),
    ("meta", "getCacheLocation", loc(K2048, query_type="QT_REVERSE_ROLL_SW_MATCH", sw_size=2)),
    ("meta", "getCacheLocation", loc(K128, query_type="QT_REVERSE_ROLL_SW_MATCH", sw_size=0)),
    ("meta", "getCacheLocation", loc(K128, query_type="QT_REVERSE_ROLL_SW_MATCH", sw_size=129)),
    ("meta", "getCacheLocation", loc(K2048, block_mask={"bool_masks": {"values": [i % 2 == 0 for i in range(2048)]}})),
    ("meta", "getCacheLocation", loc(K128, block_mask={"offset": 0})),
    ("meta", "getCacheLocation", loc(K128, block_mask={"offset": 64})),
    ("meta", "getCacheLocation", loc(K128, block_mask={})),
    ("meta", "getCacheLocation", loc(K128, block_mask={"bool_masks": {}})),
    ("meta", "getCacheLocation", loc(K128, block_mask={"bool_masks": {"values": [True] * (MAX_KEYS + 1)}})),
    ("meta", "getCacheLocation", {"instance_id": "i1"}),
    ("meta", "getCacheLocation", {"instance_id": "i1", "token_ids": list(range(4 * 128))}),
    ("meta", "getCacheLocation", loc(list(range(MAX_KEYS + 1)))),
    ("meta", "getCacheLocation", loc([1], location_spec_names=["x"] * 4097)),
    ("meta", "getCacheLocation", loc([1], query_type=7)),
    ("meta", "getCacheLocation", loc([-1, 2 ** 63 - 1, -2 ** 63], query_type="QT_BATCH_GET")),
    ("meta", "getCacheLocation", loc([1], trace_id="t\u00e9\u4e2d\"\\\n")),
    ("meta", "getCacheLocation", loc([1], instance_id="i\u00e9")),
    # reportEvent: the event-report locations join the data-storage ones in getCacheLocation
    ("meta", "reportEvent", report([{"event_type": "EVENT_NODE_REGISTER", "node_register": {"mediums": ["mem"]}}]
                                   + adds(K2048))),
    ("meta", "reportEvent", report([{"event_type": "EVENT_BLOCK_DELETE", "block_delete": {
        "block_key": str(k), "medium": "mem", "spec_names": ["tp1"]}} for k in K128])),
    ("meta", "reportEvent", report([{"event_type": "EVENT_BLOCK_SNAPSHOT", "block_snapshot": {"blocks": [
        {"block_key": str(k), "medium": "disk", "specs": [{"name": "tp0", "uri": "v6d://g/%d" % k}]}
        for k in [3] + K2048]}}], host="10.0.0.2:80")),
    ("meta", "getCacheLocation", loc([3] + K2048[:200], query_type="QT_BATCH_GET")),
    ("meta", "getCacheLocation", loc([3] + K2048[:200], query_type="QT_BATCH_GET", location_spec_names=["tp1"])),
    ("meta", "reportEvent", report(adds([1, 2], medium="m#1") + adds(["x", "", "99999999999999999999"]) + [
        {"event_type": "EVENT_BLOCK_ADD", "block_add": {"block_key": "4", "medium": "mem"}},
        {"event_type": "EVENT_BLOCK_ADD", "block_add": {"block_key": "4", "medium": "mem", "specs": [
            {"name": "tp0", "uri": "v6d://h/4"}, {"name": "tp0", "uri": "v6d://h/4c"}]}},
        {"event_type": "EVENT_BLOCK_ADD", "block_add": {"block_key": "5", "medium": "mem", "specs": [
            {"name": "tp0", "uri": "v6d://h/5?s_version=1"}]}},
        {"event_type": "EVENT_BLOCK_ADD", "block_add": {"block_key": "6", "medium": "mem", "specs": [
            {"name": "", "uri": "v6d://h/6"}, {"uri": "v6d://h/6b", "name": "tp1"}]}},
        {"event_type": "EVENT_BLOCK_ADD", "block_delete": {"block_key": "7", "medium": "mem", "spec_names": ["tp0"]}},
        {"event_type": "EVENT_BLOCK_DELETE", "block_delete": {"block_key": "8", "medium": "mem"}},
        {"event_type": "EVENT_BLOCK_DELETE", "block_delete": {"block_key": "8", "medium": "mem", "spec_names": [""]}},
        {"event_type": "EVENT_BLOCK_ADD"},
        {"event_type": 9, "block_add": {"block_key": "9"}},
        {"block_add": {"block_key": "10", "medium": "mem", "specs": [{"name": "tp0", "uri": "v6d://h/10"}]}},
        {"event_type": "EVENT_HEARTBEAT", "heartbeat": {"system_status": {"a": "1", "b": "", "": "x"}}},
        {"event_type": "EVENT_NODE_REGISTER", "node_register": {"mediums": ["mem", "mem"]}},
        {"event_type": "EVENT_NODE_REGISTER", "node_register": {"mediums": [""]}},
        {"event_type": "EVENT_NODE_REGISTER", "node_register": {}},
    ])),
    ("meta", "reportEvent", report([{"event_type": "EVENT_BLOCK_SNAPSHOT", "block_snapshot": {"blocks": [
        {"block_key": "1", "medium": "disk", "specs": [{"name": "tp0", "uri": "v6d://g/1"}]},
        {"block_key": "1", "medium": "disk", "specs": [{"name": "tp0", "uri": "v6d://g/1"}]}]}}], host="10.0.0.3:80")),
    ("meta", "reportEvent", report([{"event_type": "EVENT_BLOCK_SNAPSHOT", "block_snapshot": {}}], host="10.0.0.3:80")),
    ("meta", "reportEvent", report([{"event_type": "EVENT_BLOCK_SNAPSHOT", "block_snapshot": {"blocks": []}},
                                    {"event_type": "EVENT_BLOCK_SNAPSHOT", "block_snapshot": {}}])),
    ("meta", "reportEvent", report([{"event_type": "EVENT_BLOCK_SNAPSHOT", "block_snapshot": {"blocks": []}}]
                                   + adds([1]))),
    ("meta", "reportEvent", report([{"event_type": "EVENT_HOST_DOWN", "host_down": {}}] + adds([1]))),
    ("meta", "reportEvent", report([{"event_type": "EVENT_HOST_DOWN", "host_down": {}}], host="10.0.0.2:80")),
    ("meta", "reportEvent", report(adds([1]), host="10.0.0.2:80")),
    ("meta", "reportEvent", report(adds(K128), host="a#b")),
    ("meta", "reportEvent", report(adds(K128), host="")),
    ("meta", "reportEvent", report(adds([1]), storage_type="ST_NFS")),
    ("meta", "reportEvent", report(adds([1]), storage_type="ST_EVENT_REPORT_L1P5")),
    ("meta", "reportEvent", report(adds(range(MAX_KEYS + 1)))),
    ("meta", "reportEvent", report([])),
    ("meta", "reportEvent", report([], host="")),
    ("meta", "reportEvent", report(adds([1]), instance_id="nope")),
    ("meta", "getCacheLocation", loc([1, 2, 3, 4, 5, 6, 7, 8] + K128, query_type="QT_BATCH_GET")),
    # fault injection reaches the typed calls as it reaches the others
    ("debug", "injectFault", {"api_name": "GetCacheLocation", "fault_type": "FT_INTERNAL_ERROR",
                              "fault_trigger_strategy": "ALWAYS"}),
    ("meta", "getCacheLocation", loc(K128)),
    ("debug", "injectFault", {"api_name": "ReportEventMetaWrite", "fault_trigger_strategy": "ALWAYS",
                              "trigger_at_write": 2}),
    ("meta", "reportEvent", report(adds([11, 12, 13]))),
    ("debug", "injectFault", {"api_name": "FinishWriteCache", "fault_trigger_strategy": "ONCE", "trigger_at_call": 3}),
    ("meta", "finishWriteCache", {"trace_id": "f_3", "instance_id": "i1", "write_session_id": "x",
                                  "success_blocks": {"offset": 1}}),
    ("debug", "clearFaults", {}),
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
        v = re.sub(r"write session [0-9a-z]{32} ", "write session <id> ", v)
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
        assert fx.deletes_done(srv), "step %s %s: deletes still pending" % (service, route)
    return out


def raw_call(srv, route, data):
    """route called with the request bytes as they are: (status code name, details)."""
    try:
        return fx.raw_method(srv, "meta", route)(data, timeout=30).header.status.code, ""
    except fx.grpc.RpcError as e:
        return e.code().name, e.details()


def encoded(route, body, patch=b"", to=b""):
    """The request message of body serialized, patch replaced by to in its bytes."""
    data = fx.json_format.ParseDict(body, fx.message_classes("meta", route)[0]()).SerializeToString()
    return data.replace(patch, to)


def field(number, payload):
    """A length-delimited field (payload < 128 bytes)."""
    return bytes([number << 3 | 2, len(payload)]) + payload


class Parity(unittest.TestCase):
    def test_same_replies_over_http_and_grpc(self):
        a, b = fx.Server(NO_SWEEP), fx.Server(NO_SWEEP)
        try:
            http, rpc = run(a, "http", SCENARIO), run(b, "grpc", SCENARIO)
        finally:
            bad = a.stop() + b.stop()
        self.assertEqual(bad, [])
        for i, (h, g) in enumerate(zip(http, rpc)):
            self.assertEqual(h, g, "step %d %s" % (i, h[0]))
        self.assertEqual(len(http), len(SCENARIO))

    def test_hot_calls_large_and_malformed(self):
        limit = "kvcm.service.max_keys_per_request=%d" % MAX_KEYS
        a, b = fx.Server(limit, NO_SWEEP), fx.Server(limit, NO_SWEEP)
        try:
            http, rpc = run(a, "http", HOT), run(b, "grpc", HOT)
        finally:
            bad = a.stop() + b.stop()
        self.assertEqual(bad, [])
        for i, (h, g) in enumerate(zip(http, rpc)):
            self.assertEqual(h, g, "step %d %s %s" % (i, h[0], json.dumps(HOT[i][2])[:200]))
        self.assertEqual(len(http), len(HOT))


class NoJsonForm(unittest.TestCase):
    """Requests whose JSON form HTTP would refuse (a string not UTF-8, a map repeating a key) or that have none (a
    NaN), and a reply that has none: the hot calls answer them as the JSON way always did."""

    @classmethod
    def setUpClass(cls):
        cls.srv = fx.Server()
        fx.grpc_call(cls.srv, "meta", "registerInstance", REG)

    @classmethod
    def tearDownClass(cls):
        cls.bad = cls.srv.stop()
        assert cls.bad == [], cls.bad

    def test_strings_not_utf8(self):
        malformed = ("INVALID_ARGUMENT", "malformed request (HTTP would answer 400)")
        for route, body in (("getCacheLocation", loc([1])), ("startWriteCache", loc([1])),
                            ("finishWriteCache", {"instance_id": "i1", "write_session_id": "ws_PATCH",
                                                  "success_blocks": {"offset": 0}}),
                            ("reportEvent", report(adds([1], medium="PATCH")))):
            body = dict(body, trace_id="PATCH")
            for bad in (b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf"):  # stray, cut, surrogate, overlong
                self.assertEqual(raw_call(self.srv, route, encoded(route, body, b"PATCH", bad + b"PATCH"[len(bad):])),
                                 malformed, (route, bad))
            self.assertNotEqual(raw_call(self.srv, route, encoded(route, body, b"PATCH", "\u00e9TCH".encode())),
                                malformed, route)

    def test_map_repeating_a_key(self):
        entry = field(1, field(1, b"load") + field(2, b"1"))  # system_status {"load": "1"}
        item = bytes([0x08, 5]) + field(6, entry + entry)  # EVENT_HEARTBEAT with it twice
        body = encoded("reportEvent", report([])) + field(4, item)
        self.assertEqual(raw_call(self.srv, "reportEvent", body),
                         ("INVALID_ARGUMENT", "malformed request (HTTP would answer 400)"))
        item = bytes([0x08, 5]) + field(6, entry + field(1, field(1, b"gpu") + field(2, b"ok")))
        self.assertEqual(raw_call(self.srv, "reportEvent", encoded("reportEvent", report([])) + field(4, item)),
                         (1, ""), "distinct keys are served")

    def test_nan_refused_naming_the_field(self):
        grp = {"name": "g_nan", "cache_config": {"reclaim_strategy": {"trigger_strategy": {"used_percentage": "NaN"}}}}
        with self.assertRaises(fx.grpc.RpcError) as e:
            fx.grpc_call(self.srv, "admin", "createInstanceGroup", {"instance_group": grp})
        self.assertEqual(e.exception.code(), fx.grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("instance_group.cache_config.reclaim_strategy.trigger_strategy.used_percentage",
                      e.exception.details())

    def test_reply_cut_inside_a_character(self):
        """request_id keeps 256 bytes of trace_id: a cut inside a character has no protobuf (UTF-8) form."""
        for route, body in (("getCacheLocation", loc([1])), ("reportEvent", report([]))):
            body = dict(body, trace_id="a" * 255 + "\u00e9")
            self.assertEqual(raw_call(self.srv, route, encoded(route, body)),
                             ("INTERNAL", "the reply does not map to the response message"), route)
            body["trace_id"] = "a" * 254 + "\u00e9"
            self.assertEqual(raw_call(self.srv, route, encoded(route, body))[0], 1, route)


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False, verbosity=2).result.wasSuccessful() else 1)
