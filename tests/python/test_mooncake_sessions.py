"""mooncake.store's session calls (Mooncake's layer-wise API) against a real mmc-metaserver: put sessions written
range by range and published or revoked, get sessions read range by range, from several threads and across two
stores, with Mooncake's codes for what is wrong; and vLLM's layer-wise save (vllm-project/vllm
vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/, read at 2b9c5bd: its session calls in its order and
with its arguments, written as our own code)."""
import threading
import time
import unittest

import numpy as np

import mmctest
from mooncake import store as mc
from mooncake.store import MooncakeDistributedStore, ReplicateConfig

PROTO = {"host_tcp": "tcp", "host_shm": "shm", "host_rdma": "rdma"}.get(mmctest.PROTOCOL, mmctest.PROTOCOL)
LAYERS, PAGE = 6, 8192  # a page of one layer's KV, in bytes


def new_store(meta, lend=64 << 20):
    s = MooncakeDistributedStore()
    rc = s.setup("localhost", "P2PHANDSHAKE", lend, 16 << 20, PROTO, "", "127.0.0.1:%d" % meta.port)
    assert rc == 0, (rc, s.last_error)
    return s


def pages(n, seed):
    """n objects of LAYERS pages each, as LAYERS arrays (one per layer, n pages each) of distinct bytes."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (n, PAGE), dtype=np.uint8) for _ in range(LAYERS)]


def layer_ranges(bufs, layer, n):
    """The range call's arguments for one layer of n objects: each key's page of that layer, at its offset."""
    return ([[bufs[layer][i].ctypes.data] for i in range(n)], [[PAGE]] * n, [[layer * PAGE]] * n)


class Sessions(mmctest.ServerTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.a = new_store(cls.meta)  # the writer, lending memory
        cls.b = new_store(cls.meta, lend=0)  # a reader lending none

    @classmethod
    def tearDownClass(cls):
        cls.a.close()
        cls.b.close()
        super().tearDownClass()

    def keys(self, n):
        return ["%s/%d" % (self.id(), i) for i in range(n)]

    def write(self, keys, bufs):
        n = len(keys)
        self.assertEqual(self.a.batch_put_session_start(keys, [LAYERS * PAGE] * n), [0] * n)
        for layer in range(LAYERS):
            self.assertEqual(self.a.batch_put_from_multi_buffer_ranges(keys, *layer_ranges(bufs, layer, n)),
                             [PAGE] * n)
        self.assertEqual(self.a.batch_put_session_end(keys), [0] * n)

    def test_layer_by_layer_there_and_back(self):
        keys, src = self.keys(5), pages(5, 1)
        self.write(keys, src)
        self.assertEqual(self.b.batch_is_exist(keys), [1] * 5)
        dst = [np.zeros_like(x) for x in src]
        self.assertEqual(self.b.batch_get_session_start(keys), [0] * 5)
        for layer in reversed(range(LAYERS)):  # any order
            self.assertEqual(self.b.batch_get_into_multi_buffer_ranges(keys, *layer_ranges(dst, layer, 5)),
                             [PAGE] * 5)
        self.assertEqual(self.b.batch_get_session_end(keys), 0)
        for s, d in zip(src, dst):
            self.assertTrue(np.array_equal(s, d))
        # the whole object through the plain get: the ranges landed where they were meant to
        whole = np.zeros(LAYERS * PAGE, dtype=np.uint8)
        self.assertEqual(self.b.get_into(keys[2], whole.ctypes.data, whole.nbytes), whole.nbytes)
        self.assertTrue(np.array_equal(whole.reshape(LAYERS, PAGE), np.stack([x[2] for x in src])))

    def test_several_ranges_per_key_and_part_of_a_page(self):
        keys, src = self.keys(2), pages(2, 2)
        self.write(keys, src)
        half = PAGE // 2
        out = np.zeros((2, 3, half), dtype=np.uint8)
        self.assertEqual(self.b.batch_get_session_start(keys), [0, 0])
        ptrs = [[out[i, j].ctypes.data for j in range(3)] for i in range(2)]
        offsets = [[0, 3 * PAGE + half, (LAYERS - 1) * PAGE + half]] * 2
        self.assertEqual(self.b.batch_get_into_multi_buffer_ranges(keys, ptrs, [[half] * 3] * 2, offsets),
                         [3 * half] * 2)
        self.b.batch_get_session_end(keys)
        for i in range(2):
            self.assertTrue(np.array_equal(out[i, 0], src[0][i][:half]))
            self.assertTrue(np.array_equal(out[i, 1], src[3][i][half:]))
            self.assertTrue(np.array_equal(out[i, 2], src[LAYERS - 1][i][half:]))

    def test_an_unfinished_object_is_invisible_and_a_revoked_one_gone(self):
        keys, src = self.keys(2), pages(2, 3)
        self.assertEqual(self.a.batch_put_session_start(keys, [LAYERS * PAGE] * 2), [0, 0])
        self.assertEqual(self.a.batch_put_from_multi_buffer_ranges(keys, *layer_ranges(src, 0, 2)), [PAGE] * 2)
        self.assertEqual(self.b.batch_is_exist(keys), [0, 0])
        self.assertEqual(self.b.batch_get_session_start(keys), [mc.OBJECT_NOT_FOUND] * 2)
        self.assertEqual(self.a.batch_put_session_end(keys[:1]), [0])
        self.assertEqual(self.a.batch_put_session_revoke(keys[1:]), [0])
        self.assertEqual(self.b.batch_is_exist(keys), [1, 0])
        # ended and revoked: no session left for either
        self.assertEqual(self.a.batch_put_from_multi_buffer_ranges(keys, *layer_ranges(src, 1, 2)),
                         [mc.OBJECT_NOT_FOUND] * 2)
        self.assertEqual(self.a.batch_put_session_end(keys), [mc.OBJECT_NOT_FOUND] * 2)
        self.assertEqual(self.a.batch_put_session_revoke(keys), [mc.OBJECT_NOT_FOUND] * 2)

    def test_what_is_wrong_gets_its_code_and_the_rest_goes_on(self):
        keys, src = self.keys(3), pages(3, 4)
        # a zero size; a key twice (started once: both answer as the first)
        self.assertEqual(self.a.batch_put_session_start(keys[:2] + keys[:1], [LAYERS * PAGE, 0, 4096]),
                         [0, mc.INVALID_PARAMS, 0])
        # started again: it goes on with its allocation; with another size it cannot
        self.assertEqual(self.a.batch_put_session_start(keys[:1], [LAYERS * PAGE]), [0])
        self.assertEqual(self.a.batch_put_session_start(keys[:1], [PAGE]), [mc.NO_AVAILABLE_HANDLE])
        ptrs, sizes, _ = layer_ranges(src, 0, 3)
        # past the object's end, no session: those keys fail, nothing of theirs is written, the others are
        other = "%s/other" % self.id()
        self.assertEqual(self.a.batch_put_session_start([other], [PAGE]), [0])
        res = self.a.batch_put_from_multi_buffer_ranges(keys + [other], ptrs + ptrs[:1], sizes + sizes[:1],
                                                        [[LAYERS * PAGE - 1], [0], [0], [0]])
        self.assertEqual(res, [mc.INVALID_PARAMS, mc.OBJECT_NOT_FOUND, mc.OBJECT_NOT_FOUND, PAGE])
        # a NULL buffer
        self.assertEqual(self.a.batch_put_from_multi_buffer_ranges([keys[0], other], [[0], ptrs[0]], sizes[:2],
                                                                   [[0], [0]]), [mc.INVALID_PARAMS, PAGE])
        with self.assertRaises(TypeError):  # a negative size, as a pybind11 binding refuses a size_t
            self.a.batch_put_from_multi_buffer_ranges([other], ptrs[:1], [[-1]], [[0]])
        self.assertEqual(self.a.batch_put_session_revoke([other]), [0])
        self.assertEqual(self.a.batch_put_from_multi_buffer_ranges(keys[:1], ptrs[:1], sizes, [[0]]),
                         [mc.INVALID_PARAMS])  # lists that do not line up
        self.assertEqual(self.a.batch_put_session_revoke(keys[:1]), [0])
        # a replica count one allocation cannot give
        c = ReplicateConfig()
        c.replica_num = 2
        self.assertEqual(self.a.batch_put_session_start(keys[:1], [PAGE], c), [mc.INVALID_PARAMS])
        with self.assertRaises(TypeError):
            self.a.batch_put_session_start(keys[:1], [PAGE], "config")
        # reads: no session, a range past the object, an end of keys never started (skipped)
        self.write(keys[2:], [x[2:] for x in src])
        self.assertEqual(self.b.batch_get_into_multi_buffer_ranges(keys[2:], [[src[0][2].ctypes.data]], [[PAGE]],
                                                                   [[0]]), [mc.OBJECT_NOT_FOUND])
        self.assertEqual(self.b.batch_get_session_start(keys[1:]), [mc.OBJECT_NOT_FOUND, 0])
        out = np.zeros(PAGE, dtype=np.uint8)
        self.assertEqual(self.b.batch_get_into_multi_buffer_ranges(keys[2:], [[out.ctypes.data]], [[PAGE]],
                                                                   [[LAYERS * PAGE - PAGE + 1]]), [mc.INVALID_PARAMS])
        self.assertEqual(self.b.batch_get_session_end(keys), 0)
        self.assertEqual(self.b.batch_get_session_end(keys), 0)  # twice: nothing open, nothing to do

    def test_a_key_another_store_writes_fails_alone(self):
        """Two instances saving one prefix at once: the second's ranges of the first's key fail, the rest of its
        call goes on, and its revoke leaves the first's allocation alone."""
        keys, src = self.keys(2), pages(2, 13)
        self.assertEqual(self.b.batch_put_session_start(keys[:1], [LAYERS * PAGE]), [0])  # the other instance
        self.assertEqual(self.a.batch_put_session_start(keys, [LAYERS * PAGE] * 2), [0, 0])
        res = self.a.batch_put_from_multi_buffer_ranges(keys, *layer_ranges(src, 0, 2))
        self.assertLess(res[0], 0)
        self.assertEqual(res[1], PAGE)
        self.assertEqual(self.a.batch_put_session_revoke(keys[:1]), [0])
        for layer in range(LAYERS):
            self.assertEqual(self.b.batch_put_from_multi_buffer_ranges(keys[:1], *layer_ranges(src, layer, 1)),
                             [PAGE])
        self.assertEqual(self.b.batch_put_session_end(keys[:1]), [0])
        self.assertEqual(self.a.batch_put_session_revoke(keys[1:]), [0])
        out = np.zeros((LAYERS, PAGE), dtype=np.uint8)
        self.assertEqual(self.a.get_into(keys[0], out.ctypes.data, out.nbytes), out.nbytes)
        self.assertTrue(np.array_equal(out, np.stack([x[0] for x in src])))

    def test_an_existing_key_answers_as_stored(self):
        keys, src = self.keys(1), pages(1, 5)
        self.write(keys, src)
        other = pages(1, 6)
        self.write(keys, other)  # same key again: accepted, the stored object stays
        out = np.zeros((LAYERS, PAGE), dtype=np.uint8)
        self.assertEqual(self.b.get_into(keys[0], out.ctypes.data, out.nbytes), out.nbytes)
        self.assertTrue(np.array_equal(out, np.stack([x[0] for x in src])))

    def test_a_removed_object_s_lease_keeps_the_bytes_until_the_end(self):
        keys, src = self.keys(1), pages(1, 7)
        self.write(keys, src)
        self.assertEqual(self.b.batch_get_session_start(keys), [0])
        self.assertEqual(self.a.remove(keys[0]), 0)
        out = [np.zeros_like(x) for x in src]
        for layer in range(LAYERS):
            self.assertEqual(self.b.batch_get_into_multi_buffer_ranges(keys, *layer_ranges(out, layer, 1)), [PAGE])
        for s, d in zip(src, out):
            self.assertTrue(np.array_equal(s, d))
        # started again, the key is gone: its session ends with that answer
        self.assertEqual(self.b.batch_get_session_start(keys), [mc.OBJECT_NOT_FOUND])
        self.assertEqual(self.b.batch_get_into_multi_buffer_ranges(keys, *layer_ranges(out, 0, 1)),
                         [mc.OBJECT_NOT_FOUND])
        self.assertEqual(self.b.batch_get_session_end(keys), 0)

    def test_threads_write_and_read_layers_of_shared_sessions(self):
        """Mooncake's sessions are the store's: here each thread moves some layers of every key."""
        keys, src = self.keys(16), pages(16, 8)
        self.assertEqual(self.a.batch_put_session_start(keys, [LAYERS * PAGE] * 16), [0] * 16)
        errors = []

        def run(call, bufs, layers):
            try:
                for layer in layers:
                    res = call(keys, *layer_ranges(bufs, layer, 16))
                    if res != [PAGE] * 16:
                        errors.append((layer, res))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        def in_threads(call, bufs):
            ts = [threading.Thread(target=run, args=(call, bufs, range(t, LAYERS, 3))) for t in range(3)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()

        in_threads(self.a.batch_put_from_multi_buffer_ranges, src)
        self.assertEqual(self.a.batch_put_session_end(keys), [0] * 16)
        dst = [np.zeros_like(x) for x in src]
        self.assertEqual(self.b.batch_get_session_start(keys), [0] * 16)
        in_threads(self.b.batch_get_into_multi_buffer_ranges, dst)
        self.assertEqual(self.b.batch_get_session_end(keys), 0)
        self.assertEqual(errors, [])
        for s, d in zip(src, dst):
            self.assertTrue(np.array_equal(s, d))

    def test_a_page_two_loads_share_ends_with_the_last(self):
        """Two requests loading the same page (a shared prefix) each start and end its get session: the first end
        leaves the second's reads leased (it used to end the lease under them, and the object could go); a
        refresh is no start of its own."""
        keys, src = self.keys(1), pages(1, 11)
        self.write(keys, src)
        self.assertEqual(self.b.batch_get_session_start(keys), [0])
        self.assertEqual(self.b.batch_get_session_start(keys), [0])
        self.assertEqual(self.b.batch_get_session_refresh(keys), [0])
        self.assertEqual(self.b.batch_get_session_end(keys), 0)
        out = [np.zeros_like(x) for x in src]
        for layer in range(LAYERS):
            self.assertEqual(self.b.batch_get_into_multi_buffer_ranges(keys, *layer_ranges(out, layer, 1)), [PAGE],
                             "the other load's session is open")
        self.assertTrue(all(np.array_equal(s, d) for s, d in zip(src, out)))
        self.assertEqual(self.b.batch_get_session_end(keys), 0)
        self.assertEqual(self.b.batch_get_into_multi_buffer_ranges(keys, *layer_ranges(out, 0, 1)),
                         [mc.OBJECT_NOT_FOUND], "ended with the last end")

    def test_refresh_and_calls_before_setup(self):
        keys, src = self.keys(1), pages(1, 9)
        self.write(keys, src)
        self.assertEqual(self.b.batch_get_session_refresh(keys), [mc.OBJECT_NOT_FOUND])
        self.assertEqual(self.b.batch_get_session_start(keys), [0])
        self.assertEqual(self.b.batch_get_session_refresh(keys), [0])
        self.assertEqual(self.b.batch_get_session_end(keys), 0)
        s = MooncakeDistributedStore()
        self.assertEqual(s.batch_put_session_start(keys, [PAGE]), [mc.INVALID_PARAMS])
        self.assertEqual(s.batch_get_session_start(keys), [mc.INVALID_PARAMS])
        self.assertEqual(s.batch_get_into_multi_buffer_ranges(keys, [[1]], [[1]], [[0]]), [mc.INVALID_PARAMS])
        self.assertEqual(s.batch_put_session_end(keys), [mc.INVALID_PARAMS])
        self.assertEqual(s.batch_get_session_end(keys), mc.INVALID_PARAMS)

    def test_vllm_layerwise_save_and_load(self):
        """vLLM's layer-wise save: start every new key's session with the object's whole size and the connector's
        ReplicateConfig; each layer's range put, a key whose range fails dropped from later layers; end, and
        revoke what did not end. Its load: start, a range get per layer (< 0 failed), end."""
        keys, src = ["%s@tp_rank:0@pcp0@dcp0@pp_rank:0@group:0@%032x" % ("Qwen3-0.6B", i) for i in range(4)], \
            pages(4, 10)
        config = ReplicateConfig()
        config.replica_num = 1
        config.preferred_segment = self.a.get_hostname()
        exist = self.a.batch_is_exist(keys)
        new = [k for k, e in zip(keys, exist) if e != 1]
        started = self.a.batch_put_session_start(new, [LAYERS * PAGE] * len(new), config)
        live = [k for k, r in zip(new, started) if r == 0]
        self.assertEqual(live, keys)
        for layer in range(LAYERS):
            idx = [keys.index(k) for k in live]
            res = self.a.batch_put_from_multi_buffer_ranges(
                live, [[src[layer][i].ctypes.data] for i in idx], [[PAGE]] * len(idx), [[layer * PAGE]] * len(idx))
            live = [k for k, r in zip(live, res) if r >= 0]
        ended = self.a.batch_put_session_end(live)
        failed = [k for k, r in zip(live, ended) if r != 0]
        if failed:
            self.a.batch_put_session_revoke(failed)
        self.assertEqual(failed, [])
        dst = [np.zeros_like(x) for x in src]
        self.assertEqual(self.b.batch_get_session_start(keys), [0] * 4)
        for layer in range(LAYERS):
            res = self.b.batch_get_into_multi_buffer_ranges(keys, *layer_ranges(dst, layer, 4))
            self.assertFalse([r for r in res if r < 0])
        self.b.batch_get_session_end(keys)
        for s, d in zip(src, dst):
            self.assertTrue(np.array_equal(s, d))


class SsdTier(mmctest.ServerTest):
    """A get session of an object on the SSD tier (moved there by its owner): the start brings it back to DRAM,
    since ranges move memory to memory."""

    def test_a_session_of_an_object_on_ssd(self):
        import os
        import tempfile
        import mmc
        cfg = mmc.LocalConfig()
        cfg.meta_service_url, cfg.protocol, cfg.dram_size = self.meta.url, mmctest.PROTOCOL, 64 << 20
        cfg.ssd_path, cfg.ssd_size = os.path.join(tempfile.mkdtemp(prefix="mmc-ssd-"), "tier"), 64 << 20
        owner = mmc.DistributedObjectStore()
        self.assertEqual((owner.setup(cfg), owner.init(0, True)), (0, 0))
        self.addCleanup(owner.close)
        src = pages(1, 12)
        whole = np.stack([x[0] for x in src])
        self.assertEqual(owner.put("ssd/k", whole.tobytes()), 0)
        self.assertEqual(owner.evict_keys(["ssd/k"]), 0)
        reader = new_store(self.meta, lend=0)
        self.addCleanup(reader.close)
        self.assertTrue(reader.get_replica_desc("ssd/k")[0].is_disk_replica())
        self.assertEqual(reader.batch_get_session_start_with_sources(["ssd/k", "ssd/none"]),
                         ([0, mc.OBJECT_NOT_FOUND], ["local_disk", None]))
        self.assertEqual(reader.batch_get_session_start_with_sources(["ssd/k"]), ([0], ["memory"]))  # in DRAM now
        dst = [np.zeros_like(x) for x in src]
        for layer in range(LAYERS):
            self.assertEqual(reader.batch_get_into_multi_buffer_ranges(["ssd/k"], *layer_ranges(dst, layer, 1)),
                             [PAGE])
        self.assertEqual(reader.batch_get_session_end(["ssd/k"]), 0)
        self.assertTrue(np.array_equal(np.stack([x[0] for x in dst]), whole))


class ShortLeases(mmctest.ServerTest):
    """A session outliving its lease: its ranges fail with LEASE_EXPIRED and move nothing."""
    server_env = ("ock.mmc.meta.lease_ttl_ms=1000",)
    PAST = 1.5  # seconds: past a lease, by the client's clock and the server's sweep

    def start_at(self, s, prefix, was):
        """The key of a one-page put session that lands at GVA was, once the server has reclaimed that space
        (its sessions that land elsewhere are revoked)."""
        for i in range(60):  # the space comes back once this store has been seen running a while
            time.sleep(0.1)  # deliberate: the server's reclaim runs on its real clock
            key = "%s%d" % (prefix, i)
            self.assertEqual(s.batch_put_session_start([key], [PAGE]), [0])
            if s._sessions.puts[key.encode()][0] == was:
                return key
            self.assertEqual(s.batch_put_session_revoke([key]), [0])
        self.fail("the space at %#x was not allocated again" % was)

    def test_ranges_past_the_lease(self):
        s = new_store(self.meta)
        self.addCleanup(s.close)
        src = pages(1, 11)
        self.assertEqual(s.batch_put_session_start(["late/w"], [LAYERS * PAGE]), [0])
        time.sleep(self.PAST)  # deliberate: the lease runs out by the client's clock, which only time moves
        self.assertEqual(s.batch_put_from_multi_buffer_ranges(["late/w"], *layer_ranges(src, 0, 1)),
                         [mc.LEASE_EXPIRED])
        self.assertEqual(s.batch_put_session_revoke(["late/w"]), [0])  # reclaimed or dropped now: gone either way
        self.assertEqual(s.is_exist("late/w"), 0)
        self.assertEqual(s.put("late/r", bytes(LAYERS * PAGE)), 0)
        self.assertEqual(s.batch_get_session_start(["late/r"]), [0])
        time.sleep(self.PAST)  # deliberate, as above
        out = np.full(PAGE, 7, dtype=np.uint8)
        self.assertEqual(s.batch_get_into_multi_buffer_ranges(["late/r"], [[out.ctypes.data]], [[PAGE]], [[0]]),
                         [mc.LEASE_EXPIRED])
        self.assertTrue((out == 7).all(), "an expired read wrote the buffer")
        self.assertEqual(s.batch_get_session_end(["late/r"]), 0)

    def test_a_stale_session_never_reaches_the_next_key_s_object(self):
        """A session kept past its lease, once its space was allocated again to the same store for another key:
        its ranges fail and move nothing, either way."""
        s = new_store(self.meta)
        self.addCleanup(s.close)
        old, new = np.full(PAGE, 0x11, dtype=np.uint8), np.full(PAGE, 0x22, dtype=np.uint8)
        self.assertEqual(s.batch_put_session_start(["stale/k"], [PAGE]), [0])
        was = s._sessions.puts[b"stale/k"][0]
        key = self.start_at(s, "stale/j", was)  # the lease runs out, the space goes to the next key
        self.assertEqual(s.batch_put_from_multi_buffer_ranges([key], [[new.ctypes.data]], [[PAGE]], [[0]]), [PAGE])
        self.assertEqual(s.batch_put_from_multi_buffer_ranges(["stale/k"], [[old.ctypes.data]], [[PAGE]], [[0]]),
                         [mc.LEASE_EXPIRED])
        self.assertEqual(s.batch_put_session_end([key]), [0])
        out = np.zeros(PAGE, dtype=np.uint8)
        self.assertEqual(s.get_into(key, out.ctypes.data, PAGE), PAGE)
        self.assertTrue((out == 0x22).all(), "a stale put session wrote another key's object")
        # a stale get session: its object removed, the next key's object put in its space and leased
        self.assertEqual(s.batch_get_session_start([key]), [0])
        time.sleep(self.PAST)  # deliberate: past the read lease, by the client's clock too
        self.assertEqual(s.remove(key), 0)
        third = np.full(PAGE, 0x33, dtype=np.uint8)
        other = self.start_at(s, "stale/o", was)
        self.assertEqual(s.batch_put_from_multi_buffer_ranges([other], [[third.ctypes.data]], [[PAGE]], [[0]]),
                         [PAGE])
        self.assertEqual(s.batch_put_session_end([other]), [0])
        self.assertEqual(s.batch_get_session_start([other]), [0])
        out[:] = 7
        self.assertEqual(s.batch_get_into_multi_buffer_ranges([key], [[out.ctypes.data]], [[PAGE]], [[0]]),
                         [mc.LEASE_EXPIRED])
        self.assertTrue((out == 7).all(), "a stale get session read another key's object")

    def test_a_refreshed_session_reads_where_its_object_is_now(self):
        """A get session kept past its lease while its key was removed and put again elsewhere (its old space
        partly another key's): a refresh follows the key to its new place; a range before it is refused."""
        s = new_store(self.meta)
        self.addCleanup(s.close)
        first = np.concatenate([np.full(PAGE, 0x11, np.uint8), np.full(PAGE, 0x22, np.uint8)])
        again = np.concatenate([np.full(PAGE, 0x44, np.uint8), np.full(PAGE, 0x55, np.uint8)])

        def put(key, data):
            self.assertEqual(s.batch_put_session_start([key], [data.nbytes]), [0])
            self.assertEqual(s.batch_put_from_multi_buffer_ranges([key], [[data.ctypes.data]], [[data.nbytes]],
                                                                  [[0]]), [data.nbytes])
            self.assertEqual(s.batch_put_session_end([key]), [0])

        put("moved/k", first)
        self.assertEqual(s.batch_get_session_start(["moved/k"]), [0])
        was = s._sessions.gets[b"moved/k"][0]
        time.sleep(self.PAST)  # deliberate: past the read lease
        self.assertEqual(s.remove("moved/k"), 0)
        filler = self.start_at(s, "moved/f", was)  # a one-page object takes the old place's first page
        self.assertEqual(s.batch_put_session_revoke([filler]), [0])
        put(filler, np.full(PAGE, 0x99, np.uint8))
        put("moved/k", again)
        out = np.full(PAGE, 7, np.uint8)
        ranges = ([[out.ctypes.data]], [[PAGE]], [[PAGE]])  # the key's second page
        self.assertEqual(s.batch_get_into_multi_buffer_ranges(["moved/k"], *ranges), [mc.LEASE_EXPIRED])
        self.assertTrue((out == 7).all())
        self.assertEqual(s.batch_get_session_refresh(["moved/k"]), [0])
        self.assertEqual(s.batch_get_into_multi_buffer_ranges(["moved/k"], *ranges), [PAGE])
        self.assertTrue((out == 0x55).all(), "the refreshed session read another place")
        self.assertEqual(s.batch_get_session_end(["moved/k"]), 0)


if __name__ == "__main__":
    mmctest.main()
