"""mooncake.store on mmc (python/mooncake): every MooncakeDistributedStore method with good and bad input against
a real mmc-metaserver, with Mooncake's return conventions; two processes (tcp and shm) moving numpy arrays, torch
CPU tensors and DeepSeek-R1 layer objects through batch_put_from / batch_get_into and the multi-buffer calls; and
the call sequences of SGLang's MooncakeStore and of LMCache's Mooncake backend, written as our own code."""
import ctypes
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
import threading
import unittest
import urllib.request
import uuid

import numpy as np
import torch

import mmctest
import shapes
from mmc import _lib
from mooncake import store as mc
from mooncake.store import MooncakeDistributedStore, ReplicateConfig

PROTO = {"host_tcp": "tcp", "host_shm": "shm", "host_rdma": "rdma"}.get(mmctest.PROTOCOL, mmctest.PROTOCOL)
HAS_REGEX = _lib.has("mmc_remove_by_regex")
HAS_ALL = _lib.has("mmc_remove_all")


def master(meta):
    return "127.0.0.1:%d" % meta.port


def new_store(meta, lend=64 << 20, protocol=PROTO):
    s = MooncakeDistributedStore()
    rc = s.setup("localhost", "P2PHANDSHAKE", lend, 16 << 20, protocol, "", master(meta))
    assert rc == 0, (rc, s.last_error)
    return s


class Setup(mmctest.ServerTest):
    def test_positional(self):
        s = new_store(self.meta)
        self.assertEqual(s.put("setup/a", b"x"), 0)
        self.assertEqual(s.setup("localhost", "P2PHANDSHAKE", 1 << 20, 0, PROTO, "", master(self.meta)),
                         mc.INVALID_PARAMS)  # twice
        self.assertEqual(s.close(), 0)
        self.assertEqual(s.close(), 0)  # idempotent

    def test_calls_racing_close_return_codes(self):
        """A thread past the set-up check when another closes gets a code, never an AttributeError."""
        for _ in range(10):
            s = new_store(self.meta)
            s.put("setup/race", b"x")
            errors, stop = [], threading.Event()

            def calls():
                while not stop.is_set():
                    try:
                        for r in (s.is_exist("setup/race"), s.get_size("setup/race"), s.put("setup/race", b"y")):
                            if not isinstance(r, int):
                                errors.append(r)
                    except Exception as e:  # noqa: BLE001 -- any exception is the failure
                        errors.append(e)
                        return
            ts = [threading.Thread(target=calls) for _ in range(4)]
            for t in ts:
                t.start()
            time.sleep(0.01)
            self.assertEqual(s.close(), 0)
            time.sleep(0.01)
            stop.set()
            for t in ts:
                t.join()
            self.assertEqual(errors, [])
            self.assertEqual(s.is_exist("setup/race"), mc.INVALID_PARAMS)

    def test_lmcache_s_setup_dict_of_strings(self):
        """LMCache's connector hands setup() a dict whose every value is a string (its _build_setup_dict)."""
        cfg = {"local_hostname": "localhost", "metadata_server": "P2PHANDSHAKE", "global_segment_size": "16777216",
               "local_buffer_size": "0", "protocol": PROTO, "device_name": "",
               "master_server_address": master(self.meta), "tenant_id": "default",
               "enable_client_http_server": "true", "client_http_port": "0"}
        s = MooncakeDistributedStore()
        self.assertEqual(s.setup(cfg), 0, s.last_error)
        self.assertEqual(s.put("setup/strings", b"s"), 0)
        s.close()

    def test_bind_to_numa_node(self):
        """LMCache binds its thread to the GPU's node before setup: node 0 is this host's, node 4095 no host's."""
        before = os.sched_getaffinity(0)
        try:
            mc.bind_to_numa_node(0)
            self.assertTrue(os.sched_getaffinity(0) <= mc._node_cpus(0), "not bound to node 0's CPUs")
            mc.bind_to_numa_node(4095)  # logged and left alone
        finally:
            os.sched_setaffinity(0, before)

    def test_metadata_server_is_not_needed(self):
        for md in ("P2PHANDSHAKE", "http://127.0.0.1:1/metadata", "etcd://127.0.0.1:1", "redis://x:1"):
            s = MooncakeDistributedStore()
            self.assertEqual(s.setup("h", md, 8 << 20, 16 << 20, PROTO, "mlx5_0", master(self.meta)), 0, md)
            s.close()

    def test_dict_and_config_file(self):
        # vLLM's mooncake_config.json as its guide writes it ("mode", size strings); unknown keys are ignored
        cfg = {"mode": "embedded", "metadata_server": "P2PHANDSHAKE", "global_segment_size": "32MB",
               "local_buffer_size": "4GB", "protocol": PROTO, "device_name": "",
               "master_server_address": master(self.meta)}
        s = MooncakeDistributedStore()
        self.assertEqual(s.setup(cfg), 0, s.last_error)
        self.assertEqual(s.put("setup/dict", b"y"), 0)
        s.close()
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(cfg, f)
        try:
            os.environ["MOONCAKE_CONFIG_PATH"] = f.name
            s = MooncakeDistributedStore()
            self.assertEqual(s.setup(mc.load_config()), 0)
            self.assertEqual(s.put("setup/file", b"z"), 0)  # the first store's segment left with it
            self.assertEqual(s.get("setup/file"), b"z")
            s.close()
        finally:
            del os.environ["MOONCAKE_CONFIG_PATH"]
            os.unlink(f.name)

    def test_bad_and_unsupported(self):
        m = master(self.meta)
        s = MooncakeDistributedStore()
        self.assertEqual(s.setup("h", "P2PHANDSHAKE", 1 << 20, 0, PROTO, "", "no-port"), mc.INVALID_PARAMS)
        self.assertEqual(s.setup("h", "P2PHANDSHAKE", "lots", 0, PROTO, "", m), mc.INVALID_PARAMS)
        self.assertEqual(s.setup("h", "P2PHANDSHAKE", 1 << 20, 0, "carrier-pigeon", "", m), mc.INVALID_PARAMS)
        self.assertEqual(s.setup("h", "P2PHANDSHAKE", 1 << 20, 0, PROTO, "", m, tenant_id="t1"), mc.INVALID_PARAMS)
        self.assertIn("tenant", s.last_error)
        os.environ.pop("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", None)
        self.assertEqual(s.setup("h", "P2PHANDSHAKE", 1 << 20, 0, PROTO, "", m, enable_ssd_offload=True),
                         mc.INVALID_PARAMS, "SSD offload with no directory")
        self.assertEqual(s.setup_dummy(1 << 20, 1 << 20, "127.0.0.1:50052"), mc.INVALID_PARAMS)
        self.assertEqual(s.init_all("tcp", "", 1 << 20), mc.INVALID_PARAMS)
        with self.assertRaises(TypeError):
            s.setup("h", "P2PHANDSHAKE", 1 << 20, 0, 5, "", m)
        with self.assertRaises(TypeError):
            s.setup("h", "P2PHANDSHAKE", 1 << 20, 0, PROTO, "", m, bogus=1)
        # nobody listening: an RPC failure, a negative code
        self.assertLess(s.setup("h", "P2PHANDSHAKE", 1 << 20, 0, PROTO, "", "127.0.0.1:1"), 0)

    def test_calls_before_setup(self):
        s = MooncakeDistributedStore()
        self.assertEqual(s.put("k", b"x"), mc.INVALID_PARAMS)
        self.assertEqual(s.get("k"), b"")
        self.assertEqual(s.is_exist("k"), mc.INVALID_PARAMS)  # RealClient::isExist's code, not -1
        self.assertEqual(s.batch_is_exist(["a", "b"]), [mc.INVALID_PARAMS] * 2)
        self.assertEqual(s.batch_get_into(["a"], [1], [1]), [mc.INVALID_PARAMS])
        self.assertEqual(s.remove_all(), mc.INVALID_PARAMS)
        self.assertEqual(s.close(), 0)

    def test_host_allocator(self):
        a = mc.MooncakeHostMemAllocator()
        p = a.alloc(1 << 20)
        self.assertNotEqual(p, 0)
        self.assertEqual(p % 4096, 0)
        ctypes.memset(p, 7, 1 << 20)
        self.assertEqual(a.free(p), 0)
        self.assertEqual(a.free(p), -1)
        self.assertEqual(a.alloc(0), 0)


class Tenants(unittest.TestCase):
    """setup(tenant_id=X) connects as mmc tenant X with the secret $MMC_TENANT_TOKEN_FILE names: X's keys are its
    own, a tenant without a secret is refused, and the default tenant stays as it was."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="mmc-tenants-")
        for t in ("team-a", "team-b"):
            with open(os.open(os.path.join(cls.dir, t + ".token"), os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
                f.write("secret-of-%s-0123456789\n" % t)
        tenants = os.path.join(cls.dir, "tenants")
        with open(tenants, "w") as f:
            f.write("team-a team-a.token\nteam-b team-b.token\n")
        os.chmod(tenants, 0o600)
        cls.meta = mmctest.Metaserver("ock.mmc.meta.tenants_file=" + tenants)
        cls.pool = new_store(cls.meta)  # the default tenant lends the pool
        os.environ["MMC_TENANT_TOKEN_FILE"] = os.path.join(cls.dir, "{tenant}.token")

    @classmethod
    def tearDownClass(cls):
        del os.environ["MMC_TENANT_TOKEN_FILE"]
        cls.pool.close()
        cls.meta.stop()
        for name in os.listdir(cls.dir):
            os.unlink(os.path.join(cls.dir, name))
        os.rmdir(cls.dir)

    def tenant(self, name):
        s = MooncakeDistributedStore()
        rc = s.setup("h", "P2PHANDSHAKE", 0, 16 << 20, PROTO, "", master(self.meta), tenant_id=name)
        self.assertEqual(rc, 0, s.last_error)
        return s

    def test_keys_are_the_tenants(self):
        a, b = self.tenant("team-a"), self.tenant("team-b")
        try:
            self.assertEqual(a.put("k", b"from-a"), 0)
            self.assertEqual(b.put("k", b"from-b"), 0)
            self.assertEqual(self.pool.put("k", b"from-default"), 0)
            self.assertEqual((a.get("k"), b.get("k"), self.pool.get("k")), (b"from-a", b"from-b", b"from-default"))
            self.assertEqual(a.put("only-a", b"x"), 0)
            self.assertEqual(b.is_exist("only-a"), 0)
            self.assertEqual(self.pool.is_exist("only-a"), 0)
            self.assertEqual(b.get("only-a"), b"")
            self.assertEqual(b.batch_is_exist(["only-a", "k"]), [0, 1])
            self.assertEqual(b.remove("only-a"), mc.OBJECT_NOT_FOUND)
            self.assertEqual(b.remove_all(), 1)  # its own "k"
            self.assertEqual(a.get("only-a"), b"x")
        finally:
            a.close()
            b.close()

    def test_a_tenant_needs_its_secret(self):
        s = MooncakeDistributedStore()
        with self.assertLogs("mooncake.store", "WARNING") as logs:
            rc = s.setup("h", "P2PHANDSHAKE", 0, 16 << 20, PROTO, "", master(self.meta), tenant_id="team-c")
        self.assertEqual(rc, mc.INVALID_PARAMS)
        self.assertIn("MMC_TENANT_TOKEN_FILE", logs.output[0])
        # a secret the server does not know for that tenant: the server refuses it
        with open(os.open(os.path.join(self.dir, "team-c.token"), os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write("not-a-secret-of-this-server\n")
        try:
            self.assertLess(s.setup("h", "P2PHANDSHAKE", 0, 16 << 20, PROTO, "", master(self.meta),
                                    tenant_id="team-c"), 0)
        finally:
            os.unlink(os.path.join(self.dir, "team-c.token"))


class StoreTest(mmctest.ServerTest):
    """A class with one store (self.s) over its metaserver; self.key(name) is a key of the running test."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.s = new_store(cls.meta)

    @classmethod
    def tearDownClass(cls):
        cls.s.close()
        super().tearDownClass()

    def key(self, name):
        return "%s/%s/%s" % (type(self).__name__, self.id().rsplit(".", 1)[-1], name)


class Api(StoreTest):

    def test_batches_past_mmc_s_limit_go_in_chunks(self):
        """vLLM looks a whole prompt up in one batch_is_exist (blocks x TP ranks, x layers in its per-layer mode):
        past mmc's 16384 keys a batch goes in chunks, not refused whole (vLLM read that as no hit at all)."""
        n = mc.BATCH_MAX + 100
        s = new_store(self.meta, lend=160 << 20)
        try:
            ks = [self.key("%d" % i) for i in range(n)]
            src = np.arange(n, dtype=np.uint64)
            dst = np.zeros(n, dtype=np.uint64)
            base, out = src.ctypes.data, dst.ctypes.data
            self.assertEqual(s.batch_put_from(ks, [base + 8 * i for i in range(n)], [8] * n), [0] * n)
            self.assertEqual(s.batch_is_exist(ks + [self.key("absent")]), [1] * n + [0])
            self.assertEqual(s.batch_get_into(ks, [out + 8 * i for i in range(n)], [8] * n), [8] * n)
            self.assertTrue((src == dst).all(), "the chunks' bytes landed in the wrong buffers")
            got = s.batch_get_buffer(ks)
            self.assertEqual(bytes(got[-1]), src[-1:].tobytes())
            self.assertEqual(len(s.batch_get_replica_desc(ks)), n)
            self.assertEqual(s.batch_remove(ks), [0] * n)
            self.assertEqual(s.put_batch(ks, [b"x"] * n), 0)
            self.assertEqual(s.batch_is_exist(ks), [1] * n)
        finally:
            s.close()

    def test_put_get(self):
        k = self.key("a")
        self.assertEqual(self.s.put(k, b"hello"), 0)
        self.assertEqual(self.s.put(k, b"again"), 0)  # a duplicate put keeps the first value, answers 0
        self.assertEqual(self.s.get(k), b"hello")
        self.assertEqual(self.s.get(self.key("missing")), b"")
        self.assertEqual(self.s.put(self.key("np"), np.arange(10, dtype=np.uint8)), 0)
        self.assertEqual(self.s.get(self.key("np")), bytes(range(10)))
        with self.assertRaises(TypeError):
            self.s.put(5, b"x")

    def test_batch_bytes(self):
        ks = [self.key(str(i)) for i in range(3)]
        self.assertEqual(self.s.put_batch(ks, [b"a", b"bb", b"ccc"]), 0)
        self.assertEqual(self.s.get_batch(ks + [self.key("missing")]), [b"a", b"bb", b"ccc", b""])
        self.assertEqual(self.s.put_batch(ks, [b"a"]), mc.INVALID_PARAMS)
        self.assertEqual(self.s.put_batch([], []), 0)

    def test_replicate_config(self):
        rc = ReplicateConfig()
        self.assertEqual(rc.replica_num, 1)
        self.assertTrue(hasattr(ReplicateConfig, "group_ids"))  # how SGLang probes for group semantics
        self.assertEqual(rc.group_ids, [])
        rc.with_soft_pin = True
        rc.preferred_segment = "localhost"
        self.assertEqual(self.s.put(self.key("soft"), b"x", rc), 0)  # hints: stored, not pinned
        self.assertIn("replica_num: 1", str(rc))
        for attr, v in (("with_hard_pin", True), ("dfs_replica_num", 1), ("replica_num", 0), ("replica_num", 9)):
            bad = ReplicateConfig()
            setattr(bad, attr, v)
            self.assertEqual(self.s.put(self.key(attr), b"x", bad), mc.INVALID_PARAMS, attr)
            self.assertEqual(self.s.is_exist(self.key(attr)), 0)
            self.assertEqual(self.s.batch_put_from([self.key(attr)], [1], [1], bad), [mc.INVALID_PARAMS])
        with self.assertRaises(TypeError):
            self.s.put(self.key("t"), b"x", "cfg")

    def test_put_from_get_into(self):
        k = self.key("a")
        src = np.arange(4096, dtype=np.uint8)
        self.assertEqual(self.s.register_buffer(src.ctypes.data, src.nbytes), 0)
        self.assertEqual(self.s.put_from(k, src.ctypes.data, src.nbytes), 0)
        dst = np.zeros(8192, dtype=np.uint8)
        self.assertEqual(self.s.get_into(k, dst.ctypes.data, 4096), 4096)  # bytes read, not 0
        self.assertTrue(np.array_equal(dst[:4096], src))
        dst[:] = 0
        self.assertEqual(self.s.get_into(k, dst.ctypes.data, 8192), 4096)  # a larger buffer: a short read
        self.assertTrue(np.array_equal(dst[:4096], src))
        self.assertEqual(self.s.get_into(k, dst.ctypes.data, 100), mc.BUFFER_OVERFLOW)
        self.assertEqual(self.s.get_into(self.key("missing"), dst.ctypes.data, 10), mc.OBJECT_NOT_FOUND)
        self.assertEqual(self.s.put_from(self.key("z"), src.ctypes.data, 0), mc.INVALID_PARAMS)
        self.assertEqual(self.s.put_from(self.key("z"), 0, 10), mc.INVALID_PARAMS)
        self.assertEqual(self.s.unregister_buffer(src.ctypes.data), 0)
        self.assertEqual(self.s.unregister_buffer(src.ctypes.data), mc.INVALID_PARAMS)
        self.assertEqual(self.s.register_buffer(0, 10), mc.INVALID_PARAMS)
        with self.assertRaises(TypeError):
            self.s.get_into(k, "ptr", 10)

    def test_batch_put_from_get_into(self):
        ks = [self.key(str(i)) for i in range(4)]
        srcs = [torch.randint(0, 256, (1000 + i,), dtype=torch.uint8) for i in range(4)]
        self.assertEqual(self.s.batch_put_from(ks, [t.data_ptr() for t in srcs], [t.numel() for t in srcs]),
                         [0] * 4)
        outs = [torch.zeros_like(t) for t in srcs]
        res = self.s.batch_get_into(ks + [self.key("missing")], [t.data_ptr() for t in outs] + [outs[0].data_ptr()],
                                    [t.numel() for t in outs] + [10])
        self.assertEqual(res, [1000, 1001, 1002, 1003, mc.OBJECT_NOT_FOUND])
        for a, b in zip(srcs, outs):
            self.assertTrue(torch.equal(a, b))
        self.assertEqual(self.s.batch_put_from([], [], []), [])
        self.assertEqual(self.s.batch_get_into([], [], []), [])
        self.assertEqual(self.s.batch_get_into(ks, [1], [1]), [mc.INVALID_PARAMS] * 4)
        self.assertEqual(self.s.batch_put_from(ks[:1], [srcs[0].data_ptr()], [0]), [mc.INVALID_PARAMS])
        self.assertEqual(self.s.batch_put_from(ks, [srcs[0].data_ptr()], [1]), [mc.INVALID_PARAMS] * 4)
        with self.assertRaises(TypeError):
            self.s.batch_put_from(ks, "ptrs", [1] * 4)
        with self.assertRaises(TypeError):
            self.s.batch_get_into([1, 2], [1, 2], [1, 1])

    def test_multi_buffers(self):
        g = torch.Generator().manual_seed(3)
        k = torch.randint(0, 256, (2, shapes.DSR1_LAYERS, shapes.DSR1_K), generator=g, dtype=torch.uint8)
        v = torch.randint(0, 256, (2, shapes.DSR1_LAYERS, shapes.DSR1_V), generator=g, dtype=torch.uint8)
        ks = [self.key("0"), self.key("1")]
        ptrs, sizes = shapes.Data.dsr1_layers(k, v)
        self.assertEqual(self.s.batch_put_from_multi_buffers(ks, ptrs, sizes), [0, 0])
        k2, v2 = torch.zeros_like(k), torch.zeros_like(v)
        optrs, _ = shapes.Data.dsr1_layers(k2, v2)
        want = shapes.DSR1_LAYERS * (shapes.DSR1_K + shapes.DSR1_V)
        self.assertEqual(self.s.batch_get_into_multi_buffers(ks, optrs, sizes), [want, want])
        self.assertTrue(torch.equal(k, k2) and torch.equal(v, v2))
        self.assertEqual(self.s.get_size(ks[0]), want)
        self.assertEqual(self.s.batch_get_into_multi_buffers([self.key("missing")], optrs[:1], sizes[:1]),
                         [mc.OBJECT_NOT_FOUND])
        self.assertEqual(self.s.batch_put_from_multi_buffers(ks, ptrs[:1], sizes[:1]), [mc.INVALID_PARAMS] * 2)
        self.assertEqual(self.s.batch_put_from_multi_buffers([], [], []), [])

    def test_exist_size_remove(self):
        k = self.key("a")
        self.assertEqual(self.s.is_exist(k), 0)
        self.s.put(k, b"12345")
        self.assertEqual(self.s.is_exist(k), 1)
        self.assertEqual(self.s.batch_is_exist([k, self.key("b")]), [1, 0])
        self.assertEqual(self.s.batch_is_exist([]), [])
        self.assertEqual(self.s.is_exist("x" * 300), mc.INVALID_PARAMS)  # a key mmc refuses: its code
        self.assertEqual(self.s.get_size(k), 5)
        self.assertEqual(self.s.get_size(self.key("b")), mc.OBJECT_NOT_FOUND)
        self.assertEqual(self.s.remove(k), 0)
        self.assertEqual(self.s.remove(k), mc.OBJECT_NOT_FOUND)
        self.s.put(k, b"x")
        self.assertEqual(self.s.batch_remove([k, self.key("b")], force=True), [0, mc.OBJECT_NOT_FOUND])
        self.assertEqual(self.s.batch_remove([]), [])

    @unittest.skipUnless(HAS_REGEX, "libmmc has no mmc_remove_by_regex yet")
    def test_remove_by_regex(self):
        for i in range(5):
            self.s.put("rx/keep/%d" % i, b"x")
            self.s.put("rx/drop/%d" % i, b"x")
        self.assertEqual(self.s.remove_by_regex("^rx/drop/[0-3]$"), 4)
        self.assertEqual(self.s.batch_is_exist(["rx/drop/3", "rx/drop/4", "rx/keep/0"]), [0, 1, 1])
        self.assertEqual(self.s.remove_by_regex("drop"), 1)  # searched, not anchored
        self.assertEqual(self.s.remove_by_regex("nothing-matches-this"), 0)
        self.assertEqual(self.s.remove_by_regex("(unclosed"), mc.INVALID_PARAMS)
        with self.assertRaises(TypeError):
            self.s.remove_by_regex(None)

    @unittest.skipIf(HAS_REGEX, "libmmc has mmc_remove_by_regex")
    def test_remove_by_regex_missing(self):
        self.assertEqual(self.s.remove_by_regex("x"), mc.INTERNAL_ERROR)

    def test_tensors(self):
        t = torch.randn(4, 8).to(torch.bfloat16)
        self.assertEqual(self.s.put_tensor(self.key("t"), t), 0)
        self.assertTrue(torch.equal(self.s.get_tensor(self.key("t")), t))
        self.assertIsNone(self.s.get_tensor(self.key("missing")))
        self.assertEqual(self.s.put_tensor(self.key("bad"), np.zeros(3)), mc.INVALID_PARAMS)
        # a 0-dimensional tensor (a scalar) and a negative view are stored by value
        self.assertEqual(self.s.put_tensor(self.key("scalar"), torch.tensor(3.5)), 0)
        self.assertTrue(torch.equal(self.s.get_tensor(self.key("scalar")), torch.tensor(3.5)))
        neg = torch.arange(4.0)._neg_view()
        self.assertEqual(self.s.put_tensor(self.key("neg"), neg), 0)
        self.assertTrue(torch.equal(self.s.get_tensor(self.key("neg")), -torch.arange(4.0)))
        # an array of Python objects has no bytes of its own: its pointers are not stored as its value
        with self.assertRaises(TypeError):  # as for any value that is not bytes-like
            self.s.put(self.key("objects"), np.array([b"hello", b"world"], dtype=object))
        rec = np.zeros(2, dtype=[("Offset", "<i4")])  # a field named with an O is no object
        self.assertEqual(self.s.put(self.key("rec"), memoryview(rec)), 0)
        ts = [torch.arange(6, dtype=torch.int32), torch.ones(2, 2, dtype=torch.float16)]
        ks = [self.key("b0"), self.key("b1")]
        self.assertEqual(self.s.batch_put_tensor(ks, ts), [0, 0])
        got = self.s.batch_get_tensor(ks)
        self.assertTrue(all(torch.equal(a, b) for a, b in zip(ts, got)))
        buf = torch.zeros(1 << 12, dtype=torch.uint8)
        g = self.s.get_tensor_into(ks[0], buf.data_ptr(), buf.numel())
        self.assertTrue(torch.equal(g, ts[0]))
        self.assertEqual(self.s.put_tensor_with_tp(self.key("tp"), torch.arange(8.0), tp_size=2), 0)
        self.assertTrue(torch.equal(self.s.get_tensor_with_tp(self.key("tp"), tp_rank=1, tp_size=2),
                                    torch.arange(4.0, 8.0)))


class Surface(StoreTest):
    """The calls store_py.cpp has beyond the first port: buffers, parts, replicas, force, upserts, tensors in
    Mooncake's header, the client HTTP server, tenants, and what is refused with a log line."""

    def test_buffer_handles(self):
        k = self.key("a")
        self.assertEqual(self.s.put(k, b"0123456789"), 0)
        h = self.s.get_buffer(k)
        self.assertIsInstance(h, mc.BufferHandle)
        self.assertEqual((h.size(), len(h), bytes(h)), (10, 10, b"0123456789"))
        self.assertEqual(ctypes.string_at(h.ptr(), h.size()), b"0123456789")  # ptr() is the bytes' address
        self.assertEqual(bytes(memoryview(h)[2:4]), b"23")
        self.assertEqual(torch.frombuffer(h, dtype=torch.uint8, offset=8, count=2).tolist(), [56, 57])
        self.assertIsNone(self.s.get_buffer(self.key("missing")))
        got = self.s.batch_get_buffer([k, self.key("missing"), k])
        self.assertEqual([bytes(g) if g is not None else None for g in got], [b"0123456789", None, b"0123456789"])
        self.assertEqual(self.s.batch_get_buffer([]), [])

    def test_get_into_ranges(self):
        k = self.key("ranges")
        self.assertEqual(self.s.put(k, bytes(range(64))), 0)
        dst = np.zeros(32, np.uint8)
        got = self.s.get_into_ranges([dst.ctypes.data], [[k, self.key("missing")]], [[[0, 8], [16]]],
                                     [[[60, 10], [0]]], [[[4, 6], [4]]])
        self.assertEqual(got, [[[4, 6], [mc.OBJECT_NOT_FOUND]]])
        self.assertEqual(dst[:4].tolist(), [60, 61, 62, 63])
        self.assertEqual(dst[8:14].tolist(), list(range(10, 16)))
        self.assertEqual(self.s.get_into_ranges([dst.ctypes.data], [[k]], [[[0]]], [[[62]]], [[[4]]]),
                         [[[mc.INVALID_PARAMS]]], "a range past the object's end")
        self.assertEqual(self.s.get_into_ranges([], [], [], [], []), [])
        self.assertEqual(self.s.get_into_ranges([dst.ctypes.data], [[k, k]], [[[0], [4]]], [[[0]]], [[[4], [4]]]),
                         [[[mc.INVALID_PARAMS], [mc.INVALID_PARAMS]]], "lists that do not pair up: each key says so")
        self.assertEqual(self.s.get_into_ranges([dst.ctypes.data], [[k]], [[[0, 4]]], [[[0]]], [[[4, 4]]]),
                         [[[mc.INVALID_PARAMS, mc.INVALID_PARAMS]]])

    def test_put_parts(self):
        k = self.key("a")
        parts = [b"meta", bytearray(b"-"), memoryview(b""), np.arange(5, dtype=np.uint8), torch.ones(3).numpy()]
        self.assertEqual(self.s.put_parts(k, *parts, config=ReplicateConfig()), 0)
        self.assertEqual(self.s.get(k), b"".join(bytes(memoryview(p).cast("B")) for p in parts))
        many = [bytes([i % 256]) for i in range(300)]  # more parts than one gathered put takes
        self.assertEqual(self.s.put_parts(self.key("many"), *many), 0)
        self.assertEqual(self.s.get(self.key("many")), b"".join(many))
        self.assertEqual(self.s.put_parts(self.key("none")), mc.INVALID_PARAMS)
        self.assertEqual(self.s.put_parts(self.key("empty"), b""), mc.INVALID_PARAMS)
        with self.assertRaises(TypeError):
            self.s.put_parts(self.key("bad"), "text")
        meta, data = np.frombuffer(b"HDR:", dtype=np.uint8), np.arange(8, dtype=np.uint8)
        self.assertEqual(self.s.put_from_with_metadata(self.key("m"), data.ctypes.data, meta.ctypes.data, 8, 4), 0)
        self.assertEqual(self.s.get(self.key("m")), b"HDR:" + bytes(range(8)))

    def test_replica_desc(self):
        k = self.key("a")
        self.assertEqual(self.s.put(k, b"x" * 100), 0)
        (r,) = self.s.get_replica_desc(k)
        self.assertTrue(r.is_memory_replica())
        self.assertFalse(r.is_disk_replica())
        self.assertEqual(r.status, mc.ReplicaStatus.COMPLETE)
        d = r.get_memory_descriptor().buffer_descriptor
        self.assertEqual(d.size, 100)
        self.assertTrue(d.transport_endpoint.startswith("rank:"))
        with self.assertRaises(RuntimeError):
            r.get_disk_descriptor()
        self.assertEqual(self.s.get_replica_desc(self.key("missing")), [])
        got = self.s.batch_get_replica_desc([k, self.key("missing")])
        self.assertEqual(sorted(got), sorted([k, self.key("missing")]))
        self.assertEqual((len(got[k]), got[self.key("missing")]), (1, []))

    def test_remove_force(self):
        ks = [self.key(str(i)) for i in range(4)]
        self.assertEqual(self.s.put_batch(ks, [b"x"] * 4), 0)
        h = self.s.get_buffer(ks[0])
        self.assertEqual(self.s.remove(ks[0], force=True), 0)
        self.assertEqual(bytes(h), b"x")  # a handle keeps its bytes
        self.assertEqual(self.s.remove(ks[0], force=False), mc.OBJECT_NOT_FOUND)
        self.assertEqual(self.s.remove(key=ks[1]), 0)
        self.assertEqual(self.s.batch_remove(ks[2:3], force=True), [0])
        if HAS_REGEX:
            self.assertEqual(self.s.remove_by_regex("^%s$" % ks[3], force=True), 1)
        with self.assertRaises(TypeError):
            self.s.remove(ks[0], force="yes")

    def test_upsert(self):
        k = self.key("a")
        self.assertEqual(self.s.put(k, b"first"), 0)
        self.assertEqual(self.s.put(k, b"second"), 0)
        self.assertEqual(self.s.get(k), b"first")  # a put keeps what is there
        self.assertEqual(self.s.upsert(k, b"second"), 0)
        self.assertEqual(self.s.get(k), b"second")
        self.assertEqual(self.s.upsert_parts(k, b"thi", b"rd"), 0)
        self.assertEqual(self.s.get(k), b"third")
        src = np.frombuffer(b"fourth", dtype=np.uint8)
        self.assertEqual(self.s.upsert_from(k, src.ctypes.data, src.nbytes), 0)
        self.assertEqual(self.s.get(k), b"fourth")
        ks = [k, self.key("new")]
        self.assertEqual(self.s.upsert_batch(ks, [b"5a", b"5b"]), 0)
        self.assertEqual(self.s.get_batch(ks), [b"5a", b"5b"])
        self.assertEqual(self.s.batch_upsert_from(ks, [src.ctypes.data] * 2, [3, 2]), [0, 0])
        self.assertEqual(self.s.get_batch(ks), [b"fou", b"fo"])
        self.assertEqual(self.s.upsert_tensor(k, torch.arange(3)), 0)
        self.assertTrue(torch.equal(self.s.get_tensor(k), torch.arange(3)))

    def test_a_refused_upsert_keeps_the_value(self):
        """An upsert removes, then puts: one whose put would be refused (its config, its lengths, an empty or NULL
        buffer, no tensor) is refused before anything is removed; it used to lose the stored value."""
        ks = [self.key("a"), self.key("b")]
        self.assertEqual(self.s.upsert_batch(ks, [b"A", b"B"]), 0)
        hard = ReplicateConfig()
        hard.with_hard_pin = True
        self.assertEqual(self.s.upsert(ks[0], b"w", hard), mc.INVALID_PARAMS)
        self.assertEqual(self.s.upsert(ks[0], b""), mc.INVALID_PARAMS)
        self.assertEqual(self.s.upsert_from(ks[0], 0, 1), mc.INVALID_PARAMS)
        self.assertEqual(self.s.upsert_parts(ks[0], b""), mc.INVALID_PARAMS)
        self.assertEqual(self.s.upsert_batch(ks, [b"1"]), mc.INVALID_PARAMS)
        with self.assertRaises(TypeError):
            self.s.upsert(ks[0], 12345)
        src = np.frombuffer(b"xy", dtype=np.uint8)
        self.assertEqual(self.s.batch_upsert_from(ks, [src.ctypes.data, 0], [2, 2]), [0, mc.INVALID_PARAMS],
                         "a NULL buffer fails its key alone")
        self.assertEqual(self.s.batch_upsert_tensor(ks, [torch.arange(2)]), [mc.INVALID_PARAMS] * 2)
        self.assertEqual(self.s.batch_upsert_tensor(ks, [torch.arange(2), "not a tensor"]), [0, mc.INVALID_PARAMS])
        self.assertTrue(torch.equal(self.s.get_tensor(ks[0]), torch.arange(2)))
        self.assertEqual(self.s.get(ks[1]), b"B", "every refusal kept the value")

    def test_a_bad_key_fails_alone(self):
        """libmmc refuses a whole call over one NULL buffer or empty size; Mooncake fails that key alone."""
        ks = [self.key("good"), self.key("null"), self.key("empty")]
        src = np.arange(8, dtype=np.uint8)
        p = src.ctypes.data
        self.assertEqual(self.s.batch_put_from(ks, [p, 0, p], [8, 8, 0]), [0, mc.INVALID_PARAMS, mc.INVALID_PARAMS])
        self.assertEqual(self.s.batch_put_from_multi_buffers(ks, [[p], [p, 0], []], [[8], [4, 4], []]),
                         [0, mc.INVALID_PARAMS, mc.INVALID_PARAMS])
        dst = np.zeros(8, dtype=np.uint8)
        self.assertEqual(self.s.batch_get_into_multi_buffers(ks[:2], [[dst.ctypes.data], [0]], [[8], [8]]),
                         [8, mc.INVALID_PARAMS])
        self.assertEqual(dst.tolist(), list(range(8)))

    def test_registering_an_address_again(self):
        """Mooncake unregisters by address: a second registration of one address replaces the first (memory freed
        and allocated again there), so that one unregister_buffer undoes it all."""
        buf = np.zeros(8192, dtype=np.uint8)
        p = buf.ctypes.data
        self.assertEqual(self.s.register_buffer(p, 4096), 0)
        self.assertEqual(self.s.register_buffer(p, 4096), 0)
        self.assertEqual(self.s.register_buffer(p, 8192), 0)
        self.assertEqual(self.s.unregister_buffer(p), 0)
        self.assertNotEqual(_lib.lib.mmc_unregister_buffer(self.s._d._s, p, 4096), 0, "the first is gone")
        self.assertNotEqual(_lib.lib.mmc_unregister_buffer(self.s._d._s, p, 8192), 0, "and the second")

    def test_group_ids(self):
        ks = [self.key("k"), self.key("v")]
        src = np.arange(64, dtype=np.uint8)
        rc = ReplicateConfig()
        rc.group_ids = ["sglang-hicache:page0"] * 2
        self.assertEqual(self.s.batch_put_from(ks, [src.ctypes.data] * 2, [64, 32], rc), [0, 0])
        self.assertEqual(self.s.batch_put_from_multi_buffers(ks, [[src.ctypes.data]] * 2, [[64]] * 2, rc), [0, 0])
        n = mc.BATCH_MAX + 1  # past one libmmc batch: the ids are checked against the whole batch, once
        big = new_store(self.meta, lend=80 << 20)
        try:
            rc.group_ids = ["g"] * n
            self.assertEqual(big.batch_put_from([self.key("g%d" % i) for i in range(n)], [src.ctypes.data] * n,
                                                [1] * n, rc), [0] * n)
        finally:
            big.close()
        rc.group_ids = ["one id for two keys"]
        self.assertEqual(self.s.batch_put_from([self.key("x"), self.key("y")], [src.ctypes.data] * 2, [1, 1], rc),
                         [mc.INVALID_PARAMS] * 2)

    def test_tensor_header(self):
        """Mooncake's TensorMetadata version 1: a 304-byte header (magic, version, sizes, shapes), then the bytes."""
        t = torch.arange(12, dtype=torch.int32).reshape(3, 4)
        self.assertEqual(self.s.put_tensor(self.key("t"), t), 0)
        blob = self.s.get(self.key("t"))
        self.assertEqual(len(blob), 304 + 48)
        magic, ver, hsize, dtype, ndim, kind, flags, off, nbytes = struct.unpack_from("<IHHiiIIQQ", blob)
        self.assertEqual((magic, ver, hsize, dtype, ndim, kind, off, nbytes), (0x4D4F4F4E, 1, 304, 6, 2, 0, 304, 48))
        self.assertEqual(struct.unpack_from("<8q", blob, 40), (3, 4, -1, -1, -1, -1, -1, -1))  # global shape
        self.assertEqual(struct.unpack_from("<8q", blob, 104), (3, 4, -1, -1, -1, -1, -1, -1))  # local shape
        self.assertEqual(struct.unpack_from("<I", blob, 168), (0,))  # no axes
        self.assertEqual(blob[304:], t.numpy().tobytes())
        # a shard: Mooncake's ranges (5 rows over 2 ranks: 2 and 3), its TP axis, the whole tensor's shape
        w = torch.arange(10.0).reshape(5, 2)
        self.assertEqual(self.s.put_tensor_with_tp(self.key("w"), w, tp_size=2), 0)
        self.assertTrue(torch.equal(self.s.get_tensor_with_tp(self.key("w"), tp_rank=1, tp_size=2), w[2:]))
        shard = self.s.get(self.key("w") + "_tp_1")
        self.assertEqual(struct.unpack_from("<I", shard, 16), (1,))  # layout_kind SHARD
        self.assertEqual(struct.unpack_from("<2q", shard, 40), (5, 2))
        self.assertEqual(struct.unpack_from("<2q", shard, 104), (3, 2))
        self.assertEqual(struct.unpack_from("<II6i", shard, 168)[:6], (1, 0, 1, 0, 1, 2))  # TP axis, rank 1 of 2
        # into a buffer: the tensor shares it; the buffer, header included, puts back as it is
        buf = torch.zeros(1024, dtype=torch.uint8)
        got = self.s.get_tensor_into(self.key("t"), buf.data_ptr(), buf.numel())
        self.assertTrue(torch.equal(got, t))
        buf[304:308] = torch.tensor([7, 0, 0, 0], dtype=torch.uint8)
        self.assertEqual(got[0, 0].item(), 7)
        self.assertEqual(self.s.put_tensor_from(self.key("from"), buf.data_ptr(), 352), 0)
        self.assertEqual(self.s.get_tensor(self.key("from"))[0].tolist(), [7, 1, 2, 3])
        self.assertEqual(self.s.put_tensor_from(self.key("junk"), buf.data_ptr() + 1, 100), mc.INVALID_PARAMS)
        # the earlier 40-byte layout still reads
        legacy = struct.pack("<ii4q", 0, 1, 3, -1, -1, -1) + np.arange(3, dtype=np.float32).tobytes()
        self.assertEqual(self.s.put(self.key("legacy"), legacy), 0)
        self.assertEqual(self.s.get_tensor(self.key("legacy")).tolist(), [0.0, 1.0, 2.0])
        self.assertEqual(self.s.put_tensor(self.key("empty"), torch.zeros(0)), mc.INVALID_PARAMS)

    def test_hostname_and_health(self):
        s = MooncakeDistributedStore()
        self.assertEqual(s.health_check(), mc.HC_NOT_INITIALIZED)
        self.assertEqual(s.setup("node-7:17812", "P2PHANDSHAKE", 0, 16 << 20, PROTO, "", master(self.meta)), 0)
        self.assertEqual(s.get_hostname(), "node-7:17812")  # the segment name, as Mooncake answers
        self.assertEqual(s.health_check(), mc.HC_OK)
        s.close()
        self.assertEqual(s.health_check(), mc.HC_NOT_INITIALIZED)

    def test_client_http_server(self):
        s = MooncakeDistributedStore()
        rc = s.setup("h", "P2PHANDSHAKE", 0, 16 << 20, PROTO, "", master(self.meta), enable_client_http_server=True,
                     client_http_port=0)
        self.assertEqual(rc, 0)
        try:
            s.put(self.key("a"), b"abc")
            s.batch_is_exist([self.key("a"), self.key("b")])
            base = "http://127.0.0.1:%d" % s._http.port
            text = urllib.request.urlopen(base + "/metrics", timeout=10).read().decode()
            self.assertIn('mooncake_client_keys_total{op="put"} 1', text)
            self.assertIn('mooncake_client_keys_total{op="exist"} 2', text)
            self.assertIn('mooncake_client_bytes_total{op="put"} 3', text)
            self.assertEqual(urllib.request.urlopen(base + "/health", timeout=10).status, 200)
            self.assertIn("put: keys=1", urllib.request.urlopen(base + "/metrics/summary", timeout=10).read().decode())
        finally:
            s.close()
        # a port already taken: the store still starts, without its server (logged)
        busy = socket.socket()
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        try:
            with self.assertLogs("mooncake.store", "WARNING") as logs:
                rc = s.setup("h", "P2PHANDSHAKE", 0, 16 << 20, PROTO, "", master(self.meta),
                             enable_client_http_server=True, client_http_port=busy.getsockname()[1])
            self.assertEqual(rc, 0)
            self.assertIn("enable_client_http_server", logs.output[0])
            self.assertEqual(s.put(self.key("b"), b"x"), 0)
        finally:
            s.close()
            busy.close()

    def test_tenants_and_refusals(self):
        m = master(self.meta)
        for tenant in (None, "", "default"):
            s = MooncakeDistributedStore()
            self.assertEqual(s.setup("h", "P2PHANDSHAKE", 0, 16 << 20, PROTO, "", m, tenant_id=tenant), 0, tenant)
            s.close()
        s = MooncakeDistributedStore()
        with self.assertLogs("mooncake.store", "WARNING") as logs:
            self.assertEqual(s.setup("h", "P2PHANDSHAKE", 0, 16 << 20, PROTO, "", m, tenant_id="team-a"),
                             mc.INVALID_PARAMS)
        self.assertIn("tenant_id", logs.output[0])
        for attr, v in (("with_hard_pin", True), ("dfs_replica_num", 1), ("nof_replica_num", 1)):
            rc = ReplicateConfig()
            setattr(rc, attr, v)
            with self.assertLogs("mooncake.store", "WARNING") as logs:
                self.assertEqual(self.s.put(self.key(attr), b"x", rc), mc.INVALID_PARAMS)
            self.assertIn(attr, logs.output[0])
        with self.assertLogs("mooncake.store", "WARNING") as logs:
            self.assertEqual(s.setup_dummy(1 << 20, 1 << 20, "127.0.0.1:50052"), mc.INVALID_PARAMS)
        self.assertIn("setup_dummy", logs.output[0])
        self.assertEqual(self.s.create_copy_task(self.key("a"), ["seg"])[1], mc.INVALID_PARAMS)


@unittest.skipUnless(HAS_ALL, "libmmc has no mmc_remove_all yet")
class RemoveAll(mmctest.ServerTest):
    def test_remove_all(self):
        s = new_store(self.meta)
        try:
            self.assertEqual(s.put_batch(["all/%d" % i for i in range(7)], [b"x"] * 7), 0)
            self.assertEqual(s.remove_all(), 7)
            self.assertEqual(s.batch_is_exist(["all/0", "all/6"]), [0, 0])
            self.assertEqual(s.remove_all(), 0)
        finally:
            s.close()


class TwoProcesses:
    """A writer process lends a segment and puts; this process lends nothing and gets byte counts, byte-exact."""
    protocol = None

    @classmethod
    def setUpClass(cls):
        cls.meta = mmctest.Metaserver()
        cls.writer = subprocess.Popen([sys.executable, os.path.join(mmctest.HERE, "mooncake_peer.py"),
                                       master(cls.meta), cls.protocol], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = cls.writer.stdout.readline()
        if line.strip() != b"ready":
            cls.writer.kill()
            cls.meta.stop()
            raise RuntimeError("the writer process failed: %r" % line)
        cls.s = new_store(cls.meta, lend=0, protocol=cls.protocol)
        cls.data = shapes.Data()

    @classmethod
    def tearDownClass(cls):
        cls.s.close()
        cls.writer.stdin.close()
        cls.writer.wait(30)
        cls.meta.stop()

    def test_numpy(self):
        outs = [np.zeros_like(a) for a in self.data.np_arrays]
        for o in outs:
            self.assertEqual(self.s.register_buffer(o.ctypes.data, o.nbytes), 0)
        res = self.s.batch_get_into(self.data.np_keys, [o.ctypes.data for o in outs], [o.nbytes for o in outs])
        self.assertEqual(res, [a.nbytes for a in self.data.np_arrays])
        for a, o in zip(self.data.np_arrays, outs):
            self.assertTrue(np.array_equal(a, o))
            self.assertEqual(self.s.unregister_buffer(o.ctypes.data), 0)

    def test_torch(self):
        outs = [torch.empty_like(t) for t in self.data.tensors]
        sizes = [t.numel() * t.element_size() for t in outs]
        res = self.s.batch_get_into(self.data.torch_keys, [t.data_ptr() for t in outs], sizes)
        self.assertEqual(res, sizes)
        for want, got in zip(self.data.tensors, outs):
            self.assertTrue(torch.equal(want, got))

    def test_dsr1_multi_buffers(self):
        k, v = torch.zeros_like(self.data.dsr1_k), torch.zeros_like(self.data.dsr1_v)
        for t in (k, v):
            self.assertEqual(self.s.register_buffer(t.data_ptr(), t.numel()), 0)
        ptrs, sizes = shapes.Data.dsr1_layers(k, v)
        want = shapes.DSR1_LAYERS * (shapes.DSR1_K + shapes.DSR1_V)
        self.assertEqual(self.s.batch_get_into_multi_buffers(self.data.dsr1_keys, ptrs, sizes),
                         [want] * shapes.DSR1_KEYS)
        self.assertTrue(torch.equal(k, self.data.dsr1_k) and torch.equal(v, self.data.dsr1_v))


class TwoProcessesTcp(TwoProcesses, unittest.TestCase):
    protocol = "tcp"


class TwoProcessesShm(TwoProcesses, unittest.TestCase):
    protocol = "shm"


class InstallOption(unittest.TestCase):
    """meson installs python/mooncake only with -Dmooncake=true (it shadows a real Mooncake), all of its files."""

    def test_only_when_asked(self):
        build = os.environ.get("MMC_BUILD_DIR") or os.path.join(mmctest.ROOT, "build")

        def introspect(what):
            return json.loads(subprocess.run(["meson", "introspect", build, what], check=True, capture_output=True,
                                             text=True).stdout)
        opts = {o["name"]: o["value"] for o in introspect("--buildoptions")}
        self.assertIn("mooncake", opts)
        got = sorted(os.path.basename(k) for k in introspect("--installed") if "/python/mooncake/" in k)
        want = sorted(f for f in os.listdir(os.path.join(mmctest.ROOT, "python", "mooncake")) if f.endswith(".py"))
        self.assertEqual(got, want if opts["mooncake"] else [])


class EngineSequences(mmctest.ServerTest):
    """SGLang's MooncakeStore and LMCache's Mooncake backend, their calls in their order (our own code)."""

    def test_sglang_mooncake_store(self):
        # config as SGLANG_HICACHE_MOONCAKE_CONFIG_PATH's JSON, read the way MooncakeStoreConfig.from_file does
        cfg = {"local_hostname": "localhost", "metadata_server": "P2PHANDSHAKE", "global_segment_size": "1gb",
               "protocol": PROTO, "device_name": "", "master_server_address": master(self.meta)}
        gss = cfg["global_segment_size"]
        gss = int(gss[:-2]) << 30 if gss.endswith("gb") else int(gss)
        tp_size, tp_rank = 8, 0
        store = MooncakeDistributedStore()
        rc = store.setup(cfg["local_hostname"], cfg["metadata_server"], gss // tp_size, 16 << 20, cfg["protocol"],
                         cfg["device_name"], cfg["master_server_address"], None, ssd_offload_path="")
        self.assertEqual(rc, 0, store.last_error)
        # warmup
        wk, wv = "sglang_mooncake_store_warmup_key" + uuid.uuid4().hex, bytes(4 * 1024)
        self.assertEqual(store.put(wk, wv), 0)
        self.assertEqual(store.is_exist(wk), 1)
        self.assertEqual(store.get(wk), wv)
        # register_mem_pool_host: the host KV pool (MHA: [2, layers, tokens, heads, dim]), one register_buffer
        layers, page, heads, dim = 4, 64, 2, 64
        kv = torch.randint(-100, 100, (2, layers, 8 * page, heads, dim), dtype=torch.int16).to(torch.bfloat16)
        self.assertEqual(store.register_buffer(kv.data_ptr(), kv.numel() * kv.element_size()), 0)
        # page-first? no: layer-first pool, one object per page per K/V spans layers -> multi buffers
        hashes = ["%064x" % (0xabc0 + i) for i in range(4)]
        keys, ptrs, sizes = [], [], []
        per_layer = page * heads * dim * kv.element_size()
        for i, h in enumerate(hashes):
            for kvi, sfx in ((0, "k"), (1, "v")):
                keys.append("%s_%d_%s" % (h, tp_rank, sfx))
                ptrs.append([kv[kvi, l, i * page].data_ptr() for l in range(layers)])
                sizes.append([per_layer] * layers)
        # batch_set_v1: batch_is_exist, then put the missing ones
        exist = store.batch_is_exist(keys)
        self.assertEqual(exist, [0] * len(keys))
        missing = [i for i, e in enumerate(exist) if e != 1]
        put = store.batch_put_from_multi_buffers([keys[i] for i in missing], [ptrs[i] for i in missing],
                                                 [sizes[i] for i in missing])
        self.assertEqual(put, [0] * len(keys))
        # batch_exists: the leading pages whose K and V both exist
        exist = store.batch_is_exist(keys + ["%064x_%d_k" % (0xdead, tp_rank)])
        self.assertEqual(exist, [1] * len(keys) + [0])
        # batch_get_v1 into other host pages: each result must equal the expected size
        out = torch.zeros_like(kv)
        optrs = [[out[0 if k.endswith("_k") else 1, l, (j // 2) * page].data_ptr() for l in range(layers)]
                 for j, k in enumerate(keys)]
        got = store.batch_get_into_multi_buffers(keys, optrs, sizes)
        self.assertEqual(got, [per_layer * layers] * len(keys))
        self.assertTrue(torch.equal(out[:, :, :4 * page], kv[:, :, :4 * page]))
        # a page-first pool: one contiguous object per page, batch_put_from / batch_get_into
        flat = kv.reshape(-1).view(torch.uint8)
        pkeys = ["%s__k" % h for h in hashes]  # MLA key format: "{hash}_{mla_suffix}_k", mla_suffix ""
        psize = 64 << 10
        pptrs = [flat[i * psize:].data_ptr() for i in range(len(pkeys))]
        self.assertEqual(store.batch_put_from(pkeys, pptrs, [psize] * len(pkeys)), [0] * len(pkeys))
        dst = torch.zeros(len(pkeys) * psize, dtype=torch.uint8)
        self.assertEqual(store.register_buffer(dst.data_ptr(), dst.numel()), 0)
        res = store.batch_get_into(pkeys, [dst[i * psize:].data_ptr() for i in range(len(pkeys))],
                                   [psize] * len(pkeys))
        self.assertEqual(res, [psize] * len(pkeys))
        self.assertTrue(torch.equal(dst, flat[:len(pkeys) * psize]))
        # clear(): remove_all must not fail where libmmc can do it
        if HAS_ALL:
            self.assertGreaterEqual(store.remove_all(), len(keys) + len(pkeys))
        self.assertEqual(store.close(), 0)

    def test_lmcache_backend(self):
        # LMCache's MooncakestoreConnector: setup from its mooncake config (JSON at MOONCAKE_CONFIG_PATH)
        cfg = {"local_hostname": "localhost", "metadata_server": "http://127.0.0.1:8080/metadata",
               "global_segment_size": 64 << 20, "local_buffer_size": 16 << 20, "protocol": PROTO,
               "device_name": "", "master_server_address": master(self.meta)}
        store = MooncakeDistributedStore()
        self.assertEqual(store.setup(cfg["local_hostname"], cfg["metadata_server"], cfg["global_segment_size"],
                                     cfg["local_buffer_size"], cfg["protocol"], cfg["device_name"],
                                     cfg["master_server_address"]), 0)
        # a registered staging buffer of chunk-sized slots
        chunk = 256 << 10
        buf = torch.randint(0, 256, (4 * chunk,), dtype=torch.uint8)
        self.assertEqual(store.register_buffer(buf.data_ptr(), buf.numel()), 0)
        keys = ["vllm@model@1@0@%016x" % (0x100 + i) for i in range(4)]
        rc = ReplicateConfig()
        rc.replica_num = 1
        # put: metadata header object + payload via put_from, as the backend stores (meta bytes, KV bytes)
        for i, k in enumerate(keys):
            self.assertEqual(store.put(k + ".meta", b"shape=256K;dtype=uint8"), 0)
            self.assertEqual(store.put_from(k, buf[i * chunk:].data_ptr(), chunk, rc), 0)
        # contains: is_exist / batch_is_exist
        self.assertEqual(store.is_exist(keys[0]), 1)
        self.assertEqual(store.batch_is_exist(keys + ["vllm@model@1@0@none"]), [1, 1, 1, 1, 0])
        # get: get_size then get_into a slot, the returned byte count checked
        out = torch.zeros_like(buf)
        self.assertEqual(store.register_buffer(out.data_ptr(), out.numel()), 0)
        for i, k in enumerate(keys):
            self.assertEqual(store.get(k + ".meta"), b"shape=256K;dtype=uint8")
            n = store.get_size(k)
            self.assertEqual(n, chunk)
            self.assertEqual(store.get_into(k, out[i * chunk:].data_ptr(), n), chunk)
        self.assertTrue(torch.equal(out, buf))
        # batch_get_into for the batched path
        out.zero_()
        self.assertEqual(store.batch_get_into(keys, [out[i * chunk:].data_ptr() for i in range(4)], [chunk] * 4),
                         [chunk] * 4)
        self.assertTrue(torch.equal(out, buf))
        # remove, then close
        self.assertEqual(store.remove(keys[0]), 0)
        self.assertEqual(store.is_exist(keys[0]), 0)
        self.assertEqual(store.unregister_buffer(out.data_ptr()), 0)
        self.assertEqual(store.unregister_buffer(buf.data_ptr()), 0)
        self.assertEqual(store.close(), 0)


if __name__ == "__main__":
    mmctest.main()
