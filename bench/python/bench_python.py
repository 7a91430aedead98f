#!/usr/bin/python3
"""The Python binding against C on the same machine, in one run.

  PYTHONPATH=python MMC_LIBRARY=build/lib/libmmc.so.0 /usr/bin/python3 bench/python/bench_python.py [--build build]
      [--seconds 2] [--protocol tcp] [--repeat 1]

Data: batch_put_from / batch_get_into of 16 x 1 MiB from a client that lends nothing to one C target process
(mmc-bench target) — the setup of `mmc-bench data --sizes 1M --batch 16 --no-redis --no-raw`, which runs next for
the C figure. Each round puts 16 new keys (timed), gets them (timed), removes them (untimed); GB/s = 16 MiB /
median call. Meta: the median latency of is_exist (one key) and of a 16-key batch_is_exist on random existing keys
of a 1000-key index, against `mmc-bench meta --keys 1000 --batch 1|16`; the difference is the Python per-call
overhead.
"""
import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import time

from benchenv import MiB, ROOT, programs, target  # first: it puts the source tree on sys.path

import numpy as np  # noqa: E402

import mmc  # noqa: E402
import mmctest  # noqa: E402


def c_data(bench, protocol, seconds):
    out = subprocess.run([bench, "data", "--sizes", "1M", "--batch", "16", "--protocol", protocol, "--no-redis",
                          "--no-raw", "--seconds", str(seconds)], capture_output=True, text=True, check=True).stdout
    res = {}
    for op in ("put", "get"):
        m = re.search(r"^%s\s+flat\s+1MiB\s+16\s+([\d.]+)\s+([\d.]+)" % op, out, re.M)
        res[op] = (float(m.group(1)), float(m.group(2)))
    return res


def c_meta(bench, protocol, batch, seconds):
    out = subprocess.run([bench, "meta", "--keys", "1000", "--batch", str(batch), "--protocol", protocol,
                          "--sync", "off", "--seconds", str(seconds)], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"^batch_is_exist\s+1000\s+%d\s+\d+\s+([\d.]+)" % batch, out, re.M)
    return float(m.group(1)) * 1000.0  # µs


def py_data(bench, protocol, seconds, meta):
    with target(bench, meta, protocol):
        s = mmctest.store(meta.url, lend=False, protocol="host_" + protocol)
        src = [np.random.default_rng(i).integers(0, 256, MiB, dtype=np.uint8) for i in range(16)]
        dst = [np.zeros(MiB, np.uint8) for _ in range(16)]
        for a in src + dst:
            assert s.register_buffer(a.ctypes.data, MiB) == 0
        sp, dp, sizes = [a.ctypes.data for a in src], [a.ctypes.data for a in dst], [MiB] * 16
        put, get, seq = [], [], 0
        end = time.perf_counter() + seconds
        while time.perf_counter() < end or len(put) < 3:
            keys = ["py/%d/%d/%d" % (os.getpid(), seq, i) for i in range(16)]
            seq += 1
            t0 = time.perf_counter()
            r1 = s.batch_put_from(keys, sp, sizes)
            t1 = time.perf_counter()
            r2 = s.batch_get_into(keys, dp, sizes)
            t2 = time.perf_counter()
            assert r1 == [0] * 16 and r2 == [0] * 16, (r1, r2)
            if seq > 1:  # the first round is the warm-up
                put.append(t1 - t0)
                get.append(t2 - t1)
            s.remove_batch(keys)
        assert all((a == b).all() for a, b in zip(src, dst))
        s.close()
        return {op: (16 * MiB / statistics.median(v) / 1e9, statistics.median(v) * 1e3)
                for op, v in (("put", put), ("get", get))}


def py_meta(protocol, seconds, meta):
    """Median latency (µs) of is_exist and a 16-key batch_is_exist, and of the same libmmc calls made straight
    through ctypes with prebuilt arrays, interleaved call by call: the difference is the binding's own cost."""
    from mmc import _args as A
    from mmc._lib import lib
    s = mmctest.store(meta.url, dram="64MB", protocol="host_" + protocol)
    keys = ["m/%d" % i for i in range(1000)]
    for i in range(0, 1000, 100):
        assert s.put_batch(keys[i:i + 100], [b"x" * 64] * 100) == 0
    rng = random.Random(1)
    out = {}
    for batch in (1, 16):
        lat, raw = [], []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            if batch == 1:
                k = keys[rng.randrange(1000)]
                t0 = time.perf_counter()
                r = s.is_exist(k)
                lat.append(time.perf_counter() - t0)
                assert r == 1
                kb = keys[rng.randrange(1000)].encode()
                t0 = time.perf_counter()
                r = lib.mmc_is_exist(s._s, kb)
                raw.append(time.perf_counter() - t0)
            else:
                ks = rng.sample(keys, 16)
                t0 = time.perf_counter()
                r = s.batch_is_exist(ks)
                lat.append(time.perf_counter() - t0)
                assert r == [1] * 16
                ka, res = A.key_array([k.encode() for k in rng.sample(keys, 16)]), A.results(16)
                t0 = time.perf_counter()
                lib.mmc_batch_is_exist(s._s, ka, 16, A.addr(res))
                raw.append(time.perf_counter() - t0)
        out[batch] = (statistics.median(lat) * 1e6, statistics.median(raw) * 1e6)
    s.close()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--protocol", default="tcp", choices=("tcp", "shm"))
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    bench = programs(a.build)
    print("# mmc Python (ctypes) vs C, provider %s, libmmc %s, %s s per measurement" %
          (a.protocol, mmc.version(), a.seconds))
    print("%-22s %10s %10s %8s" % ("case", "python", "C", "py/C"))
    print("# 'ctypes-direct': the same libmmc call from the same process with prebuilt arrays (binding cost)")
    for _ in range(a.repeat):
        meta = mmctest.Metaserver("ock.mmc.meta.lmdb.sync=true")
        try:
            pd = py_data(bench, a.protocol, a.seconds, meta)
        finally:
            meta.stop()
        cd = c_data(bench, a.protocol, a.seconds)
        for op in ("put", "get"):
            name = "batch_%s 16x1MiB GB/s" % ("put_from" if op == "put" else "get_into")
            print("%-22s %10.2f %10.2f %8.2f" % (name, pd[op][0], cd[op][0], pd[op][0] / cd[op][0]))
        meta = mmctest.Metaserver()
        try:
            pm = py_meta(a.protocol, a.seconds, meta)
        finally:
            meta.stop()
        for batch, name in ((1, "is_exist p50 us"), (16, "batch_is_exist16 p50 us")):
            cm = c_meta(bench, a.protocol, batch, a.seconds)
            print("%-22s %10.1f %10.1f %+7.1fus" % (name, pm[batch][0], cm, pm[batch][0] - cm))
            print("%-22s %10.1f %10.1f %+7.1fus" % ("  same, ctypes-direct", pm[batch][0], pm[batch][1],
                                                    pm[batch][0] - pm[batch][1]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
