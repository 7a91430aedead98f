"""Every DistributedObjectStore method (memcache_hybrid's §1.4 surface) with good and bad input, against a real
mmc-metaserver: the return conventions, the keyword names, positional-only methods and TypeError on wrong types."""
import os
import tempfile

import numpy as np

import mmctest
import mmc

INVALID, ERROR, NOT_EXISTS, UNMATCHED_KEY = -3000, -1, -3007, -3102


def buf(n, seed=1):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


class Api(mmctest.ServerTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.s = mmctest.store(cls.meta.url, dram="128MB")

    @classmethod
    def tearDownClass(cls):
        cls.s.close()
        super().tearDownClass()

    def key(self, name):
        return "%s/%s" % (self.id().rsplit(".", 1)[-1], name)

    # ---- setup / init / close / service id
    def test_setup_init_close(self):
        s = mmc.DistributedObjectStore()
        self.assertEqual(s.is_exist("x"), -3019)  # not initialised
        self.assertEqual(s.get_local_service_id(), 4294967295)
        self.assertEqual(s.setup(mmctest.local_config(self.meta.url)), 0)
        self.assertEqual(s.init(0, init_bm=True), 0)
        self.assertLess(s.get_local_service_id(), 4294967295)
        self.assertEqual(s.close(), 0)
        self.assertEqual(s.close(), 0)  # idempotent
        with self.assertRaises(TypeError):
            s.setup({"meta_service_url": self.meta.url})
        with self.assertRaises(TypeError):
            s.init(-1)
        with self.assertRaises(TypeError):
            s.init(0.5)
        with self.assertRaises(TypeError):
            s.init(device=0)  # unknown keyword

    def test_setup_bad_config(self):
        s = mmc.DistributedObjectStore()
        c = mmctest.local_config(self.meta.url)
        c.dram_size = "12 parsecs"
        self.assertEqual(s.setup(c), INVALID)
        c = mmctest.local_config(self.meta.url)
        c.protocol = "carrier_pigeon"
        self.assertEqual(s.setup(c), INVALID)
        c = mmctest.local_config("tcp://127.0.0.1:1")  # nobody listens there
        self.assertEqual(s.setup(c), 0)
        self.assertEqual(s.init(0, False), -3017)

    def test_client_only(self):
        c = mmctest.store(self.meta.url, lend=False)
        self.assertEqual(c.get_local_service_id(), 4294967295)
        k = self.key("a")
        self.assertEqual(self.s.put(k, b"abc"), 0)
        self.assertEqual(c.is_exist(k), 1)
        self.assertEqual(c.get(k), b"abc")
        c.close()

    def test_init_reads_MMC_LOCAL_CONFIG_PATH(self):
        with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
            f.write("ock.mmc.meta_service_url = %s\nock.mmc.local_service.protocol = %s\n"
                    "ock.mmc.local_service.dram.size = 32MB\n" % (self.meta.url, mmctest.PROTOCOL))
        old = os.environ.get("MMC_LOCAL_CONFIG_PATH")
        os.environ["MMC_LOCAL_CONFIG_PATH"] = f.name
        try:
            s = mmc.DistributedObjectStore()
            self.assertEqual(s.init(0), 0)  # no setup(): the file
            self.assertEqual(s.put(self.key("a"), b"x"), 0)
            self.assertEqual(s.is_exist(self.key("a")), 1)
            s.close()
        finally:
            os.unlink(f.name)
            if old is None:
                del os.environ["MMC_LOCAL_CONFIG_PATH"]
            else:
                os.environ["MMC_LOCAL_CONFIG_PATH"] = old

    # ---- LocalConfig / ReplicateConfig / MetaConfig
    def test_local_config_attributes(self):
        c = mmc.LocalConfig()
        for name in ("meta_service_url", "config_store_url", "hcom_url", "log_level", "protocol", "dram_size",
                     "hbm_size", "max_dram_size", "max_hbm_size", "memory_pool_mode", "world_size",
                     "client_retry_milliseconds", "client_timeout_seconds", "read_thread_pool_size",
                     "write_thread_pool_size", "aggregate_num", "aggregate_io", "ubs_io_enable", "tls_enable",
                     "config_store_tls_enable", "hcom_tls_enable", "tls_ca_path", "tls_ca_crl_path",
                     "tls_cert_path", "tls_key_path", "tls_key_pass_path", "tls_package_path",
                     "tls_decrypter_path", "config_store_tls_ca_path", "config_store_tls_decrypter_path",
                     "hcom_tls_ca_path", "hcom_tls_decrypter_path"):
            self.assertTrue(hasattr(c, name), name)
        self.assertFalse(hasattr(c, "no_such_field"))
        with self.assertRaises(AttributeError):
            c.no_such_field = 1
        self.assertEqual(c.dram_size, "1GB")
        self.assertEqual(c.client_timeout_seconds, 60)
        with self.assertRaises(TypeError):
            c.meta_service_url = 5000
        with self.assertRaises(TypeError):
            c.world_size = "256"
        c.dram_size = 1 << 26  # an int is bytes
        self.assertEqual(c.to_c().dram_size, 1 << 26)
        c.dram_size = "2.5GB"
        self.assertEqual(c.to_c().dram_size, 5 << 29)
        c.client_timeout_seconds = 7
        self.assertEqual(c.to_c().timeout_ms, 7000)
        self.assertIn("meta_service_url", str(c))

    def test_parse_size(self):
        for text, n in (("4096", 4096), ("2048KB", 2 << 20), ("2048K", 2 << 20), ("512m", 512 << 20),
                        ("512 MB", 512 << 20), ("2.5GB", 5 << 29), ("1TB", 1 << 40), ("0", 0), ("1b", 1),
                        ("0.1GB", 107374182), ("0.3mb", 314573)):
            self.assertEqual(mmc.parse_size(text), n, text)
        for bad in ("", "GB", "-1GB", "1.5", "1XB", "1 G B"):
            with self.assertRaises(ValueError, msg=bad):
                mmc.parse_size(bad)

    def test_replicate_config(self):
        rc = mmc.ReplicateConfig()
        self.assertEqual(rc.replicaNum, 1)
        self.assertEqual(rc.preferredLocalServiceIDs, [])
        rc.preferredLocalServiceIDs = [self.s.get_local_service_id()]
        self.assertEqual(self.s.put(self.key("a"), b"abc", replicateConfig=rc), 0)
        with self.assertRaises(TypeError):
            rc.replicaNum = -1
        with self.assertRaises(TypeError):
            rc.replicaNum = 1.0
        rc = mmc.ReplicateConfig()
        rc.replicaNum = 9
        self.assertEqual(self.s.put(self.key("b"), b"abc", rc), ERROR)
        rc.replicaNum = 0
        self.assertEqual(self.s.put_from(self.key("b"), 1, 1, 3, rc), ERROR)
        with self.assertRaises(TypeError):
            self.s.put(self.key("b"), b"abc", replicateConfig=3)

    def test_meta_config(self):
        c = mmc.MetaConfig()
        self.assertEqual(c.meta_service_url, "tcp://127.0.0.1:5000")
        self.assertEqual(c.evict_threshold_high, 90)
        self.assertEqual(c.env(), [])
        c.evict_threshold_high = 95
        c.log_level = "debug"
        self.assertEqual(mmc.MetaService.setup(c), 0)
        self.assertIn("ock.mmc.evict_threshold_high=95", c.env())
        c.evict_threshold_low = 96
        self.assertEqual(mmc.MetaService.setup(c), -1)  # low >= high
        with self.assertRaises(TypeError):
            mmc.MetaService.setup(mmc.LocalConfig())

    # ---- put / get (buffer objects, bytes)
    def test_put_get(self):
        k = self.key("a")
        self.assertEqual(self.s.put(k, b"first"), 0)
        self.assertEqual(self.s.put(k, b"second"), 0)  # a duplicate: 0, the first value stays
        self.assertEqual(self.s.get(k), b"first")
        self.assertEqual(self.s.put(self.key("ro"), memoryview(b"read-only")), 0)
        self.assertEqual(self.s.put(self.key("np"), np.arange(10, dtype=np.int32)), 0)
        self.assertEqual(self.s.get(self.key("np")), np.arange(10, dtype=np.int32).tobytes())
        self.assertEqual(self.s.put(self.key("ba"), bytearray(b"xyz")), 0)
        self.assertEqual(self.s.get(self.key("missing")), b"")
        self.assertEqual(self.s.put(self.key("empty"), b""), INVALID)
        self.assertEqual(self.s.put("", b"x"), INVALID)
        self.assertEqual(self.s.put("k" * 256, b"x"), INVALID)
        self.assertEqual(self.s.put("k" * 255, b"x"), 0)
        for bad in (1, 1.5, "text", None):
            with self.assertRaises(TypeError):
                self.s.put(k, bad)
        with self.assertRaises(TypeError):
            self.s.put(5, b"x")
        with self.assertRaises(TypeError):
            self.s.get(key=k)  # positional only

    def test_put_batch_get_batch(self):
        ks = [self.key(str(i)) for i in range(4)]
        vals = [bytes([i]) * (100 + i) for i in range(4)]
        self.assertEqual(self.s.put_batch(ks, vals), 0)
        self.assertEqual(self.s.get_batch(ks + [self.key("missing")]), vals + [b""])
        self.assertEqual(self.s.put_batch([], []), 0)
        self.assertEqual(self.s.put_batch(ks, vals[:2]), INVALID)
        self.assertEqual(self.s.put_batch(["x"] * 16385, [b"x"] * 16385), INVALID)
        self.assertEqual(self.s.get_batch([]), [])
        with self.assertRaises(TypeError):
            self.s.put_batch(ks, [1, 2, 3, 4])
        with self.assertRaises(TypeError):  # numpy says ValueError for a strided array: a TypeError, as documented
            self.s.put(self.key("strided"), np.zeros(64, np.uint8)[::2])
        with self.assertRaises(TypeError):
            self.s.get_batch(keys=ks)

    # ---- pointer calls
    def test_put_from_get_into(self):
        k, a = self.key("a"), buf(4096)
        out = np.zeros_like(a)
        self.assertEqual(self.s.put_from(k, a.ctypes.data, a.nbytes), 0)
        self.assertEqual(self.s.put_from(k, a.ctypes.data, a.nbytes, 3), 0)  # duplicate
        self.assertEqual(self.s.get_into(k, out.ctypes.data, out.nbytes, direct=2), 0)
        self.assertTrue((out == a).all())
        self.assertEqual(self.s.get_into(k, out.ctypes.data, 100), INVALID)  # size differs from the object
        self.assertEqual(self.s.get_into(self.key("missing"), out.ctypes.data, 100), NOT_EXISTS)
        self.assertEqual(self.s.put_from(self.key("b"), a.ctypes.data, 0), INVALID)
        self.assertEqual(self.s.put_from(self.key("b"), a.ctypes.data, a.nbytes, direct=1), INVALID)  # G2L
        self.assertEqual(self.s.get_into(k, out.ctypes.data, out.nbytes, direct=3), INVALID)  # H2G
        self.assertEqual(self.s.put_from(self.key("b"), a.ctypes.data, a.nbytes, direct=0,
                                         replicateConfig=mmc.ReplicateConfig()), 0)
        with self.assertRaises(TypeError):
            self.s.put_from(k, -1, 10)
        with self.assertRaises(TypeError):
            self.s.put_from(k, float(a.ctypes.data), 10)
        with self.assertRaises(TypeError):
            self.s.put_from(k, a, 10)  # pointer arguments take no arrays
        with self.assertRaises(TypeError):
            self.s.get_into(k, out.ctypes.data, out.nbytes, direction=2)
        self.assertEqual(self.s.get_into(k, np.uint64(out.ctypes.data), np.int64(out.nbytes)), 0)

    def test_batch_put_from_get_into(self):
        n, size = 8, 8192
        ks = [self.key(str(i)) for i in range(n)]
        src = [buf(size, i) for i in range(n)]
        dst = [np.zeros(size, np.uint8) for _ in range(n)]
        self.assertEqual(self.s.batch_put_from(ks, [a.ctypes.data for a in src], [size] * n), [0] * n)
        self.assertEqual(self.s.batch_put_from(ks, [a.ctypes.data for a in src], [size] * n, 3), [0] * n)
        res = self.s.batch_get_into(ks + [self.key("missing")], [d.ctypes.data for d in dst] + [dst[0].ctypes.data],
                                    [size] * (n + 1), direct=2)
        self.assertEqual(res, [0] * n + [NOT_EXISTS])  # 0 per key, not a byte count
        self.assertTrue(all((s == d).all() for s, d in zip(src, dst)))
        ptrs = np.array([d.ctypes.data for d in dst], dtype=np.uint64)  # a uint64 array of pointers
        self.assertEqual(self.s.batch_get_into(ks, ptrs, np.full(n, size, dtype=np.uint64)), [0] * n)
        self.assertEqual(self.s.batch_put_from([], [], []), [])
        self.assertEqual(self.s.batch_get_into([], [], []), [])
        self.assertEqual(self.s.batch_put_from(["k"] * 16385, [1] * 16385, [1] * 16385), [INVALID])
        self.assertEqual(self.s.batch_get_into(["k"] * 16385, [1] * 16385, [1] * 16385), [INVALID])
        self.assertEqual(self.s.batch_put_from(ks, [1], [1]), [ERROR] * n)
        self.assertEqual(self.s.batch_get_into(ks, [1] * n, [1]), [ERROR] * n)
        self.assertEqual(self.s.batch_put_from([self.key("x"), ""], [src[0].ctypes.data] * 2, [size] * 2),
                         [INVALID] * 2)
        with self.assertRaises(TypeError):
            self.s.batch_get_into(ks, [-1] * n, [size] * n)
        with self.assertRaises(TypeError):
            self.s.batch_get_into(ks, "pointers", [size] * n)
        with self.assertRaises(TypeError):
            self.s.batch_put_from(keys=ks, buffer_ptrs=[1] * n, sizes=[1] * n, replicate_config=None)

    def test_layers(self):
        k = self.key("a")
        layers = [buf(1000 + i, i) for i in range(5)]
        self.assertEqual(self.s.put_from_layers(k, [a.ctypes.data for a in layers], [a.nbytes for a in layers]), 0)
        self.assertEqual(self.s.get_key_info(k).size(), sum(a.nbytes for a in layers))
        whole = np.zeros(sum(a.nbytes for a in layers), np.uint8)
        self.assertEqual(self.s.get_into_layers(k, [whole.ctypes.data], [whole.nbytes], 2), 0)  # another split
        self.assertTrue((whole == np.concatenate(layers)).all())
        self.assertEqual(self.s.get_into_layers(k, [whole.ctypes.data], [whole.nbytes - 1]), INVALID)
        self.assertEqual(self.s.put_from_layers(self.key("b"), [1, 2], [1]), INVALID)
        self.assertEqual(self.s.put_from_layers(self.key("b"), [], []), INVALID)
        self.assertEqual(self.s.put_from_layers(self.key("b"), [layers[0].ctypes.data], [10], direct=2), INVALID)
        self.assertEqual(self.s.put_from_layers(self.key("b"), [layers[0].ctypes.data] * 256, [1] * 256), INVALID)
        with self.assertRaises(TypeError):
            self.s.put_from_layers(k, [[1]], [[1]])

    def test_batch_layers(self):
        n, per = 3, [512, 64, 1024]
        ks = [self.key(str(i)) for i in range(n)]
        src = [[buf(s, i * 10 + j) for j, s in enumerate(per)] for i in range(n)]
        dst = [[np.zeros(s, np.uint8) for s in per] for _ in range(n)]
        P = lambda bufs: [[a.ctypes.data for a in row] for row in bufs]
        S = [per] * n
        self.assertEqual(self.s.batch_put_from_layers(ks, P(src), S, 3), [0] * n)
        self.assertEqual(self.s.batch_get_into_layers(ks, P(dst), S, direct=2), [0] * n)
        self.assertTrue(all((a == b).all() for r1, r2 in zip(src, dst) for a, b in zip(r1, r2)))
        self.assertEqual(self.s.batch_put_from_layers([], [], []), [])
        self.assertEqual(self.s.batch_get_into_layers(["k"] * 16385, [[1]] * 16385, [[1]] * 16385), [INVALID])
        self.assertEqual(self.s.batch_get_into_layers(ks, P(dst)[:2], S), [INVALID] * n)
        self.assertEqual(self.s.batch_get_into_layers(ks, P(dst), [per[:2]] * n), [INVALID] * n)
        res = self.s.batch_get_into_layers(ks + [self.key("missing")], P(dst) + P(dst)[:1], S + S[:1])
        self.assertEqual(res, [0] * n + [NOT_EXISTS])
        with self.assertRaises(TypeError):
            self.s.batch_put_from_layers(ks, [1, 2, 3], S)

    # ---- metadata
    def test_exist(self):
        k = self.key("a")
        self.assertEqual(self.s.is_exist(k), 0)
        self.s.put(k, b"x")
        self.assertEqual(self.s.is_exist(k), 1)
        self.assertEqual(self.s.is_exist(""), INVALID)
        self.assertEqual(self.s.batch_is_exist([k, self.key("b")]), [1, 0])
        self.assertEqual(self.s.batch_is_exist([]), [])
        self.assertEqual(self.s.batch_is_exist(["k"] * 16385), [INVALID])
        self.assertEqual(self.s.batch_is_exist(["k"] * 16384), [0] * 16384)  # the limit itself is fine
        with self.assertRaises(TypeError):
            self.s.is_exist(key=k)
        with self.assertRaises(TypeError):
            self.s.batch_is_exist([1, 2])

    def test_remove(self):
        k = self.key("a")
        self.s.put(k, b"x")
        self.assertEqual(self.s.remove(k), 0)
        self.assertEqual(self.s.remove(k), UNMATCHED_KEY)  # MemCache's code for a missing key
        self.s.put(k, b"x")
        self.assertEqual(self.s.remove_batch([k, self.key("b")]), [0, UNMATCHED_KEY])
        self.assertEqual(self.s.remove_batch([]), [])
        self.assertEqual(self.s.remove_batch(["k"] * 16385), [INVALID])
        if mmc._lib.has("mmc_remove_all"):
            self.assertEqual(self.s.remove_all(), 0)
            self.assertEqual(self.s.is_exist(k), 0)
        else:
            self.assertEqual(self.s.remove_all(), ERROR)  # a libmmc without mmc_remove_all
        with self.assertRaises(TypeError):
            self.s.remove(key=k)

    def test_key_info(self):
        k = self.key("a")
        self.s.put(k, b"12345")
        ki = self.s.get_key_info(k)
        self.assertEqual(ki.size(), 5)
        self.assertEqual(ki.loc_list(), [self.s.get_local_service_id()])
        self.assertEqual(ki.type_list(), [mmc.MEDIA_DRAM])
        self.assertEqual(len(ki.gva_list()), 1)
        self.assertEqual(str(ki), "loc:%d, type:1, blobNum:1, size:5" % self.s.get_local_service_id())
        self.assertEqual(self.s.get_key_info(k, flag=0).size(), 5)
        missing = self.s.get_key_info(self.key("b"))
        self.assertEqual((missing.size(), missing.loc_list(), missing.type_list()), (0, [], []))
        infos = self.s.batch_get_key_info([k, self.key("b")], flag=0)
        self.assertEqual([i.size() for i in infos], [5, 0])
        self.assertEqual(self.s.batch_get_key_info([]), [])
        self.assertEqual(self.s.batch_get_key_info(["k"] * 16385), [])
        self.assertEqual(self.s.batch_get_key_info([k, ""]), [])  # a whole-call failure
        with self.assertRaises(TypeError):
            self.s.get_key_info(key=k)
        with self.assertRaises(TypeError):
            mmc.KeyInfo.size()

    def test_register_buffer(self):
        a = buf(1 << 20)
        self.assertEqual(self.s.register_buffer(a.ctypes.data, a.nbytes), 0)
        self.assertEqual(self.s.put_from(self.key("a"), a.ctypes.data, a.nbytes), 0)
        self.assertEqual(self.s.unregister_buffer(a.ctypes.data, a.nbytes), 0)
        self.assertEqual(self.s.unregister_buffer(a.ctypes.data, a.nbytes), INVALID)  # not registered
        self.assertEqual(self.s.register_buffer(a.ctypes.data, 0), INVALID)
        with self.assertRaises(TypeError):
            self.s.register_buffer(a, a.nbytes)
        with self.assertRaises(TypeError):
            self.s.register_buffer(buffer=a.ctypes.data, size=1)

    # ---- tiers (mmc additions: mmc_prefetch_keys / mmc_evict_keys)
    def test_prefetch_evict(self):
        k = self.key("a")
        self.s.put(k, b"x" * 4096)
        self.assertEqual(self.s.prefetch_keys([k], src_media=mmc.MEDIA_DRAM, dst_media=mmc.MEDIA_SSD), INVALID)
        self.assertEqual(self.s.evict_keys([k], flags=1), INVALID)
        self.assertEqual(self.s.prefetch_keys([]), INVALID)
        self.assertEqual(self.s.evict_keys([k]), 0)  # no SSD tier here: the DRAM copy is removed
        self.assertEqual(self.s.is_exist(k), 0)
        with self.assertRaises(TypeError):
            self.s.evict_keys([k], src_media=-1)

    # ---- the GVA flow
    def test_gva_write_read(self):
        n, layers, lb = 2, 4, 4096
        ks = [self.key(str(i)) for i in range(n)]
        src = [[buf(lb, i * 10 + l) for l in range(layers)] for i in range(n)]
        gvas = self.s.batch_alloc(ks, [layers * lb] * n, media=mmc.MEDIA_DRAM)
        self.assertTrue(all(g > 0 for g in gvas), gvas)
        self.assertEqual(self.s.is_exist(ks[0]), 0)  # invisible until finished
        for l in range(layers):  # one copy call per layer, as a layer-wise connector does
            self.assertEqual(self.s.batch_copy([g + l * lb for g in gvas], [src[i][l].ctypes.data for i in range(n)],
                                               [lb] * n, 0), 0)
        self.assertEqual(self.s.batch_write_finish(ks, [0] * n), [0] * n)
        self.assertEqual(self.s.batch_is_exist(ks), [1] * n)
        infos = self.s.batch_get_key_info(ks)
        rgvas = [i.gva_list()[0] for i in infos]
        self.assertEqual(self.s.batch_add_lease(ks, leaseTtlMs=30000), [0] * n)
        dst = [[np.zeros(lb, np.uint8) for _ in range(layers)] for _ in range(n)]
        self.assertEqual(self.s.batch_copy_layers(rgvas, [[d.ctypes.data for d in row] for row in dst],
                                                  [[lb] * layers] * n, direct=1), 0)
        self.assertEqual(self.s.batch_remove_lease(ks), 0)
        self.assertTrue(all((a == b).all() for r1, r2 in zip(src, dst) for a, b in zip(r1, r2)))
        # bad input
        self.assertEqual(self.s.batch_copy([1], [1, 2], [1]), ERROR)
        self.assertEqual(self.s.batch_copy([], [], []), 0)
        self.assertEqual(self.s.batch_copy([rgvas[0]], [dst[0][0].ctypes.data], [lb], direct=1), INVALID)  # no lease
        self.assertEqual(self.s.batch_copy_layers([1], [[1], [2]], [[1]]), ERROR)
        self.assertEqual(self.s.batch_alloc([], []), [])
        self.assertEqual(self.s.batch_alloc(ks, [1]), [0] * n)
        self.assertEqual(self.s.batch_add_lease([self.key("missing")]), [NOT_EXISTS])
        self.assertEqual(self.s.batch_add_lease([]), [])
        self.assertEqual(self.s.batch_write_finish([], []), [])
        self.assertEqual(self.s.batch_write_finish(ks, [0]), [INVALID] * n)
        self.assertEqual(self.s.batch_write_finish([self.key("never")], [0]), [UNMATCHED_KEY])
        with self.assertRaises(TypeError):
            self.s.batch_alloc(ks, [1.5] * n)
        with self.assertRaises(TypeError):
            self.s.batch_add_lease(ks, lease_ttl_ms=1)

    def test_gva_duplicate_alloc(self):
        k = self.key("a")
        self.s.put(k, b"x" * 64)
        g = self.s.batch_alloc([k], [64])
        self.assertEqual(len(g), 1)  # the existing object's GVA (or 0): never an exception
        self.assertEqual(self.s.batch_write_finish([k], [0]), [0])  # already readable: idempotent


if __name__ == "__main__":
    mmctest.main()
