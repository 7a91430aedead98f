"""SGLang's Mooncake HiCache backend (sgl-project/sglang python/sglang/srt/mem_cache/storage/mooncake_store/
mooncake_store.py, read at 00fe477) replayed against mmc through python/mooncake: its calls in its order and with
its arguments, written as our own code.

- check_server: GET http://<master host>:<master_metrics_port>/get_all_segments until the text is not empty;
  pointed at mmc-metaserver's admin port, it waits for the first local service that lends memory (here a store
  service in a second process, as mooncake_store_service would be).
- setup with storage metrics on: enable_client_http_server=True and client_http_port, then the client's /metrics;
- warmup, register_buffer of the host pool, batch_set_v1 / batch_exists / batch_get_v1 for an MHA page-first
  pool (batch_put_from / batch_get_into) and an MLA layer-first pool (the multi-buffer calls), with group
  semantics on (ReplicateConfig.group_ids), and clear() with remove_all().
- SSD offload ($MOONCAKE_ENABLE_SSD_OFFLOAD, $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH: setup's enable_ssd_offload and
  ssd_offload_path keyword arguments), as SGLang's own Mooncake SSD test runs it: two ranks lending a small segment
  each, pages well beyond it, every page read back.

  test_sglang_replay.py --store-service MASTER   (the child: lends memory, prints "ready", waits for stdin)
"""
import os
import socket
import sys
import threading
import time
import unittest
import urllib.request
import uuid

import torch

import mmctest

PROTO = {"host_tcp": "tcp", "host_shm": "shm", "host_rdma": "rdma"}.get(mmctest.PROTOCOL, mmctest.PROTOCOL)
DEFAULT_LOCAL_BUFFER_SIZE = 16 << 20
PAGE, LAYERS, HEADS, DIM, PAGES = 16, 4, 2, 64, 8
SETUP_TIMEOUT = 120


def store_service_main(master):
    from mooncake.store import MooncakeDistributedStore
    s = MooncakeDistributedStore()
    assert s.setup("store-service", "P2PHANDSHAKE", 128 << 20, DEFAULT_LOCAL_BUFFER_SIZE, PROTO, "", master) == 0
    print("ready", flush=True)
    sys.stdin.read()
    s.close()


def free_port():
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        return s.getsockname()[1]


def page_hashes(n):
    return ["%064x" % (0xC0FFEE00 + i) for i in range(n)]


class Backend:
    """MooncakeStore's store calls, for tp_rank 0 of 1 with a config prefix (extra_backend_tag and model)."""

    def __init__(self, extra_config, enable_storage_metrics, client_http_port):
        from mooncake.store import MooncakeDistributedStore, ReplicateConfig
        self.cfg = extra_config
        self.ReplicateConfig = ReplicateConfig
        self.use_groups = extra_config.get("enable_group_semantics", False) and hasattr(ReplicateConfig, "group_ids")
        self.prefix = "%s_%s" % (extra_config["extra_backend_tag"], "meta-llama-Llama-3.1-8B")
        self.polls = []
        if extra_config.get("check_server"):
            self.check_server()
        self.store = MooncakeDistributedStore()
        kwargs = {"enable_client_http_server": True, "client_http_port": client_http_port} \
            if enable_storage_metrics else {}
        if extra_config.get("enable_ssd_offload"):
            kwargs["enable_ssd_offload"] = True
        if extra_config.get("ssd_offload_path") is not None:
            kwargs["ssd_offload_path"] = extra_config["ssd_offload_path"]
        gss = extra_config["global_segment_size"]
        gss = int(gss[:-2]) << 30 if isinstance(gss, str) and gss.lower().endswith("gb") else int(gss)
        ret = self.store.setup(extra_config.get("local_hostname", "localhost"),
                               extra_config.get("metadata_server", "P2PHANDSHAKE"), gss, DEFAULT_LOCAL_BUFFER_SIZE,
                               extra_config.get("protocol", "tcp"), extra_config.get("device_name", ""),
                               extra_config["master_server_address"], None, **kwargs)
        if ret:
            raise RuntimeError("Failed to setup Mooncake store, error code: %d" % ret)
        self.warmup()

    def check_server(self):
        ip = self.cfg["master_server_address"].split(":")[0]
        url = "http://%s:%d/get_all_segments" % (ip, self.cfg["master_metrics_port"])
        start = time.perf_counter()
        while time.perf_counter() - start < SETUP_TIMEOUT:
            try:
                text = urllib.request.urlopen(url, timeout=3).read().decode()
            except OSError:
                text = None
            self.polls.append(text)
            if text:
                return
            self.on_wait()
        raise ValueError("Launch mooncake store server timeout")

    def on_wait(self):
        time.sleep(0.05)  # SGLang waits 3 s between polls

    def warmup(self):
        key, value = "sglang_mooncake_store_warmup_key" + uuid.uuid4().hex, bytes(4 * 1024)
        assert self.store.put(key, value) == 0
        assert self.store.is_exist(key) == 1
        assert self.store.get(key) == value

    def register_buffer(self, t):
        ret = self.store.register_buffer(t.data_ptr(), t.numel() * t.element_size())
        if ret != 0:
            raise RuntimeError("Failed to register buffer to Mooncake Store, error code: %d" % ret)

    def tag(self, keys):
        return ["%s_%s" % (self.prefix, k) for k in keys]

    def config_for(self, tagged_pages, per_page):
        if not self.use_groups:
            return None
        c = self.ReplicateConfig()
        c.group_ids = ["sglang-hicache:%s" % k for k in tagged_pages for _ in range(per_page)]
        return c

    def put(self, keys, ptrs, sizes, config):
        if ptrs and isinstance(ptrs[0], list):
            return self.store.batch_put_from_multi_buffers(keys, ptrs, sizes, config or self.ReplicateConfig())
        if config is not None:
            return self.store.batch_put_from(keys, ptrs, sizes, config)
        return self.store.batch_put_from(keys, ptrs, sizes)

    def get(self, keys, ptrs, sizes):
        if ptrs and isinstance(ptrs[0], list):
            return self.store.batch_get_into_multi_buffers(keys, ptrs, sizes)
        return self.store.batch_get_into(keys, ptrs, sizes)

    def batch_set_v1(self, pages, keys, ptrs, sizes):
        """Only the missing objects are put; per page True when all its objects are stored."""
        per_page = len(keys) // len(pages)
        config = self.config_for(self.tag(pages), per_page)
        exist = self.store.batch_is_exist(keys)
        results = [0 if e == 1 else -1 for e in exist]
        missing = [i for i, e in enumerate(exist) if e != 1]
        if missing:
            if config is not None:
                config.group_ids = [config.group_ids[i] for i in missing]
            put = self.put([keys[i] for i in missing], [ptrs[i] for i in missing], [sizes[i] for i in missing],
                           config)
            for i, r in zip(missing, put):
                results[i] = r
        return [all(r == 0 for r in results[p * per_page:(p + 1) * per_page]) for p in range(len(pages))]

    def batch_exists(self, query_keys, per_page):
        res = self.store.batch_is_exist(query_keys)
        return next((i for i, r in enumerate(res) if r != 1), len(res)) // per_page

    def batch_get_v1(self, keys, ptrs, sizes, per_page):
        res = self.get(keys, ptrs, sizes)
        return [all(r > 0 for r in res[p:p + per_page]) for p in range(0, len(res), per_page)]

    def clear(self):
        return self.store.remove_all()


class Replay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.meta = mmctest.Metaserver()
        cls.service = None

    @classmethod
    def tearDownClass(cls):
        rc = cls.service.stop() if cls.service else 0
        cls.meta.stop()
        assert rc == 0, "the store service exited with %d" % rc

    def start_store_service(self):
        type(self).service = mmctest.Peer(os.path.abspath(__file__), "--store-service",
                                          "127.0.0.1:%d" % self.meta.port)

    def backend(self, port):
        extra = {"master_server_address": "127.0.0.1:%d" % self.meta.port, "master_metrics_port": self.meta.admin_port,
                 "check_server": True, "protocol": PROTO, "global_segment_size": 64 << 20, "device_name": "",
                 "local_hostname": "localhost", "metadata_server": "P2PHANDSHAKE", "enable_group_semantics": True,
                 "extra_backend_tag": "replay"}
        started = []

        class Waiting(Backend):
            def on_wait(inner):
                if not started:  # the first empty answer: now the store service comes up
                    started.append(True)
                    self.start_store_service()
                else:
                    Backend.on_wait(inner)

        b = Waiting(extra, enable_storage_metrics=True, client_http_port=port)
        self.addCleanup(b.store.close)
        return b

    def test_backend(self):
        port = free_port()
        b = self.backend(port)
        self.assertEqual(b.polls[0], "")  # no segment yet: SGLang keeps waiting
        self.assertRegex(b.polls[-1], r"^rank:\d+@")  # the store service's segment
        # host pools: MHA page-first (one object per page for K and for V), MLA layer-first (one per page, a buffer
        # per layer); pages' values depend on the page
        mha = torch.randn(2, PAGES * PAGE, LAYERS, HEADS, DIM).to(torch.bfloat16)
        mla = torch.randn(LAYERS, PAGES * PAGE, DIM * 9).to(torch.bfloat16)
        for t in (mha, mla):
            b.register_buffer(t)
        pages = page_hashes(PAGES)
        mha_bytes = PAGE * LAYERS * HEADS * DIM * 2
        mha_keys = [k for h in b.tag(pages) for k in ("%s_0_k" % h, "%s_0_v" % h)]

        def mha_meta(pool):
            return [pool[kv, p * PAGE].data_ptr() for p in range(PAGES) for kv in (0, 1)], [mha_bytes] * 2 * PAGES

        ptrs, sizes = mha_meta(mha)
        self.assertEqual(b.batch_set_v1(pages[:3], mha_keys[:6], ptrs[:6], sizes[:6]), [True] * 3)
        self.assertEqual(b.batch_set_v1(pages, mha_keys, ptrs, sizes), [True] * PAGES)  # 3 pages were there
        self.assertEqual(b.batch_exists(mha_keys + b.tag(["%064x_0_k" % 7]), 2), PAGES)
        out = torch.zeros_like(mha)
        optrs, _ = mha_meta(out)
        self.assertEqual(b.batch_get_v1(mha_keys, optrs, sizes, 2), [True] * PAGES)
        self.assertTrue(torch.equal(out, mha))
        # MLA layer-first: "{hash}__k" (mla_suffix "" without PP), one buffer per layer
        mla_keys = ["%s__k" % h for h in b.tag(pages)]
        layer_bytes = PAGE * DIM * 9 * 2
        lptrs = [[mla[l, p * PAGE].data_ptr() for l in range(LAYERS)] for p in range(PAGES)]
        lsizes = [[layer_bytes] * LAYERS for _ in range(PAGES)]
        self.assertEqual(b.batch_set_v1(pages, mla_keys, lptrs, lsizes), [True] * PAGES)
        out = torch.zeros_like(mla)
        optrs = [[out[l, p * PAGE].data_ptr() for l in range(LAYERS)] for p in range(PAGES)]
        self.assertEqual(b.batch_get_v1(mla_keys, optrs, lsizes, 1), [True] * PAGES)
        self.assertTrue(torch.equal(out, mla))
        # the client's metrics, served because storage metrics are on
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read().decode()
        self.assertIn('mooncake_client_keys_total{op="put"} %d' % (1 + 2 * PAGES + PAGES), text)
        # clear(): everything goes
        self.assertGreaterEqual(b.clear(), 3 * PAGES)
        self.assertEqual(b.batch_exists(mha_keys, 2), 0)


class SsdOffload(unittest.TestCase):
    """Two ranks of one engine, each lending 8 MiB and offloading to one directory: 24 MiB of pages per rank go
    through, and every page reads back what was put (from the SSD files for most)."""

    def setUp(self):
        self.meta = mmctest.Metaserver()
        self.addCleanup(self.meta.stop)
        self.dir = os.path.join(self.meta.dir, "mooncake-ssd")
        os.makedirs(self.dir, exist_ok=True)
        os.environ["MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES"] = str(64 << 20)
        self.addCleanup(os.environ.pop, "MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES")

    def rank(self, tag):
        extra = {"master_server_address": "127.0.0.1:%d" % self.meta.port, "protocol": PROTO,
                 "global_segment_size": 8 << 20, "device_name": "", "extra_backend_tag": tag,
                 "enable_ssd_offload": True, "ssd_offload_path": self.dir}
        b = Backend(extra, enable_storage_metrics=False, client_http_port=0)
        self.addCleanup(b.store.close)
        return b

    def test_pages_beyond_dram_read_back_from_the_ssd_files(self):
        ranks = [None, None]

        def start(r):
            ranks[r] = self.rank("r%d" % r)

        threads = [threading.Thread(target=start, args=(r,)) for r in range(2)]  # ranks start together
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(sorted(os.listdir(self.dir)), ["mmc-ssd-0.tier", "mmc-ssd-1.tier"], "a file per rank")
        page_bytes, n = 256 << 10, 96
        for r, b in enumerate(ranks):
            pool = torch.arange(n * page_bytes // 4, dtype=torch.int32).view(n, -1) * (r + 1)
            b.register_buffer(pool)
            keys = b.tag(["%064x_%d_k" % (i, r) for i in range(n)])
            for i in range(0, n, 8):  # SGLang backs pages up a few at a time
                put = b.batch_set_v1(keys[i:i + 8], keys[i:i + 8], [pool[j].data_ptr() for j in range(i, i + 8)],
                                     [page_bytes] * 8)
                self.assertEqual(put, [True] * 8, "pages %d..%d" % (i, i + 7))
            out = torch.zeros_like(pool)
            b.register_buffer(out)
            for i in range(0, n, 8):  # prefetches of a few pages: each is staged through the 16 MiB of DRAM
                got = b.batch_get_v1(keys[i:i + 8], [out[j].data_ptr() for j in range(i, i + 8)], [page_bytes] * 8, 1)
                self.assertEqual(got, [True] * 8, "rank %d: pages %d..%d back" % (r, i, i + 7))
            self.assertTrue(torch.equal(out, pool), "rank %d: the bytes put" % r)
        used = sum(os.stat(os.path.join(self.dir, f)).st_blocks * 512 for f in os.listdir(self.dir))
        self.assertGreater(used, 16 << 20, "most pages went to the SSD files")

    def test_a_rank_started_again_takes_a_file_back(self):
        b = self.rank("r0")
        self.assertEqual(b.store.put("kept", b"x" * 4096), 0)
        b.store.close()
        again = self.rank("r0")
        self.assertEqual(os.listdir(self.dir), ["mmc-ssd-0.tier"], "the free file, not a new one")
        self.assertEqual(again.store.put("again", b"y" * 4096), 0)
        self.assertEqual(again.store.get("again"), b"y" * 4096)

    def test_no_directory_is_refused_naming_it(self):
        from mooncake.store import MooncakeDistributedStore, INVALID_PARAMS
        os.environ.pop("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", None)
        s = MooncakeDistributedStore()
        self.assertEqual(s.setup("h", "P2PHANDSHAKE", 8 << 20, DEFAULT_LOCAL_BUFFER_SIZE, PROTO, "",
                                 "127.0.0.1:%d" % self.meta.port, None, enable_ssd_offload=True), INVALID_PARAMS)
        self.assertIn("ssd_offload_path", s.last_error)
        self.assertEqual(s.setup("h", "P2PHANDSHAKE", 0, DEFAULT_LOCAL_BUFFER_SIZE, PROTO, "",
                                 "127.0.0.1:%d" % self.meta.port, None, enable_ssd_offload=True,
                                 ssd_offload_path=self.dir), INVALID_PARAMS, "nothing lent, nothing to spill")
        self.assertIn("global_segment_size", s.last_error)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--store-service"]:
        store_service_main(sys.argv[2])
    else:
        mmctest.main()
