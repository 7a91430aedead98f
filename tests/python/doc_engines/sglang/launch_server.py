"""A stand-in `python -m sglang.launch_server` for py-docs: takes the command line docs/python.md prints and makes
the L3 storage calls SGLang's HiCache makes on mmc with it: the npu_memcache backend (NpuMemcacheStore @0ab1f6c:
the JSON of $SGLANG_HICACHE_MEMCACHE_CONFIG_PATH and extra_config onto LocalConfig, setup, init, per-component
objects of the layout's pages) or the dynamic backend (backend_factory.py @001067f: importlib, issubclass,
cls(storage_config, kwargs), register_mem_pool_host, then cache_controller.py's page calls). Pages are written
from one host pool of the given layout and read back into another, byte for byte."""
import argparse
import importlib
import json
import os
import sys

import torch

import sglang_pools as pools

CONTROL = {"device_id", "init_bm", "conf_file_path", "check_server", "metrics_url", "memcache_metrics_url",
           "extra_backend_tag"}


def config(extra):
    merged = {}
    path = os.environ.get("SGLANG_HICACHE_MEMCACHE_CONFIG_PATH")
    if path:
        with open(path) as f:
            merged.update(json.load(f))
    merged.update(extra)
    return merged


def npu_memcache(extra, layout):
    from memcache_hybrid import DistributedObjectStore, LocalConfig
    cfg, local = config(extra), LocalConfig()
    for k, v in cfg.items():
        if k not in CONTROL and hasattr(local, k):
            setattr(local, k, v)
    store = DistributedObjectStore()
    assert store.setup(local) == 0
    assert store.init(int(cfg.get("device_id", 0)), bool(cfg.get("init_bm", True))) == 0
    kind = "mla" if layout == "page_first_kv_split" else "mha"
    src, dst = pools.make(kind, layout, seed=7), pools.make(kind, layout)
    for t in src.buffers() + dst.buffers():
        assert store.register_buffer(t.data_ptr(), t.numel() * t.element_size()) == 0
    names = ["__k", "__v", "__index_k", "__scale"] if kind == "mla" else ["_0_k", "_0_v"]
    keys = [k + n for k in pools.page_keys("doc-npu-memcache") for n in names]
    idx = torch.arange(pools.PAGES * pools.PAGE)
    ptrs, sizes = src.get_page_buffer_meta(idx)
    missing = [i for i, e in enumerate(store.batch_is_exist(keys)) if e != 1]
    assert store.batch_put_from([keys[i] for i in missing], [ptrs[i] for i in missing],
                                [sizes[i] for i in missing]) == [0] * len(missing)
    assert store.batch_get_into(keys, dst.get_page_buffer_meta(idx)[0], sizes) == [0] * len(keys)
    assert dst.same(src)
    store.close()


def dynamic(extra, layout):
    module = importlib.import_module(extra["module_path"])
    cls = getattr(module, extra["class_name"])
    assert issubclass(cls, module.HiCacheStorage)
    sc = module.HiCacheStorageConfig(tp_rank=0, tp_size=1, is_mla_model=False, extra_config=extra)
    backend = cls(sc, {})
    src, dst = pools.make("mha", layout, seed=7), pools.make("mha", layout)
    backend.register_mem_pool_host(src)
    keys, idx = pools.page_keys("doc-dynamic-" + layout), torch.arange(pools.PAGES * pools.PAGE)
    if extra.get("interface_v1", 0):
        assert all(backend.batch_set_v1(keys, idx))
    else:
        assert backend.batch_set(keys, [src.get_data_page(i * pools.PAGE) for i in range(len(keys))])
    reader = cls(sc, {})  # another rank: its pool starts empty
    reader.register_mem_pool_host(dst)
    assert reader.batch_exists(keys) == len(keys)
    assert all(reader.batch_get_v1(keys, idx))
    assert dst.same(src)
    reader.close()
    backend.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hicache-storage-backend", required=True)
    ap.add_argument("--hicache-storage-backend-extra-config", default="{}")
    ap.add_argument("--hicache-mem-layout", default="layer_first")
    ap.add_argument("--enable-hierarchical-cache", action="store_true")
    args, _ = ap.parse_known_args()
    assert args.enable_hierarchical_cache
    extra = json.loads(args.hicache_storage_backend_extra_config)
    {"npu_memcache": npu_memcache, "dynamic": dynamic}[args.hicache_storage_backend](extra, args.hicache_mem_layout)
    print("sglang stand-in: %s backend ok" % args.hicache_storage_backend)


if __name__ == "__main__":
    sys.exit(main())
