"""LMCache's Mooncake connector (LMCache/LMCache lmcache/v1/storage_backend/connector/mooncakestore_connector.py,
read at 01aed92) replayed against mmc through python/mooncake: its calls in its order and with its arguments,
written as our own code. A prefill instance (a child process) saves KV chunks, a decode instance (this process)
checks and loads them:

- save_chunk_meta on (LMCache's default): put_parts(key, 28-byte chunk metadata, KV bytes) and
  batch_get_buffer, whose handles LMCache reads with memoryview and torch.frombuffer(offset=28);
- save_chunk_meta off: put_from from the registered pinned buffer and batch_get_into into full-chunk buffers,
  where the last, partial chunk comes back with its own (smaller) byte count.

  test_lmcache_replay.py --prefill CONFIG_JSON   (the child: saves, prints "ready", waits for stdin to close)
"""
import asyncio
import json
import os
import struct
import sys
import tempfile
import unittest

import torch

import mmctest

LAYERS, CHUNK_TOKENS, HIDDEN = 4, 256, 128
DTYPE = torch.float16
META_LEN = 28  # LMCache's METADATA_BYTES_LEN
TOKENS = [CHUNK_TOKENS, CHUNK_TOKENS, CHUNK_TOKENS, 100]  # the last chunk of a prompt is partial
PROTO = {"host_tcp": "tcp", "host_shm": "shm", "host_rdma": "rdma"}.get(mmctest.PROTOCOL, mmctest.PROTOCOL)


def chunk_key(mode, i):
    # CacheEngineKey.to_string(): fmt@model@world_size@worker_id@chunk_hash
    return "vllm@meta-llama/Llama-3.1-8B@1@0@%s%015x" % (mode[0], 0x5eed00 + i)


def chunk(i):
    """The KV of chunk i in LMCache's KV_2LTD layout: (2, layers, tokens, hidden)."""
    g = torch.Generator().manual_seed(1000 + i)
    return torch.randn(2, LAYERS, TOKENS[i], HIDDEN, generator=g).to(DTYPE)


def meta_bytes(length, shape):
    """Our stand-in for LMCache's RemoteMetadata.serialize(): length, shape[4], dtype, format as 7 int32."""
    return struct.pack("<7i", length, *shape, 1, 1)


def meta_read(view):
    length, *rest = struct.unpack("<7i", bytes(view))
    return length, rest[:4]


class Connector:
    """MooncakestoreConnector's store calls: setup from MOONCAKE_CONFIG_PATH's JSON, the replica config, the pinned
    buffer registered once, put / batched_get in either mode, exists, close."""

    def __init__(self, save_chunk_meta, pinned):
        from mooncake.store import MooncakeDistributedStore, ReplicateConfig
        with open(os.environ["MOONCAKE_CONFIG_PATH"]) as f:
            cfg = json.load(f)
        self.save_chunk_meta = save_chunk_meta
        self.timeout = cfg.get("transfer_timeout", 1)
        self.store = MooncakeDistributedStore()
        # LMCache does not look at setup's answer; we do
        self.setup_rc = self.store.setup(cfg.get("local_hostname"), cfg.get("metadata_server"),
                                         cfg.get("global_segment_size", 3355443200),
                                         cfg.get("local_buffer_size", 1073741824), cfg.get("protocol", "tcp"),
                                         cfg.get("device_name", ""), cfg.get("master_server_address"))
        self.replica_config = ReplicateConfig()
        self.replica_config.replica_num = 1
        if cfg.get("prefer_local_alloc", False):
            self.replica_config.preferred_segment = self.store.get_hostname()
        self.pinned = pinned
        self.register_rc = self.store.register_buffer(pinned.data_ptr(), pinned.numel())

    def exists(self, key):
        return self.store.is_exist(key)

    async def put(self, key, kv):
        if self.save_chunk_meta:
            kv_bytes = memoryview(kv.view(torch.uint8).reshape(-1).numpy())
            meta = meta_bytes(len(kv_bytes), list(kv.shape))
            return await asyncio.wait_for(asyncio.to_thread(self.store.put_parts, key, meta, kv_bytes),
                                          timeout=self.timeout)
        return await asyncio.wait_for(
            asyncio.to_thread(self.store.put_from, key, kv.data_ptr(), kv.numel() * kv.element_size(),
                              self.replica_config), timeout=self.timeout)

    async def batched_get(self, keys, slots):
        if self.save_chunk_meta:
            buffers = await asyncio.to_thread(self.store.batch_get_buffer, keys)
            return [None if b is None else self._from_buffer(b) for b in buffers]
        res = await asyncio.to_thread(self.store.batch_get_into, keys, [s.data_ptr() for s in slots],
                                      [s.numel() * s.element_size() for s in slots])
        return [self._partial(s, n) if n > 0 else None for s, n in zip(slots, res)], res

    @staticmethod
    def _from_buffer(buffer):
        view = memoryview(buffer)
        length, shape = meta_read(view[:META_LEN])
        assert len(view) == length + META_LEN
        n = shape[0] * shape[1] * shape[2] * shape[3]
        return torch.frombuffer(buffer, dtype=DTYPE, offset=META_LEN, count=n).reshape(shape).clone()

    @staticmethod
    def _partial(slot, nbytes):
        """reshape_partial_chunk: the tokens nbytes holds, of a full-chunk slot."""
        per_token = 2 * LAYERS * HIDDEN * slot.element_size()
        return slot.view(torch.uint8)[:nbytes].view(DTYPE).reshape(2, LAYERS, nbytes // per_token, HIDDEN)

    def close(self):
        rc = self.store.unregister_buffer(self.pinned.data_ptr())
        self.store.close()
        return rc


def pinned_buffer():
    """The pinned CPU pool LMCache registers once; chunks are slots of it."""
    slot = 2 * LAYERS * CHUNK_TOKENS * HIDDEN * torch.finfo(DTYPE).bits // 8
    return torch.zeros(len(TOKENS) * slot, dtype=torch.uint8), slot


def prefill_main(config):
    os.environ["MOONCAKE_CONFIG_PATH"] = config
    (meta_pool, slot), (raw_pool, _) = pinned_buffer(), pinned_buffer()
    with_meta, raw = Connector(True, meta_pool), Connector(False, raw_pool)
    assert with_meta.setup_rc == 0 and raw.setup_rc == 0 and with_meta.register_rc == 0 and raw.register_rc == 0

    async def save():
        for i in range(len(TOKENS)):
            assert await with_meta.put(chunk_key("meta", i), chunk(i)) == 0
            kv = raw_pool[i * slot:][:chunk(i).numel() * 2].view(DTYPE).reshape(chunk(i).shape)
            kv.copy_(chunk(i))  # the pinned slot the put reads from
            assert await raw.put(chunk_key("raw", i), kv) == 0

    asyncio.run(save())
    print("ready", flush=True)
    sys.stdin.read()
    assert with_meta.close() == 0 and raw.close() == 0


class Replay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.meta = mmctest.Metaserver()
        cls.dir = tempfile.mkdtemp(prefix="mmc-lmcache-")
        cfg = {"local_hostname": "localhost", "metadata_server": "P2PHANDSHAKE", "global_segment_size": 64 << 20,
               "local_buffer_size": 16 << 20, "protocol": PROTO, "device_name": "",
               "master_server_address": "127.0.0.1:%d" % cls.meta.port, "transfer_timeout": 60,
               "prefer_local_alloc": True}
        cls.config = os.path.join(cls.dir, "mooncake.json")
        with open(cls.config, "w") as f:
            json.dump(cfg, f)
        try:
            cls.prefill = mmctest.Peer(os.path.abspath(__file__), "--prefill", cls.config)
        except RuntimeError:
            cls.meta.stop()
            raise
        os.environ["MOONCAKE_CONFIG_PATH"] = cls.config

    @classmethod
    def tearDownClass(cls):
        rc = cls.prefill.stop()
        cls.meta.stop()
        del os.environ["MOONCAKE_CONFIG_PATH"]
        assert rc == 0, "the prefill process exited with %d" % rc

    def decode(self, save_chunk_meta):
        pool, slot = pinned_buffer()
        c = Connector(save_chunk_meta, pool)
        self.addCleanup(c.close)
        self.assertEqual((c.setup_rc, c.register_rc), (0, 0))
        return c, [pool[i * slot:(i + 1) * slot].view(DTYPE) for i in range(len(TOKENS))]

    def test_default_mode_put_parts_and_buffers(self):
        c, _ = self.decode(True)
        keys = [chunk_key("meta", i) for i in range(len(TOKENS))]
        self.assertEqual([c.exists(k) for k in keys], [1] * len(keys))
        got = asyncio.run(c.batched_get(keys + [chunk_key("meta", 99)], None))
        self.assertIsNone(got[-1])  # a miss, not an exception
        for i, t in enumerate(got[:-1]):
            self.assertTrue(torch.equal(t, chunk(i)), i)
        self.assertEqual(got[-2].shape[2], TOKENS[-1])  # the partial chunk keeps its own length

    def test_save_chunk_meta_off_partial_chunks(self):
        c, slots = self.decode(False)
        keys = [chunk_key("raw", i) for i in range(len(TOKENS))]
        got, res = asyncio.run(c.batched_get(keys, slots))
        per_token = 2 * LAYERS * HIDDEN * 2
        self.assertEqual(res, [n * per_token for n in TOKENS])  # bytes read: the partial chunk reads fewer
        for i, t in enumerate(got):
            self.assertTrue(torch.equal(t, chunk(i)), i)
        got, res = asyncio.run(c.batched_get([chunk_key("raw", 99)], slots[:1]))
        self.assertEqual(got, [None])
        self.assertLess(res[0], 0)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--prefill"]:
        prefill_main(sys.argv[2])
    else:
        mmctest.main()
