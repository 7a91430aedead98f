#!/usr/bin/python3
"""mooncake.store's session calls (a layer at a time) against its whole-object multi-buffer calls, in one run.

  PYTHONPATH=python MMC_LIBRARY=build/lib/libmmc.so.0 /usr/bin/python3 bench/python/bench_sessions.py [--build build]
      [--seconds 5] [--protocol tcp] [--layers 32] [--kv 16384]

One C target process (mmc-bench target) lends 256 MiB; this process holds one mooncake.store client that lends
nothing. A block is one object of every layer's K and V (--kv bytes each, so 2 x layers x kv bytes), and a call
moves 16 blocks. The cases alternate round by round, so the machine's load falls on all alike:

- put, whole: batch_put_from_multi_buffers of the 16 blocks (2 x layers buffers each);
- put, layers: batch_put_session_start, one batch_put_from_multi_buffer_ranges per layer (K and V of every block),
  batch_put_session_end: what a layer-wise saver does;
- get, whole: batch_get_into_multi_buffers;
- get, layers: batch_get_session_start, one batch_get_into_multi_buffer_ranges per layer, batch_get_session_end.

It prints each case's median call (or whole session) time and GB/s, layers / whole, the median time of one layer's
range call, and a memcpy of the same bytes in this process for the physical limit.
"""
import argparse
import os
import statistics
import time

from benchenv import MiB, ROOT, programs, target  # first: it puts the source tree on sys.path

import numpy as np  # noqa: E402

import mmctest  # noqa: E402
from mooncake.store import MooncakeDistributedStore  # noqa: E402

N = 16


class Blocks:
    """N blocks of layers x (K, V) pages in one buffer, [block][layer][kv] pages of kv bytes."""

    def __init__(self, layers, kv, seed=None):
        self.layers, self.kv = layers, kv
        rng = np.random.default_rng(seed)
        self.buf = rng.integers(0, 256, (N, layers, 2, kv), dtype=np.uint8) if seed is not None else \
            np.zeros((N, layers, 2, kv), dtype=np.uint8)
        self.base = self.buf.ctypes.data

    def page(self, b, layer, kv):
        return self.base + ((b * self.layers + layer) * 2 + kv) * self.kv

    def whole(self):
        ptrs = [[self.page(b, layer, kv) for layer in range(self.layers) for kv in (0, 1)] for b in range(N)]
        return ptrs, [[self.kv] * (2 * self.layers)] * N

    def layer(self, layer):
        ptrs = [[self.page(b, layer, 0), self.page(b, layer, 1)] for b in range(N)]
        offsets = [[2 * layer * self.kv, (2 * layer + 1) * self.kv]] * N
        return ptrs, [[self.kv, self.kv]] * N, offsets


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run(bench, protocol, seconds, meta, layers, kv):
    with target(bench, meta, protocol):
        m = MooncakeDistributedStore()
        assert m.setup("localhost", "P2PHANDSHAKE", 0, 16 << 20, protocol, "", "127.0.0.1:%d" % meta.port) == 0
        src, dst = Blocks(layers, kv, seed=1), Blocks(layers, kv)
        for b in (src, dst):
            assert m.register_buffer(b.base, b.buf.nbytes) == 0
        size = 2 * layers * kv
        times = {c: [] for c in ("put whole", "put layers", "get whole", "get layers", "memcpy")}
        layer_calls = {"put": [], "get": []}

        def put_whole(keys):
            assert m.batch_put_from_multi_buffers(keys, *src.whole()) == [0] * N

        def put_layers(keys):
            assert m.batch_put_session_start(keys, [size] * N) == [0] * N
            for layer in range(layers):
                layer_calls["put"].append(timed(lambda: m.batch_put_from_multi_buffer_ranges(keys, *src.layer(layer))))
            assert m.batch_put_session_end(keys) == [0] * N

        def get_whole(keys):
            assert m.batch_get_into_multi_buffers(keys, *dst.whole()) == [size] * N

        def get_layers(keys):
            assert m.batch_get_session_start(keys) == [0] * N
            for layer in range(layers):
                layer_calls["get"].append(timed(lambda: m.batch_get_into_multi_buffer_ranges(keys, *dst.layer(layer))))
            assert m.batch_get_session_end(keys) == 0

        end, r = time.monotonic() + seconds, 0
        while time.monotonic() < end or r < 4:
            for how, put, get in (("whole", put_whole, get_whole), ("layers", put_layers, get_layers)):
                keys = ["bench/sessions/%s/%d/%d" % (how, r, i) for i in range(N)]
                times["put " + how].append(timed(lambda: put(keys)))
                dst.buf[:] = 0
                times["get " + how].append(timed(lambda: get(keys)))
                assert np.array_equal(dst.buf, src.buf), "%s: wrong bytes" % how
                m.batch_remove(keys)
            times["memcpy"].append(timed(lambda: np.copyto(dst.buf, src.buf)))
            r += 1
        skip = min(2, r // 4)  # warm-up rounds
        med = {c: statistics.median(v[skip:]) for c, v in times.items()}
        total = N * size
        print("# %d blocks of %d layers x 2 x %d B (%.1f MiB a call), %s, %d rounds" %
              (N, layers, kv, total / MiB, protocol, r))
        print("%-11s %10s %8s %12s" % ("case", "median ms", "GB/s", "layers/whole"))
        for c in ("put whole", "put layers", "get whole", "get layers", "memcpy"):
            ratio = ""
            if c.endswith("layers"):
                ratio = "%.2f" % (med[c.replace("layers", "whole")] / med[c])
            print("%-11s %10.3f %8.2f %12s" % (c, med[c] * 1e3, total / med[c] / 1e9, ratio))
        for op in ("put", "get"):
            print("# one layer's %s range call (16 keys x 2 ranges): median %.1f us" %
                  (op, statistics.median(layer_calls[op]) * 1e6))
        m.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--protocol", default="tcp", choices=("tcp", "shm"))
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--kv", type=int, default=16384)
    a = ap.parse_args()
    bench = programs(a.build)
    meta = mmctest.Metaserver()
    try:
        run(bench, a.protocol, a.seconds, meta, a.layers, a.kv)
    finally:
        meta.stop()


if __name__ == "__main__":
    main()
