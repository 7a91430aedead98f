#!/usr/bin/python3
"""mooncake.store's batch_get_into against the mmc package's own call, in one run.

  PYTHONPATH=python MMC_LIBRARY=build/lib/libmmc.so.0 /usr/bin/python3 bench/python/bench_mooncake.py [--build build]
      [--seconds 5] [--protocol tcp]

One C target process (mmc-bench target) lends 256 MiB; this process holds two clients that lend nothing, an
mmc.DistributedObjectStore and a mooncake.store.MooncakeDistributedStore (global_segment_size 0), both reading
the same 16 x 1 MiB objects into registered numpy buffers. The calls alternate (mmc, shim, mmc, ...) so that the
machine's load falls on both alike; the first rounds are a warm-up. It prints the median call time and GB/s of
each and shim / mmc (the target: at least 0.9 in GB/s).
"""
import argparse
import os
import statistics
import time

from benchenv import MiB, ROOT, programs, target  # first: it puts the source tree on sys.path

import numpy as np  # noqa: E402

import mmc  # noqa: E402
import mmctest  # noqa: E402
from mooncake.store import MooncakeDistributedStore  # noqa: E402

N = 16


def run(bench, protocol, seconds, meta):
    with target(bench, meta, protocol):
        s = mmctest.store(meta.url, lend=False, protocol="host_" + protocol)
        m = MooncakeDistributedStore()
        rc = m.setup("localhost", "P2PHANDSHAKE", 0, 16 << 20, protocol, "", "127.0.0.1:%d" % meta.port)
        assert rc == 0, m.last_error
        src = [np.random.default_rng(i).integers(0, 256, MiB, dtype=np.uint8) for i in range(N)]
        dmmc = [np.zeros(MiB, np.uint8) for _ in range(N)]
        dmc = [np.zeros(MiB, np.uint8) for _ in range(N)]
        for a in src + dmmc:
            assert s.register_buffer(a.ctypes.data, MiB) == 0
        for a in dmc:
            assert m.register_buffer(a.ctypes.data, MiB) == 0
        keys = ["mc/%d/%d" % (os.getpid(), i) for i in range(N)]
        sizes = [MiB] * N
        assert s.batch_put_from(keys, [a.ctypes.data for a in src], sizes) == [0] * N
        pm, pc = [a.ctypes.data for a in dmmc], [a.ctypes.data for a in dmc]
        t_mmc, t_mc, rounds = [], [], 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end or len(t_mmc) < 5:
            t0 = time.perf_counter()
            r1 = s.batch_get_into(keys, pm, sizes)
            t1 = time.perf_counter()
            r2 = m.batch_get_into(keys, pc, sizes)
            t2 = time.perf_counter()
            assert r1 == [0] * N and r2 == sizes, (r1, r2)
            rounds += 1
            if rounds > 3:
                t_mmc.append(t1 - t0)
                t_mc.append(t2 - t1)
        assert all((a == b).all() and (a == c).all() for a, b, c in zip(src, dmmc, dmc))
        m.close()
        s.close()
        return statistics.median(t_mmc), statistics.median(t_mc), len(t_mmc)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--protocol", default="tcp", choices=("tcp", "shm"))
    a = ap.parse_args()
    bench = programs(a.build)
    meta = mmctest.Metaserver()
    try:
        tm, tc, n = run(bench, a.protocol, a.seconds, meta)
    finally:
        meta.stop()
    gb = N * MiB / 1e9
    print("# batch_get_into %d x 1 MiB, provider %s, libmmc %s, %d alternating calls each" %
          (N, a.protocol, mmc.version(), n))
    print("%-34s %10s %8s" % ("client", "median ms", "GB/s"))
    print("%-34s %10.2f %8.2f" % ("mmc.DistributedObjectStore", tm * 1e3, gb / tm))
    print("%-34s %10.2f %8.2f" % ("mooncake.store (shim)", tc * 1e3, gb / tc))
    print("shim/mmc GB/s: %.3f (target >= 0.9)" % (tm / tc))


if __name__ == "__main__":
    main()
