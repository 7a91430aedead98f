"""The call sequences SGLang's NpuMemcacheStore and vLLM-Ascend's MemcacheBackend make, written as our own code
against `import memcache_hybrid` from the source tree (python/), with their keys, arguments and result checks."""
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import torch

import mmctest
import memcache_hybrid
from memcache_hybrid import DistributedObjectStore, LocalConfig

SGLANG_CONTROL = ("device_id", "init_bm", "conf_file_path", "check_server", "metrics_url", "memcache_metrics_url",
                  "extra_backend_tag")


def page_hash(prev, tokens):
    return hashlib.sha256((prev + ",".join(map(str, tokens))).encode()).hexdigest()


class SGLang(mmctest.ServerTest):
    """storage/npu_memcache/npu_memcache_store.py: config, init, warmup, register, set / get / exists, close."""

    def make_store(self, extra_config):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"meta_service_url": self.meta.url, "protocol": mmctest.PROTOCOL, "dram_size": "64MB"}, f)
        os.environ["SGLANG_HICACHE_MEMCACHE_CONFIG_PATH"] = f.name
        try:
            config = json.load(open(os.environ["SGLANG_HICACHE_MEMCACHE_CONFIG_PATH"]))
        finally:
            os.unlink(f.name)
        config.update(extra_config)
        local = LocalConfig()
        unknown = []
        for k, v in config.items():
            if k in SGLANG_CONTROL:
                continue
            if hasattr(local, k):
                setattr(local, k, v)
            else:
                unknown.append(k)  # SGLang only warns
        store = DistributedObjectStore()
        device_id, init_bm = config.get("device_id", 0), config.get("init_bm", True)
        if store.setup(local) != 0 or store.init(device_id, init_bm) != 0:
            store.close()
            raise RuntimeError("memcache init failed")
        return store, unknown

    def test_full_sequence(self):
        store, unknown = self.make_store({"device_id": 0, "extra_backend_tag": "t", "no_such_key": 1,
                                          "dram_size": 64 << 20})  # an int size, as the README allows
        self.assertEqual(unknown, ["no_such_key"])
        # warmup (SGLANG_NPU_MEMCACHE_ENABLE_WARMUP)
        value = bytearray(4096)
        self.assertEqual(store.put("warmup_key", value), 0)
        self.assertEqual(store.is_exist("warmup_key"), 1)
        self.assertEqual(store.get("warmup_key"), value)
        # the host KV pool: MHA, page-first, k and v per page
        pages, page_bytes, tp = 8, 16384, 0
        kv = torch.randint(0, 256, (2, pages, page_bytes), dtype=torch.uint8)
        self.assertEqual(store.register_buffer(kv.data_ptr(), kv.numel() * kv.element_size()), 0)
        hashes, prev = [], ""
        for p in range(pages):
            prev = page_hash(prev, range(p * 64, p * 64 + 64))
            hashes.append(prev)
        keys, ptrs, sizes = [], [], []
        for p, h in enumerate(hashes):
            for part, name in ((0, "k"), (1, "v")):
                keys.append("t_%s_%d_%s" % (h, tp, name))
                ptrs.append(kv[part, p].data_ptr())
                sizes.append(page_bytes)
        # batch_set: exists first, then put only the missing ones
        half = len(keys) // 2
        self.assertEqual(store.batch_put_from(keys[:half], ptrs[:half], sizes[:half]), [0] * half)
        exist = store.batch_is_exist(keys)
        missing = [i for i, e in enumerate(exist) if e != 1]
        self.assertEqual(missing, list(range(half, len(keys))))
        res = store.batch_put_from([keys[i] for i in missing], [ptrs[i] for i in missing],
                                   [sizes[i] for i in missing])
        self.assertTrue(all(r == 0 for r in res))
        # batch_exists: the leading run of hits
        exist = store.batch_is_exist(keys + ["t_%s_0_k" % ("0" * 64)])
        hits = next((i for i, e in enumerate(exist) if e != 1), len(exist))
        self.assertEqual(hits, len(keys))
        # batch_get into a second host pool
        out = torch.zeros_like(kv)
        self.assertEqual(store.register_buffer(out.data_ptr(), out.numel()), 0)
        optrs = [out[i % 2, i // 2].data_ptr() for i in range(len(keys))]
        res = store.batch_get_into(keys, optrs, sizes)
        got = [s if r == 0 else -abs(r) for r, s in zip(res, sizes)]
        self.assertEqual(got, sizes)
        self.assertTrue(torch.equal(out, kv))
        res = store.batch_get_into(["t_%s_0_k" % ("f" * 64)], [optrs[0]], [page_bytes])
        self.assertLess(-abs(res[0]), 0)
        # clear(): remove_all() must be 0, else SGLang raises; 0 once libmmc has mmc_remove_all
        from mmc import _lib
        if _lib.has("mmc_remove_all"):
            self.assertEqual(store.remove_all(), 0)
        else:
            self.assertNotEqual(store.remove_all(), 0)
        try:
            store.close()
        except Exception:  # close() swallows exceptions
            pass

    def test_check_server(self):
        """check_server polls metrics_url for HTTP 200: mmc-metaserver's admin /metrics answers it."""
        import urllib.request
        url = "http://127.0.0.1:%d/metrics" % self.meta.admin_port
        with urllib.request.urlopen(url, timeout=10) as r:
            self.assertEqual(r.status, 200)

    def test_init_failure_raises(self):
        with self.assertRaises(RuntimeError):
            self.make_store({"meta_service_url": "tcp://127.0.0.1:1"})

    def test_meta_service_main(self):
        """start_meta_service.py: MetaConfig(), setattr per key, MetaService.setup(), MetaService.main()."""
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        d = tempfile.mkdtemp(prefix="mmc-pymeta-")
        conf = os.path.join(d, "meta.conf")
        with open(conf, "w") as f:  # the KVCM ports of mmc-metaserver: free ones, on loopback
            f.write("kvcm.service.http_port = 0\nkvcm.service.admin_http_port = 0\nkvcm.service.rpc_port = 0\nkvcm.service.admin_rpc_port = 0\nkvcm.service.bind = 127.0.0.1\n")
        code = ("import sys\nfrom memcache_hybrid import MetaConfig, MetaService\n"
                "cfg = MetaConfig()\n"
                "for k, v in {'meta_service_url': 'tcp://127.0.0.1:%d', 'data_dir': %r, 'log_level': 'warn',"
                " 'evict_threshold_high': 95}.items():\n"
                "    if hasattr(cfg, k): setattr(cfg, k, v)\n"
                "if MetaService.setup(cfg) != 0: sys.exit(3)\n"
                "sys.exit(MetaService.main())\n" % (port, os.path.join(d, "data")))
        env = dict(os.environ, MMC_META_CONFIG_PATH=conf)
        p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL)
        try:
            url = "tcp://127.0.0.1:%d" % port
            for _ in range(100):
                st = DistributedObjectStore()
                c = mmctest.local_config(url)
                if st.setup(c) == 0 and st.init(0, False) == 0:
                    break
                time.sleep(0.1)
            else:
                self.fail("MetaService.main() never served")
            self.assertEqual(st.is_exist("nothing"), 0)
            st.close()
            p.send_signal(signal.SIGTERM)
            self.assertEqual(p.wait(30), 0)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()


class ShippedConfigs(unittest.TestCase):
    """python/memcache_hybrid/config/mmc-{local,meta}.conf (installed with -Dmemcache_hybrid) are valid."""
    DIR = os.path.join(mmctest.ROOT, "python", "memcache_hybrid", "config")

    def test_local_conf(self):
        c = LocalConfig()
        c.config_path = os.path.join(self.DIR, "mmc-local.conf")
        self.assertEqual(DistributedObjectStore().setup(c), 0)

    def test_meta_conf(self):
        d = tempfile.mkdtemp(prefix="mmc-pyconf-")
        p = subprocess.Popen([mmctest.metaserver_binary(), "--config", os.path.join(self.DIR, "mmc-meta.conf"),
                              "--data-dir", os.path.join(d, "data"),
                              "--env", "ock.mmc.meta_service_url=tcp://127.0.0.1:0",
                              "--env", "kvcm.service.http_port=0", "--env", "kvcm.service.admin_http_port=0",
                              "--env", "kvcm.service.rpc_port=0", "--env", "kvcm.service.admin_rpc_port=0",
                              "--env", "kvcm.service.bind=127.0.0.1"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            self.assertTrue(p.stdout.readline().startswith(b"mmc-metaserver ready"))
        finally:
            p.terminate()
            p.wait(10)
            p.stdout.close()


class VllmAscend(mmctest.ServerTest):
    """kv_pool/ascend_store/backend/memcache_backend.py and pool_worker.py."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.conf = tempfile.NamedTemporaryFile("w", suffix="-mmc-local.conf", delete=False)
        cls.conf.write("ock.mmc.meta_service_url = %s\nock.mmc.local_service.protocol = %s\n"
                       "ock.mmc.local_service.dram.size = 96MB\n" % (cls.meta.url, mmctest.PROTOCOL))
        cls.conf.close()
        cls.old = os.environ.get("MMC_LOCAL_CONFIG_PATH")
        os.environ["MMC_LOCAL_CONFIG_PATH"] = cls.conf.name
        # the worker: init(local_rank, init_bm=True), then sleep(0.1)
        cls.worker = DistributedObjectStore()
        res = cls.worker.init(0, init_bm=True)
        assert res == 0
        time.sleep(0.1)
        # the scheduler: a metadata-only client
        cls.scheduler = DistributedObjectStore()
        assert cls.scheduler.init(0, init_bm=False) == 0

    @classmethod
    def tearDownClass(cls):
        cls.worker.close()
        cls.scheduler.close()
        os.unlink(cls.conf.name)
        if cls.old is None:
            del os.environ["MMC_LOCAL_CONFIG_PATH"]
        else:
            os.environ["MMC_LOCAL_CONFIG_PATH"] = cls.old
        super().tearDownClass()

    def test_is_device_sdma(self):
        text = open(os.environ["MMC_LOCAL_CONFIG_PATH"]).read()
        self.assertNotIn("ock.mmc.local_service.protocol = device_sdma", text)

    def test_probes(self):
        for name in ("batch_alloc", "batch_copy", "batch_copy_layers", "batch_add_lease", "batch_remove_lease",
                     "batch_write_finish"):
            self.assertTrue(callable(getattr(self.worker, name, None)), name)
        self.assertEqual((memcache_hybrid.L2G, memcache_hybrid.G2L, memcache_hybrid.G2H, memcache_hybrid.H2G,
                          memcache_hybrid.AUTO), (0, 1, 2, 3, 9))

    def keys(self, n, prefix="Qwen"):
        return ["%s@pcp0@dcp0@head_or_tp_rank:0@pp_rank:0@group:0@cache_role:kv@cache_family:full@%032x" %
                (prefix, 0xabc0 + i) for i in range(n)]

    def test_non_layerwise(self):
        layers, blocks, block_bytes = 4, 6, 8192
        kv = [torch.randint(0, 256, (blocks, block_bytes), dtype=torch.uint8) for _ in range(2 * layers)]
        for t in kv:
            self.worker.register_buffer(t.data_ptr(), t.numel() * t.element_size())  # result ignored
        keys = self.keys(blocks)
        self.assertEqual([r == 1 for r in self.scheduler.batch_is_exist(keys)], [False] * blocks)
        addrs = [[t[b].data_ptr() for t in kv] for b in range(blocks)]
        sizes = [[block_bytes] * len(kv) for _ in range(blocks)]
        self.assertEqual(self.worker.batch_put_from_layers(keys, addrs, sizes, 0), [0] * blocks)
        self.assertEqual([r == 1 for r in self.scheduler.batch_is_exist(keys)], [True] * blocks)
        out = [torch.zeros_like(t) for t in kv]
        oaddrs = [[t[b].data_ptr() for t in out] for b in range(blocks)]
        self.assertEqual(self.worker.batch_get_into_layers(keys, oaddrs, sizes, 1), [0] * blocks)
        self.assertTrue(all(torch.equal(a, b) for a, b in zip(kv, out)))

    def test_layerwise_gva(self):
        layers, n, per_layer = 5, 3, 4096
        keys = ["Qwen@0@%032x@0" % i for i in range(n)]
        src = torch.randint(0, 256, (layers, n, per_layer), dtype=torch.uint8)
        # save: batch_alloc once (cached: not idempotent), then one batch_copy per layer, then write_finish
        gvas = self.worker.batch_alloc(keys, [layers * per_layer] * n)
        self.assertTrue(all(g > 0 for g in gvas))
        gva_t = torch.tensor(gvas, dtype=torch.int64)
        for layer in range(layers):
            addrs = torch.tensor([src[layer, i].data_ptr() for i in range(n)], dtype=torch.int64)
            sizes = torch.full((n,), per_layer, dtype=torch.int64)
            rc = self.worker.batch_copy((gva_t + layer * per_layer).tolist(), addrs.tolist(), sizes.tolist(), 0)
            if rc != 0:
                raise RuntimeError("batch_copy failed: %d" % rc)
        finish = getattr(self.worker, "batch_write_finish", None)
        results = finish(keys, [0] * n) if finish else [0] * n
        self.assertEqual(results, [0] * n)
        # lookup (layerwise): batch_get_key_info with a length check and size() > 0
        infos = self.scheduler.batch_get_key_info(keys)
        self.assertEqual(len(infos), n)
        self.assertTrue(all(ki.size() > 0 for ki in infos))
        # load: gva_list()[0], batch_add_lease(keys, 300000) (retried on -3101), per layer batch_copy(.., 1)
        rgvas = [ki.gva_list()[0] for ki in infos]
        for _ in range(10):
            res = self.worker.batch_add_lease(keys, 300000)
            if all(r != -3101 for r in res):
                break
            time.sleep(0.001)
        self.assertEqual(res, [0] * n)
        dst = torch.zeros_like(src)
        for layer in range(layers):
            rc = self.worker.batch_copy([g + layer * per_layer for g in rgvas],
                                        [dst[layer, i].data_ptr() for i in range(n)], [per_layer] * n, 1)
            self.assertEqual(rc, 0)
        self.assertEqual(self.worker.batch_remove_lease(keys), 0)
        self.assertTrue(torch.equal(src, dst))


if __name__ == "__main__":
    mmctest.main()
