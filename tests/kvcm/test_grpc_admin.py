#!/usr/bin/env python3
"""The admin methods that came with the gRPC transport, over HTTP and over gRPC: updateStorage,
genConfigSnapshot / loadConfigSnapshot, getMetrics and updateLogger."""
import json
import sys
import tempfile
import time
import unittest
import urllib.request

import grpc_fixture as fx

MD = {"model_name": "m", "dtype": "FP8"}
TRANSPORTS = ("http", "grpc")


call = fx.call


def code(r):
    return r["header"]["status"]["code"]


def copy_server():
    """A server to load another's snapshot: that one's storage roots (its temp dir) must lie under this one's
    kvcm.storage.allowed_roots, as any root a snapshot sets must (by default only this server's own temp dir is)."""
    return fx.Server("kvcm.storage.allowed_roots=" + tempfile.gettempdir())


class Admin(unittest.TestCase):
    def setUp(self):
        self.srv = fx.Server()

    def tearDown(self):
        self.assertEqual(self.srv.stop(), [])

    def register(self, t, instance, group="default"):
        r = call(self.srv, t, "meta", "registerInstance", {
            "instance_group": group, "instance_id": instance, "block_size": 4, "model_deployment": MD,
            "location_spec_infos": [{"name": "tp0", "size": 64}]})
        self.assertEqual(code(r), "OK")

    def test_update_storage(self):
        for t in TRANSPORTS:
            root = self.srv.root + t + "/"
            self.register(t, "u_" + t)
            r = call(self.srv, t, "admin", "updateStorage", {"storage": {
                "global_unique_name": "nfs_01", "nfs": {"root_path": root, "key_count_per_file": 1}},
                "force_update": True})
            self.assertEqual(code(r), "OK")
            listed = [s for s in call(self.srv, t, "admin", "listStorage", {})["storage"]
                      if s["global_unique_name"] == "nfs_01"]
            self.assertEqual(listed[0]["nfs"]["root_path"], root)
            w = call(self.srv, t, "meta", "startWriteCache", {"instance_id": "u_" + t, "block_keys": [1],
                                                             "write_timeout_seconds": 30})
            self.assertTrue(w["locations"][0]["location_specs"][0]["uri"].startswith("file://" + root), w)
            # the type cannot change under locations; an unknown name is refused
            r = call(self.srv, t, "admin", "updateStorage", {"storage": {
                "global_unique_name": "nfs_01", "dummy": {"root_path": "/d/"}}})
            self.assertEqual(code(r), "INVALID_ARGUMENT")
            r = call(self.srv, t, "admin", "updateStorage", {"storage": {
                "global_unique_name": "nope", "nfs": {"root_path": "/x/"}}})
            self.assertEqual(code(r), "INSTANCE_NOT_EXIST")
            r = call(self.srv, t, "admin", "updateStorage", {"storage": {
                "global_unique_name": "nfs_01", "nfs": {"root_path": "relative"}}})
            self.assertEqual(code(r), "INVALID_ARGUMENT")

    def test_config_snapshot_round_trip(self):
        for t in TRANSPORTS:
            src, dst = self.srv, copy_server()
            try:
                call(src, t, "admin", "addStorage", {"storage": {"global_unique_name": "d_" + t,
                                                                 "dummy": {"root_path": "/d/"}}})
                call(src, t, "admin", "disableStorage", {"storage_unique_name": "d_" + t})
                self.assertEqual(code(call(src, t, "admin", "createInstanceGroup", {"instance_group": {
                    "name": "g_" + t, "storage_candidates": ["d_" + t], "global_quota_group_name": "q",
                    "extra_info": "x"}})), "OK")
                self.register(t, "snap_" + t, "g_" + t)
                snap = call(src, t, "admin", "genConfigSnapshot", {})["config_snapshot"]
                parsed = json.loads(snap)
                self.assertEqual(set(parsed), {"storage_config", "instance_group", "instance_info", "accounts"})
                # malformed snapshots change nothing
                for bad in ("[", "{\"storage_config\":[{\"global_unique_name\":5}]}", "{\"instance_group\":7}"):
                    r = call(dst, t, "admin", "loadConfigSnapshot", {"config_snapshot": bad})
                    self.assertEqual(code(r), "INVALID_ARGUMENT", bad)
                self.assertEqual(len(call(dst, t, "admin", "listStorage", {})["storage"]), 3)
                self.assertEqual(code(call(dst, t, "admin", "loadConfigSnapshot", {"config_snapshot": snap})), "OK")
                again = json.loads(call(dst, t, "admin", "genConfigSnapshot", {})["config_snapshot"])
                self.assertEqual(again, parsed)
                # loading twice is a no-op that still succeeds
                self.assertEqual(code(call(dst, t, "admin", "loadConfigSnapshot", {"config_snapshot": snap})), "OK")
                info = call(dst, t, "meta", "getInstanceInfo", {"instance_id": "snap_" + t})
                self.assertEqual(info["instance_group"], "g_" + t)
                # a refused entry is named; what came before it stays
                clash = json.loads(snap)
                clash["instance_info"][0]["block_size"] = 99
                r = call(dst, t, "admin", "loadConfigSnapshot", {"config_snapshot": json.dumps(clash)})
                self.assertEqual(code(r), "DUPLICATE_ENTITY")
                self.assertIn("refused", r["header"]["status"]["message"])
            finally:
                self.assertEqual(dst.stop(), [])

    def test_get_metrics_is_the_metrics_page_as_json(self):
        self.register("http", "m1")
        for t in TRANSPORTS:
            r = call(self.srv, t, "admin", "getMetrics", {})
            self.assertEqual(code(r), "OK")
            self.assertGreater(int(r["timestamp"]), 0)
            by = {}
            for m in r["metrics"]:
                tags = tuple((x["tag_key"], x["tag_value"]) for x in m["metric_tags"])
                by[(m["metric_name"], tags)] = m["metric_value"]
            reg = by[("mmc_kvcm_requests_total", (("api", "registerInstance"), ("code", "OK")))]
            self.assertEqual(reg, {"int_value": "1"})
            self.assertIn(("mmc_kvcm_instances", ()), by)
            if t == "grpc":  # this call's own connection
                self.assertGreaterEqual(int(by[("mmc_kvcm_grpc_connections", ())]["int_value"]), 1)
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.srv.admin_http_port) as f:
                text = f.read().decode()
            page = set()
            for line in text.splitlines():
                if line and not line.startswith("#"):
                    name, _, labels = line.rsplit(" ", 1)[0].partition("{")
                    tags = tuple(tuple(kv.split("=", 1)) for kv in labels.rstrip("}").replace('"', "").split(",")
                                 if kv)
                    page.add((name, tags))
            # the reference's two per-API metrics, in its names, beside the page's samples
            self.assertEqual(by[("service.query_counter", (("api_name", "RegisterInstance"),))], {"int_value": "1"})
            self.assertGreater(by[("service.query_rt_us", (("api_name", "RegisterInstance"),))]["float_value"], 0)
            # (and the reclaimer's under the reference's cache_reclaimer.* names)
            ours = {k for k in by if not k[0].startswith(("service.", "cache_reclaimer."))}
            # the same samples, but for those the getMetrics call itself added once it was answered
            self.assertTrue(ours <= page, ours - page)
            self.assertEqual({s for s in page if ("api", "getMetrics") not in s[1]} - ours, set())

    def test_update_logger(self):
        def log():
            with open(self.srv.log_path, errors="replace") as f:
                return f.read()
        for t in TRANSPORTS:
            self.assertEqual(code(call(self.srv, t, "admin", "updateLogger", {"log_level": "ERROR"})), "OK")
            call(self.srv, t, "admin", "addStorage", {"storage": {"global_unique_name": "quiet_" + t,
                                                                  "dummy": {"root_path": "/d/"}}})
            self.assertEqual(code(call(self.srv, t, "admin", "updateLogger", {"log_level": "info",
                                                                             "module_name": "x"})), "OK")
            call(self.srv, t, "admin", "addStorage", {"storage": {"global_unique_name": "loud_" + t,
                                                                  "dummy": {"root_path": "/d/"}}})
            time.sleep(0.2)
            self.assertNotIn('name="quiet_%s"' % t, log())
            self.assertIn('name="loud_%s"' % t, log())
            self.assertEqual(code(call(self.srv, t, "admin", "updateLogger", {"log_level": "LOUD"})),
                             "INVALID_ARGUMENT")

    def test_accounts_guard_grpc_like_http(self):
        ok = lambda r: r["header"]["status"]["code"] == "OK"  # noqa: E731

        def good(srv, service, route, auth):
            # right credentials: only the PBKDF2 time budget (250 ms a second, slow under sanitizers) refuses them
            for _ in range(5):
                try:
                    return fx.grpc_call(srv, service, route, {}, metadata=(("authorization", auth),))
                except fx.grpc.RpcError as e:
                    if e.code() != fx.grpc.StatusCode.UNAUTHENTICATED:
                        raise
                    time.sleep(1.1)
            self.fail("%s refused with good credentials" % route)
        self.assertTrue(ok(call(self.srv, "http", "admin", "addAccount", {
            "user_name": "root", "password": "pw1", "role": "ROLE_ADMIN"})))
        root, bad = fx.basic("root", "pw1"), fx.basic("root", "nope")
        self.assertEqual(fx.http_call(self.srv, "admin", "addAccount", {
            "user_name": "eng", "password": "pw2", "role": "ROLE_USER"}, auth=root)[0], 200)
        eng = fx.basic("eng", "pw2")
        for service, route in (("meta", "getClusterInfo"), ("admin", "listStorage")):
            for metadata, want in ((None, "UNAUTHENTICATED"), ((("authorization", bad),), "UNAUTHENTICATED")):
                with self.assertRaises(fx.grpc.RpcError) as e:
                    fx.grpc_call(self.srv, service, route, {}, metadata=metadata)
                self.assertEqual(e.exception.code().name, want, (route, metadata))
                self.assertEqual(fx.http_call(self.srv, service, route, {}, auth=metadata and bad)[0], 401)
            self.assertEqual(good(self.srv, service, route, root).header.status.code, 1)
        self.assertEqual(good(self.srv, "meta", "getClusterInfo", eng).header.status.code, 1)
        with self.assertRaises(fx.grpc.RpcError) as e:  # ROLE_USER: the MetaService only
            fx.grpc_call(self.srv, "admin", "listStorage", {}, metadata=(("authorization", eng),))
        self.assertEqual(e.exception.code(), fx.grpc.StatusCode.PERMISSION_DENIED)
        self.assertEqual(fx.http_call(self.srv, "admin", "listStorage", {}, auth=eng)[0], 403)
        listed = fx.to_dict(fx.grpc_call(self.srv, "admin", "listAccount", {}, metadata=(("authorization", root),)))
        self.assertEqual(sorted((a["user_name"], a["role"]) for a in listed["accounts"]),
                         [("eng", "ROLE_USER"), ("root", "ROLE_ADMIN")])
        # the accounts travel in a config snapshot, with their hashes: the same passwords work on the copy
        snap = fx.grpc_call(self.srv, "admin", "genConfigSnapshot", {}, metadata=(("authorization", root),))
        self.assertNotIn("pw1", snap.config_snapshot)
        dst = copy_server()
        try:
            r = call(dst, "grpc", "admin", "loadConfigSnapshot", {"config_snapshot": snap.config_snapshot})
            self.assertEqual(code(r), "OK")
            with self.assertRaises(fx.grpc.RpcError):
                fx.grpc_call(dst, "admin", "listStorage", {})
            self.assertEqual(good(dst, "admin", "listStorage", root).header.status.code, 1)
            self.assertEqual(good(dst, "meta", "getClusterInfo", eng).header.status.code, 1)
        finally:
            self.assertEqual(dst.stop(), [])

    def test_nan_and_infinity_are_refused_naming_the_field(self):
        """JSON has no NaN nor infinity: the request used to become "used_percentage":-nan, which the handlers'
        reader refused (the gRPC fuzz target aborted on it). It is refused before the mapping, naming the field."""
        path = "instance_group.cache_config.reclaim_strategy.trigger_strategy.used_percentage"
        for v in ("NaN", "-Infinity"):
            grp = {"name": "g_nan", "cache_config": {"reclaim_strategy": {"trigger_strategy": {
                "used_percentage": v}}}}
            with self.assertRaises(fx.grpc.RpcError) as e:
                fx.grpc_call(self.srv, "admin", "createInstanceGroup", {"instance_group": grp})
            self.assertEqual(e.exception.code(), fx.grpc.StatusCode.INVALID_ARGUMENT, e.exception.details())
            self.assertIn(path, e.exception.details())
        self.assertNotEqual(code(call(self.srv, "grpc", "admin", "getInstanceGroup", {"name": "g_nan"})), "OK")
        grp["cache_config"]["reclaim_strategy"]["trigger_strategy"]["used_percentage"] = 0.5
        r = call(self.srv, "grpc", "admin", "createInstanceGroup", {"instance_group": grp})
        self.assertEqual(code(r), "OK", "a finite number is served")


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False, verbosity=2).result.wasSuccessful() else 1)
