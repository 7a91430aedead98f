"""SGLang's MooncakeDirectLinker (sgl-project/sglang python/sglang/srt/mem_cache/storage/mooncake_store/
mooncake_direct_linker.py, with the layer-range pools of hybrid_cache/linker_pool_assembler.py, read at 00fe477)
replayed against mmc through python/mooncake: its store calls in its order and with its arguments, written as our
own code. The linker loads KV pages straight into the engine's KV buffers, layer by layer, through Mooncake's get
sessions; it has no fallback when they are missing.

- An offload instance (a child process, lending memory) registers its KV buffers (each tensor's whole storage)
  and offloads pages as MooncakeStore.batch_set_v2 does: batch_is_exist, then the missing pages, one object per
  page holding every layer's K page, then every layer's V page, put with batch_put_from_multi_buffers and a default
  ReplicateConfig.
- A load instance (this process) registers its own KV buffers, looks the pages up (batch_is_exist, the restorable
  prefix), and loads them: batch_get_session_start_with_sources, looked up with getattr (else
  batch_get_session_start), whose answer must be [0] * n and whose sources feed its L4 metrics; per layer one batch_get_into_multi_buffer_ranges of the
  layer's K and V rows at their offsets in the object, whose answer must be each key's summed sizes exactly; and
  batch_get_session_end in a finally. Then page-wise (past --mooncake-page-wise-load-threshold): one range call
  with every layer of every page. And a page gone between lookup and load: the session start says so per key, and
  the linker gives up the load before a byte lands. After a load that succeeded, the tokens it brought in go to
  record_prefetched_tokens, looked up with getattr (_finish_l4_metric).

  test_sglang_direct_replay.py --offload MASTER   (the child: offloads, prints "ready", waits for stdin to close)
"""
import os
import sys
import unittest

import torch

import mmctest

PROTO = {"host_tcp": "tcp", "host_shm": "shm", "host_rdma": "rdma"}.get(mmctest.PROTOCOL, mmctest.PROTOCOL)
PAGE, LAYERS, HEADS, DIM, PAGES = 16, 5, 2, 64, 12
TAG, SUFFIX = "direct", "tp0_cp0_pp0"  # extra_backend_tag; _storage_suffix() of tp 0, cp 0, pp 0
THRESHOLD = 8  # the page-wise load threshold of this replay


def page_keys():
    return ["%s_%064x_%s" % (TAG, 0xD1EC7 + p, SUFFIX) for p in range(PAGES)]


def kv_buffers(seed=None):
    """The device pool's K and V buffers, one per layer, rows of whole pages ([pages, page, heads, dim]); with a
    seed, filled with values that depend on layer, page and K or V."""
    out = []
    for kv in range(2):
        layers = []
        for layer in range(LAYERS):
            t = torch.zeros(PAGES, PAGE, HEADS, DIM, dtype=torch.bfloat16)
            if seed is not None:
                g = torch.Generator().manual_seed(seed * 1000 + kv * 100 + layer)
                t.copy_(torch.randn(PAGES, PAGE, HEADS, DIM, generator=g))
            layers.append(t)
        out.append(layers)
    return out  # out[0]: K per layer, out[1]: V per layer


def row_bytes():
    return PAGE * HEADS * DIM * 2


def setup_store(master):
    from mooncake.store import MooncakeDistributedStore
    s = MooncakeDistributedStore()
    ret = s.setup("localhost", "P2PHANDSHAKE", 64 << 20, 16 << 20, PROTO, "", master, None)
    if ret:
        raise RuntimeError("Failed to setup Mooncake store, error code: %d" % ret)
    return s


def register_buffers(store, buffers):
    """The linker's register_buffers: each tensor's whole storage, once."""
    seen = set()
    for kv in buffers:
        for t in kv:
            # untyped_storage(): torch 2's name; Debian's torch 1.13 has the typed storage, of the same bytes
            st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
            allocation = (int(st.data_ptr()), int(st.nbytes()))
            if allocation in seen:
                continue
            seen.add(allocation)
            result = store.register_buffer(*allocation)
            if result not in (0, None):
                raise RuntimeError("Failed to register GPU KV buffer with Mooncake, error code: %s." % result)


def offload_main(master):
    from mooncake.store import ReplicateConfig
    store = setup_store(master)
    buffers = kv_buffers(seed=7)
    register_buffers(store, buffers)
    keys = page_keys()
    # get_page_buffer_meta of a packed pool: per page, K of every layer, then V of every layer
    ptrs = [[buffers[kv][layer][p].data_ptr() for kv in range(2) for layer in range(LAYERS)] for p in range(PAGES)]
    sizes = [[row_bytes()] * (2 * LAYERS)] * PAGES
    for batch in (range(3), range(PAGES)):  # batch_set_v2: what is stored already is skipped
        exist = store.batch_is_exist([keys[p] for p in batch])
        missing = [p for p, e in zip(batch, exist) if e != 1]
        results = store.batch_put_from_multi_buffers([keys[p] for p in missing], [ptrs[p] for p in missing],
                                                     [sizes[p] for p in missing], ReplicateConfig())
        assert results == [0] * len(missing) and len(missing) == len(batch) - (3 if len(batch) == PAGES else 0)
    print("ready", flush=True)
    sys.stdin.read()
    store.close()


class Linker:
    """The load side of MooncakeDirectLinker over one store and this process's KV buffers."""

    def __init__(self, store, buffers):
        self.store, self.buffers = store, buffers

    def lookup(self, keys):
        exist = self.store.batch_is_exist(keys)
        return next((i for i, e in enumerate(exist) if e != 1), len(exist))

    def layer_range_meta(self, rows, layer):
        """get_prepared_layer_range_meta of a packed pool: per key the layer's K and V rows at their offsets in the
        object (K pages first, then V pages)."""
        n = row_bytes()
        ptrs = [[self.buffers[0][layer][r].data_ptr(), self.buffers[1][layer][r].data_ptr()] for r in rows]
        return ptrs, [[n, n] for _ in rows], [[layer * n, (LAYERS + layer) * n] for _ in rows]

    def start(self, keys):
        start_with_sources = getattr(self.store, "batch_get_session_start_with_sources", None)
        if start_with_sources is None:
            result = list(self.store.batch_get_session_start(keys))
            sources = [None] * len(keys)
        else:
            result, sources = start_with_sources(keys)
            result, sources = list(result), list(sources)
            if len(sources) != len(keys):
                sources = [None] * len(keys)
        self.sources = sources  # the L4 metrics' source per page: "dfs", "local_disk", else none counted
        if result != [0] * len(keys):
            raise RuntimeError("Mooncake get session start failed: keys=%d, results=%s" % (len(keys), result))

    @staticmethod
    def check(result, sizes, what):
        expected = [sum(item) for item in sizes]
        if result is None or isinstance(result, int) or list(result) != expected:
            raise RuntimeError("Mooncake range get failed (%s): %s != %s" % (what, result, expected))

    def load_layer_wise(self, keys, rows, page_wise=False):
        started = []
        try:
            self.start(keys)
            started.append(keys)
            if page_wise and len(keys) >= THRESHOLD:
                all_ptrs, all_sizes, all_offsets = [[] for _ in keys], [[] for _ in keys], [[] for _ in keys]
                for layer in range(LAYERS):
                    ptrs, sizes, offsets = self.layer_range_meta(rows, layer)
                    for i in range(len(keys)):
                        all_ptrs[i].extend(ptrs[i])
                        all_sizes[i].extend(sizes[i])
                        all_offsets[i].extend(offsets[i])
                self.check(self.store.batch_get_into_multi_buffer_ranges(keys, all_ptrs, all_sizes, all_offsets),
                           all_sizes, "page-wise")
            else:
                for layer in range(LAYERS):
                    ptrs, sizes, offsets = self.layer_range_meta(rows, layer)
                    self.check(self.store.batch_get_into_multi_buffer_ranges(keys, ptrs, sizes, offsets), sizes,
                               "layer %d" % layer)
        finally:
            for k in started:
                self.store.batch_get_session_end(k)
        self.finish_metric(len(keys) * PAGE)

    def finish_metric(self, tokens):
        recorder = getattr(self.store, "record_prefetched_tokens", None)
        if recorder is not None and tokens > 0:
            recorder(tokens)


class Replay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.meta = mmctest.Metaserver()
        master = "127.0.0.1:%d" % cls.meta.port
        cls.offloader = mmctest.Peer(os.path.abspath(__file__), "--offload", master)
        cls.store = setup_store(master)
        cls.expected = kv_buffers(seed=7)

    @classmethod
    def tearDownClass(cls):
        cls.store.close()
        rc = cls.offloader.stop()
        cls.meta.stop()
        assert rc == 0, "the offload instance exited with %d" % rc

    def linker(self):
        buffers = kv_buffers()
        register_buffers(self.store, buffers)
        return Linker(self.store, buffers)

    def assert_rows(self, linker, rows, pages):
        for kv in range(2):
            for layer in range(LAYERS):
                for r, p in zip(rows, pages):
                    self.assertTrue(torch.equal(linker.buffers[kv][layer][r], self.expected[kv][layer][p]),
                                    "%s of layer %d, page %d in row %d" % ("KV"[kv], layer, p, r))

    def test_layer_wise_load(self):
        link, keys = self.linker(), page_keys()
        self.assertEqual(link.lookup(keys[:5] + ["%s_%064x_%s" % (TAG, 1, SUFFIX)]), 5)
        rows = [3, 0, 7, 1, 2]  # where the engine put the pages
        link.load_layer_wise(keys[:5], rows)
        self.assert_rows(link, rows, range(5))
        self.assertEqual(link.sources, ["memory"] * 5)  # in memory: no L4 tokens counted
        for kv in range(2):  # rows not loaded stay as they were
            self.assertEqual(int(link.buffers[kv][0][4].abs().sum()), 0)

    def test_page_wise_load(self):
        link, keys = self.linker(), page_keys()
        self.assertEqual(link.lookup(keys), PAGES)
        rows = list(reversed(range(PAGES)))
        before = self.store.counters.prefetched_tokens()
        link.load_layer_wise(keys, rows, page_wise=True)
        self.assert_rows(link, rows, range(PAGES))
        self.assertEqual(self.store.counters.prefetched_tokens() - before, PAGES * PAGE, "the load's tokens")
        self.assertIn("mooncake_client_prefetched_tokens_total", self.store.counters.prometheus())

    def test_a_page_gone_before_the_load(self):
        from mooncake.store import OBJECT_NOT_FOUND
        link, keys = self.linker(), page_keys()
        self.assertEqual(link.lookup(keys), PAGES)
        gone = "%s_%064x_%s" % (TAG, 2, SUFFIX)  # looked up by another request, then evicted
        with self.assertRaisesRegex(RuntimeError, "session start failed.*-704"):
            link.load_layer_wise(keys[:2] + [gone], [0, 1, 2])
        self.assertEqual(self.store.batch_get_session_start([gone]), [OBJECT_NOT_FOUND])
        for kv in range(2):
            for layer in range(LAYERS):
                self.assertEqual(int(link.buffers[kv][layer].abs().sum()), 0, "a failed load wrote a buffer")
        # the keys whose sessions did start are read by the next load as usual
        link.load_layer_wise(keys[:2], [5, 6])
        self.assert_rows(link, [5, 6], range(2))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--offload"]:
        offload_main(sys.argv[2])
    else:
        mmctest.main()
