"""The cases of test_sglang_layouts.py, shared with its writer process (sglang_writer.py): how each side builds
its host pool and backend, how SGLang's cache controller moves pages (managers/cache_controller.py @001067f:
_page_set_zero_copy / _page_get_zero_copy with interface_v1, _generic_page_set / _generic_page_get without), and
the object keys NpuMemcacheStore (@0ab1f6c) gives the same pages."""
import ctypes
import importlib
import zlib

import torch

import mmctest
import sglang_pools as pools


def seed(case, side):
    return zlib.crc32(("%s/%s" % (case["name"], side)).encode())


def pool(case, writer):
    """The case's pool: the writer's filled with its seeded bytes, the reader's zeroed."""
    layout = case["read_layout"] if not writer and "read_layout" in case else case["layout"]
    return pools.make(case["kind"], layout, seed(case, "data") if writer else None, **case.get("pool", {}))


def storage_config(case):
    import mmc.sglang as ms
    return ms.HiCacheStorageConfig(tp_rank=case.get("tp_rank", 0), tp_size=case.get("tp_size", 1),
                                   is_mla_model=case["kind"] == "mla",
                                   should_split_heads=case.get("split_heads", False),
                                   tp_lcm_size=case.get("tp_lcm_size"), extra_config=None)


def backend(case, url, lend, v1=None):
    """backend_factory.py's dynamic path: importlib, the issubclass check, cls(storage_config, kwargs), then
    register_mem_pool_host (by the caller). interface_v1 only when the case (or the reader) names it."""
    extra = {"backend_name": "mmc", "module_path": "mmc.sglang", "class_name": "MmcHiCacheStorage",
             "meta_service_url": url, "protocol": mmctest.PROTOCOL, "dram_size": "32MB", "init_bm": lend}
    v1 = case.get("v1") if v1 is None else v1
    if v1 is not None:
        extra["interface_v1"] = v1
    sc = storage_config(case)
    sc.extra_config = extra
    module = importlib.import_module(extra["module_path"])
    cls = getattr(module, extra["class_name"])
    assert issubclass(cls, module.HiCacheStorage)
    return cls(sc, {})


def slots(case, side):
    """Host indices of the pages, in a page order of the side's own (the pool's slots are not the keys' order)."""
    order = torch.randperm(pools.PAGES, generator=torch.Generator().manual_seed(seed(case, side)))
    return order, torch.cat([torch.arange(p * pools.PAGE, (p + 1) * pools.PAGE) for p in order.tolist()])


def zero_copy(case):
    """What SGLang does: the zero-copy calls for a truthy interface_v1, its generic path otherwise (default 0)."""
    return bool(case.get("v1", 0))


def write(b, p, case):
    keys, (_, idx) = pools.page_keys(case["name"]), slots(case, "writer")
    if zero_copy(case):
        return all(b.batch_set_v1(keys, idx))
    data = [p.get_data_page(idx[i * pools.PAGE]) for i in range(len(keys))]
    return b.batch_set(keys, data)


def read(b, p, case, v1):
    """Every page into the reader's pool; the number of pages read."""
    keys, (_, idx) = pools.page_keys(case["name"]), slots(case, "reader")
    if v1:
        return sum(b.batch_get_v1(keys, idx))
    dummy = [p.get_dummy_flat_data_page() for _ in keys]
    got = b.batch_get(keys, dummy)
    n = 0
    for i, page in enumerate(got):
        if page is None:
            break
        p.set_from_flat_data_page(idx[i * pools.PAGE], page)
        n += 1
    return n


def page_objects(case, p, page):
    """The bytes of one page's objects, in NpuMemcacheStore's key order: its buffers (get_page_buffer_meta; split
    heads: get_split_heads_page_buffer_meta), a layer_first pool's per-layer buffers gathered into one object per
    component (k: even positions, v: odd; MLA: all)."""
    idx = torch.arange(page * pools.PAGE, (page + 1) * pools.PAGE)
    if case.get("split_heads"):
        ptrs, sizes = p.get_split_heads_page_buffer_meta(idx, case["tp_lcm_size"] // case["tp_size"])
    else:
        ptrs, sizes = p.get_page_buffer_meta(idx)
    bufs = [ctypes.string_at(a, n) for a, n in zip(ptrs, sizes)]
    if p.layout != "layer_first":
        return bufs
    if isinstance(p, pools.MHAPool):
        return [b"".join(bufs[0::2]), b"".join(bufs[1::2])]
    return [b"".join(bufs)]


def npu_memcache_keys(case, page_key):
    """NpuMemcacheStore's object keys of a page (its _get_mha_buffer_meta / _get_mla_buffer_meta), by its rules."""
    if case["kind"] == "mla":
        names = ["k"]
        if case["layout"] == "page_first_kv_split":
            opts = case.get("pool", {})
            names += [] if opts.get("fp8_packed") else ["v"]
            names += ["index_k"] if opts.get("index_k", True) else []
            names += ["scale"] if opts.get("scale", True) else []
        return ["%s__%s" % (page_key, n) for n in names]
    tp = case.get("tp_rank", 0)
    if case.get("split_heads"):
        factor = case["tp_lcm_size"] // case["tp_size"]
        ranks = [tp * factor + i for i in range(factor)]
    else:
        ranks = [tp]
    return ["%s_%d_%s" % (page_key, r, kv) for r in ranks for kv in "kv"]


CASES = [
    {"name": "mha-page_first", "kind": "mha", "layout": "page_first", "v1": 1},
    {"name": "mha-page_first_direct", "kind": "mha", "layout": "page_first_direct", "v1": 1},
    {"name": "mha-page_head", "kind": "mha", "layout": "page_head", "v1": 1},
    {"name": "mha-layer_first", "kind": "mha", "layout": "layer_first", "v1": 1},
    {"name": "mha-page_head-split_heads", "kind": "mha", "layout": "page_head", "v1": 1, "split_heads": True,
     "tp_rank": 1, "tp_size": 2, "tp_lcm_size": 4},
    {"name": "mla-page_first", "kind": "mla", "layout": "page_first", "v1": 1},
    {"name": "mla-page_first_direct", "kind": "mla", "layout": "page_first_direct", "v1": 1},
    {"name": "mla-layer_first", "kind": "mla", "layout": "layer_first", "v1": 1},
    {"name": "mla-page_first_kv_split", "kind": "mla", "layout": "page_first_kv_split", "v1": 1},
    {"name": "mla-page_first_kv_split-fp8", "kind": "mla", "layout": "page_first_kv_split", "v1": 1,
     "pool": {"fp8_packed": True, "scale": False}},
    # interface_v1 left out: SGLang's generic path (its default), for every layout it has one for
    {"name": "generic-mha-page_first", "kind": "mha", "layout": "page_first"},
    {"name": "generic-mha-page_head", "kind": "mha", "layout": "page_head"},
    {"name": "generic-mha-layer_first", "kind": "mha", "layout": "layer_first"},
    {"name": "generic-mla-page_first_direct", "kind": "mla", "layout": "page_first_direct"},
    {"name": "generic-mla-layer_first", "kind": "mla", "layout": "layer_first"},
    # the same objects across layouts: a layer_first pool gathers what a page_first_direct one wrote
    {"name": "mha-page_first_direct-to-layer_first", "kind": "mha", "layout": "page_first_direct", "v1": 1,
     "read_layout": "layer_first"},
]
