"""vLLM's MooncakeStoreConnector (vllm-project/vllm vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/
worker.py, read at 003df29, and its group semantics as of e131732) replayed against mmc through python/mooncake: its
store calls in its order and with its arguments, written as our own code.

A kv_producer worker (a child process, mode "embedded": it lends memory) registers its KV cache tensors and saves
blocks (batch_is_exist to skip stored ones, then batch_put_from_multi_buffers with its ReplicateConfig, whose
group_ids it sets to one id per key before each put when kv_connector_extra_config's enable_group_semantics is
"true" and ReplicateConfig has the field). A
kv_consumer worker (this process, mode "standalone-store": global_segment_size 0) looks blocks up with
batch_is_exist, logs their tiers with batch_get_replica_desc, loads them with batch_get_into_multi_buffers, and
resets the store with remove_all(force=True), as its LookupKeyServer does on RESET_MSG.

  test_vllm_replay.py --producer   (the child: saves, prints "ready", waits for stdin to close)
"""
import json
import os
import re
import sys
import tempfile
import unittest

import torch

import mmctest

NUM_BLOCKS, BLOCK_SIZE, HEADS, HEAD_DIM, LAYERS = 16, 16, 2, 64, 3
SAVED = 6  # blocks the producer saves
MODEL = "Qwen3-0.6B"
PROTO = {"host_tcp": "tcp", "host_shm": "shm", "host_rdma": "rdma"}.get(mmctest.PROTOCOL, mmctest.PROTOCOL)


def parse_size(v):
    """vLLM's _parse_size: an int, or a number with gb / mb / kb / b."""
    if isinstance(v, int):
        return v
    m = re.match(r"^\s*([\d.]+)\s*(gb|mb|kb|b)?\s*$", v.strip().lower())
    return int(float(m.group(1)) * {"gb": 1 << 30, "mb": 1 << 20, "kb": 1 << 10, "b": 1}[m.group(2) or "b"])


def kv_caches():
    """FlashAttention's layout per layer, (2, num_blocks, block_size, heads, head_dim); block b of layer l holds
    values derived from (l, b) so a load can be checked."""
    out = {}
    for layer in range(LAYERS):
        t = torch.zeros(2, NUM_BLOCKS, BLOCK_SIZE, HEADS, HEAD_DIM, dtype=torch.float16)
        for b in range(NUM_BLOCKS):
            t[:, b] = layer * 100 + b + torch.arange(BLOCK_SIZE * HEADS * HEAD_DIM).reshape(
                BLOCK_SIZE, HEADS, HEAD_DIM) / 1000
        out["model.layers.%d.self_attn" % layer] = t
    return out


def block_key(block_hash):
    # PoolKey: model@tp_rank@pcp@dcp@pp_rank@group@hash
    return "%s@tp_rank:0@pcp0@dcp0@pp_rank:0@group:0@%s" % (MODEL, block_hash.hex())


def block_hash(i):
    return (0xB10C0000 + i).to_bytes(16, "big")


class Worker:
    """MooncakeStoreWorker's store calls."""

    def __init__(self, extra_config=None):
        from mooncake.store import MooncakeDistributedStore, ReplicateConfig
        with open(os.environ["MOONCAKE_CONFIG_PATH"]) as f:
            cfg = json.load(f)
        self.mode = cfg.get("mode", "embedded")
        gss, lbs = parse_size(cfg.get("global_segment_size", 4 << 30)), parse_size(cfg.get("local_buffer_size",
                                                                                        4 << 30))
        assert (self.mode == "embedded") == (gss > 0)  # vLLM's __post_init__
        self.store = MooncakeDistributedStore()
        ret = self.store.setup("127.0.0.1", cfg.get("metadata_server", ""), gss, lbs, cfg.get("protocol", "rdma"),
                               cfg.get("device_name", ""), cfg.get("master_server_address", ""))
        if ret != 0:
            raise RuntimeError("Initialize MooncakeDistributedStore failed.")
        self.replicate_config = ReplicateConfig()
        if cfg.get("preferred_segment"):
            self.replicate_config.preferred_segment = cfg["preferred_segment"]
        extra = extra_config or {}
        self.group_semantics = str(extra.get("enable_group_semantics", "")).lower() == "true" and (
            hasattr(ReplicateConfig, "group_ids") or hasattr(self.replicate_config, "group_ids"))
        self.addrs, self.block_lens, self.caches = [], [], None

    def register_kv_caches(self, caches):
        """register_buffer per storage, then the segments the layout gives (K and V apart for FlashAttention)."""
        self.caches = caches
        for cache in caches.values():
            st = cache.untyped_storage() if hasattr(cache, "untyped_storage") else cache.storage()  # torch < 2
            base, region = st.data_ptr(), st.nbytes()
            assert self.store.register_buffer(base, region) == 0
            el, page = cache.element_size(), region // NUM_BLOCKS
            outer = [d for d in range(cache.ndim) if cache.stride(d) * el > page]
            seg_stride = cache.stride(outer[0]) * el
            for idx in range(cache.shape[outer[0]]):
                self.addrs.append(base + idx * seg_stride)
                self.block_lens.append(seg_stride // NUM_BLOCKS)

    def block_buffers(self, block_id):
        return ([a + block_id * n for a, n in zip(self.addrs, self.block_lens)], list(self.block_lens))

    def save(self, hashes, block_ids):
        """The sending thread: dedup with batch_is_exist, then one batch_put_from_multi_buffers."""
        keys = [block_key(h) for h in hashes]
        missing = [i for i, e in enumerate(self.store.batch_is_exist(keys)) if e != 1]
        if not missing:
            return []
        bufs = [self.block_buffers(block_ids[i]) for i in missing]
        if self.group_semantics:  # _make_mooncake_group_id: the prefix chunk, without the shard dimensions
            self.replicate_config.group_ids = ["vllm-mooncake-store:%s@%s" % (MODEL, hashes[i].hex()) for i in missing]
        return self.store.batch_put_from_multi_buffers([keys[i] for i in missing], [b[0] for b in bufs],
                                                       [b[1] for b in bufs], self.replicate_config)

    def lookup(self, hashes):
        res = self.store.batch_is_exist([block_key(h) for h in hashes])
        return next((i for i, r in enumerate(res) if r != 1), len(res)) * BLOCK_SIZE

    def tiers(self, keys):
        """_get_replica_tiers_by_key: memory / disk / unknown from the first replica."""
        descs = self.store.batch_get_replica_desc(keys)
        out = {}
        for k in keys:
            r = descs.get(k)
            out[k] = ("unknown" if not r else "memory" if r[0].is_memory_replica() else
                      "disk" if r[0].is_disk_replica() else "unknown")
        return out

    def load(self, hashes, block_ids):
        keys = [block_key(h) for h in hashes]
        tiers = self.tiers(keys)
        bufs = [self.block_buffers(b) for b in block_ids]
        res = self.store.batch_get_into_multi_buffers(keys, [b[0] for b in bufs], [b[1] for b in bufs])
        return tiers, res

    def reset(self):
        return self.store.remove_all(force=True)

    def close(self):
        self.store.close()


def write_config(path, master, mode, gss):
    with open(path, "w") as f:
        json.dump({"metadata_server": "P2PHANDSHAKE", "master_server_address": master, "protocol": PROTO,
                   "device_name": "", "mode": mode, "global_segment_size": gss, "local_buffer_size": "16MB"}, f)


def producer_main():
    w = Worker({"enable_group_semantics": "true"})
    assert w.group_semantics
    w.register_kv_caches(kv_caches())
    hashes = [block_hash(i) for i in range(SAVED)]
    assert w.save(hashes[:2], [0, 1]) == [0, 0]
    assert w.save(hashes, list(range(SAVED))) == [0] * (SAVED - 2)  # the first two are skipped as stored
    print("ready", flush=True)
    sys.stdin.read()
    w.close()


class Replay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.meta = mmctest.Metaserver()
        cls.dir = tempfile.mkdtemp(prefix="mmc-vllm-")
        master = "127.0.0.1:%d" % cls.meta.port
        producer_cfg, cls.consumer_cfg = os.path.join(cls.dir, "producer.json"), os.path.join(cls.dir, "c.json")
        write_config(producer_cfg, master, "embedded", "64MB")
        write_config(cls.consumer_cfg, master, "standalone-store", 0)
        env = dict(os.environ, MOONCAKE_CONFIG_PATH=producer_cfg)
        try:
            cls.producer = mmctest.Peer(os.path.abspath(__file__), "--producer", env=env)
        except RuntimeError:
            cls.meta.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        rc = cls.producer.stop()
        cls.meta.stop()
        assert rc == 0, "the producer exited with %d" % rc

    def test_lookup_load_reset(self):
        os.environ["MOONCAKE_CONFIG_PATH"] = self.consumer_cfg
        self.addCleanup(os.environ.pop, "MOONCAKE_CONFIG_PATH")
        w = Worker()
        self.addCleanup(w.close)
        caches = {k: torch.zeros_like(v) for k, v in kv_caches().items()}
        w.register_kv_caches(caches)
        hashes = [block_hash(i) for i in range(SAVED + 2)]
        self.assertEqual(w.lookup(hashes), SAVED * BLOCK_SIZE)
        # load the saved blocks into other blocks of this worker's cache
        dst = list(range(NUM_BLOCKS - SAVED, NUM_BLOCKS))
        tiers, res = w.load(hashes[:SAVED], dst)
        self.assertEqual(set(tiers.values()), {"memory"})
        self.assertEqual(res, [sum(w.block_lens)] * SAVED)  # bytes read per key
        want = kv_caches()
        for name, cache in caches.items():
            for i, b in enumerate(dst):
                self.assertTrue(torch.equal(cache[:, b], want[name][:, i]), (name, b))
        tiers, res = w.load(hashes[SAVED:], dst[:2])
        self.assertEqual(set(tiers.values()), {"unknown"})
        self.assertTrue(all(r < 0 for r in res))
        # RESET_MSG: remove_all(force=True), then nothing is found
        self.assertGreaterEqual(w.reset(), SAVED)
        self.assertEqual(w.lookup(hashes), 0)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--producer"]:
        producer_main()
    else:
        mmctest.main()
