"""A native SGLang HiCache storage backend on mmc (L3 storage for the host KV pool).

Load it with SGLang's dynamic backend:

    --hicache-storage-backend dynamic --hicache-storage-backend-extra-config \
      '{"backend_name": "mmc", "module_path": "mmc.sglang", "class_name": "MmcHiCacheStorage",
        "interface_v1": 1, "meta_service_url": "tcp://10.0.0.1:5000", "protocol": "host_rdma", "dram_size": "16GB"}'

It follows the HiCacheStorage contract of sglang/srt/mem_cache/hicache_storage.py, storage/backend_factory.py and
managers/cache_controller.py as of SGLang commit 001067f: constructed as cls(storage_config, kwargs), then
register_mem_pool_host(); batch_exists (the leading run of pages present) is the hit query of both interfaces;
with a truthy interface_v1 SGLang moves pages with the zero-copy batch_get_v1 / batch_set_v1 through the host pool's
get_page_buffer_meta(), without it (SGLang's default) with the generic batch_get / batch_set of flat page copies.

Both interfaces store the same objects: those of SGLang's npu_memcache backend (NpuMemcacheStore @0ab1f6c) for the
same pages, so the two backends and both interfaces share one cache. One page is one object per component:
"{hash}_{tp}_k" and "_v" for MHA ("{tp}_{pp}_{cp}" with PP or CP, one pair per target rank with split heads),
"{hash}__k" for MLA, plus "__v", "__index_k", "__scale" in the page_first_kv_split layout; an optional
"{extra_backend_tag}_" prefix. Every host pool layout of SGLang's MHA and MLA pools is handled (pool_host/mha.py
@0047d99 and mla.py @01c0ede): page_first, page_first_direct, page_head, page_first_kv_split, and layer_first,
whose per-layer buffers are gathered into the same objects with mmc's layer calls. Without SGLang installed the
module imports against a minimal stand-in base class that declares the same abstract methods.
"""
import json
import logging
import os
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Optional

from .config import LocalConfig
from ._lib import BATCH_MAX, has as lib_has
from .store import DistributedObjectStore

log = logging.getLogger(__name__)

try:  # pragma: no cover - exercised only where SGLang is installed
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage, HiCacheStorageConfig  # noqa: F401
    HAVE_SGLANG = True
except ImportError:
    HAVE_SGLANG = False

    @dataclass
    class HiCacheStorageConfig:
        """Stand-in for sglang's HiCacheStorageConfig (same fields)."""
        tp_rank: int = 0
        tp_size: int = 1
        pp_rank: int = 0
        pp_size: int = 1
        attn_cp_rank: int = 0
        attn_cp_size: int = 1
        is_mla_model: bool = False
        enable_storage_metrics: bool = False
        is_page_first_layout: bool = True
        model_name: Optional[str] = None
        dp_rank: int = 0
        dp_size: int = 1
        tp_lcm_size: Optional[int] = None
        should_split_heads: bool = False
        extra_config: Optional[dict] = None

    class HiCacheStorage(ABC):
        """Stand-in for sglang's HiCacheStorage: the same abstract and defaulted methods."""

        def register_mem_pool_host(self, mem_pool_host):
            self.mem_pool_host = mem_pool_host

        def register_mem_host_pool_v2(self, host_pool, host_pool_name):
            raise NotImplementedError()

        @abstractmethod
        def get(self, key, target_location=None, target_sizes=None):
            pass

        @abstractmethod
        def batch_get(self, keys, target_locations=None, target_sizes=None):
            pass

        @abstractmethod
        def set(self, key, value=None, target_location=None, target_sizes=None):
            pass

        @abstractmethod
        def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):
            pass

        @abstractmethod
        def exists(self, key):
            pass

        def batch_exists(self, keys, extra_info=None):
            for i, k in enumerate(keys):
                if not self.exists(k):
                    return i
            return len(keys)

        def batch_get_v1(self, keys, host_indices, extra_info=None):
            raise NotImplementedError()

        def batch_set_v1(self, keys, host_indices, extra_info=None):
            raise NotImplementedError()

        def clear(self):
            pass

        def get_stats(self):
            return None

# extra_config keys that are not LocalConfig attributes
_CONTROL = {"backend_name", "module_path", "class_name", "interface_v1", "device_id", "init_bm", "lend",
            "config_file", "extra_backend_tag", "check_server", "metrics_url", "memcache_metrics_url",
            "conf_file_path", "prefix_timeout_ms"}
# a load reads the leading pages that arrive within this, and SGLang recomputes the rest (0: wait for every page)
_PREFIX_TIMEOUT_MS = 5000
_FAILED = -1  # MMC_ERROR: a key a call gave no result of its own
# the host pools' tensors, registered with the fabric once each (MHA's k_buffer / v_buffer are views of kv_buffer)
_POOL_TENSORS = ("kv_buffer", "k_buffer", "v_buffer", "index_k_buffer", "index_k_scale_buffer")


def _nbytes(t):
    return t.numel() * t.element_size()


def _ranges(tensors):
    """The distinct (address, bytes) spans of tensors, overlapping ones merged (views share their base's memory)."""
    spans = sorted((t.data_ptr(), _nbytes(t)) for t in tensors if _nbytes(t))
    out = []
    for addr, n in spans:
        if out and addr <= out[-1][0] + out[-1][1]:
            last = out[-1]
            out[-1] = (last[0], max(last[1], addr + n - last[0]))
        else:
            out.append((addr, n))
    return out


class _PagePlan:
    """How a page becomes storage objects: each object's key suffix, which of the page's buffers (in the order of
    the host pool's get_page_buffer_meta) it gathers, and the objects' order inside a flat page (get_data_page)."""

    def __init__(self, suffixes, parts, flat_order=None, split_factor=0):
        self.suffixes = suffixes
        self.parts = parts  # per object: indices into one page's buffer list
        self.buffers = sum(len(p) for p in parts)
        self.layered = any(len(p) > 1 for p in parts)
        self.flat_order = flat_order or list(range(len(suffixes)))
        self.split_factor = split_factor


def _suffix_ranks(sc):
    """npu_memcache's rank parts of a key: the MHA suffixes (one per target rank) and the MLA suffix."""
    tp, pp, cp = getattr(sc, "tp_rank", 0), getattr(sc, "pp_rank", 0), getattr(sc, "attn_cp_rank", 0)
    split = getattr(sc, "pp_size", 1) > 1 or getattr(sc, "attn_cp_size", 1) > 1
    factor = 0
    ranks = [tp]
    if getattr(sc, "should_split_heads", False):
        factor = sc.tp_lcm_size // sc.tp_size
        ranks = [tp * factor + i for i in range(factor)]
    mha = ["%d_%d_%d" % (r, pp, cp) if split else str(r) for r in ranks]
    return mha, ("%d_%d" % (pp, cp) if split else ""), factor


def _plan(sc, pool):
    """The page plan of a storage config and (when registered) its host pool's layout."""
    mha, mla, factor = _suffix_ranks(sc)
    layout = getattr(pool, "layout", "page_first")
    layer_num = getattr(pool, "layer_num", 1)
    if getattr(sc, "is_mla_model", False):
        if layout == "layer_first":
            return _PagePlan(["_%s_k" % mla], [list(range(layer_num))])
        names = ["k"]
        if layout == "page_first_kv_split":
            if not getattr(pool, "dsa_kv_cache_store_fp8", False):
                names.append("v")  # FP8 DSA packs V into k_buffer: the host v mirror is never transferred
            names += ["index_k"] if getattr(pool, "index_k_buffer", None) is not None else []
            names += ["scale"] if getattr(pool, "index_k_scale_buffer", None) is not None else []
        return _PagePlan(["_%s_%s" % (mla, n) for n in names], [[i] for i in range(len(names))])
    if layout == "layer_first":  # per layer k, v: [k0, v0, k1, v1, ...]
        parts = [list(range(0, 2 * layer_num, 2)), list(range(1, 2 * layer_num, 2))]
        return _PagePlan(["_%s_k" % mha[0], "_%s_v" % mha[0]], parts)
    suffixes = ["_%s_%s" % (r, kv) for r in mha for kv in "kv"]
    # a flat page (split heads: page_head) is all K heads, then all V heads: rank i's k is chunk i, its v n + i
    n = len(mha)
    flat = [2 * i for i in range(n)] + [2 * i + 1 for i in range(n)]
    return _PagePlan(suffixes, [[i] for i in range(2 * n)], flat, factor)


class MmcHiCacheStorage(HiCacheStorage):
    """HiCache L3 storage on an mmc cluster. extra_config: LocalConfig attributes (meta_service_url, protocol,
    dram_size, ...), plus device_id (default tp_rank), lend / init_bm (default True: this rank lends dram_size to
    the pool), config_file (a JSON file of the same keys; also $SGLANG_HICACHE_MEMCACHE_CONFIG_PATH) and
    extra_backend_tag (a key prefix). With no settings at all, $MMC_LOCAL_CONFIG_PATH configures the store.
    interface_v1 is SGLang's (absent: its generic path); both paths store the same objects."""

    def __init__(self, storage_config=None, kwargs=None):
        self.storage_config = storage_config or HiCacheStorageConfig()
        extra = dict(getattr(self.storage_config, "extra_config", None) or {})
        path = extra.get("config_file") or os.environ.get("SGLANG_HICACHE_MEMCACHE_CONFIG_PATH")
        cfg = {}
        if path:
            with open(path) as f:
                cfg = json.load(f)
        cfg.update(extra)
        self.config = cfg
        self.prefix_timeout_ms = int(cfg.get("prefix_timeout_ms", _PREFIX_TIMEOUT_MS))
        sc = self.storage_config
        self.is_mla = bool(getattr(sc, "is_mla_model", False))
        self.mem_pool_host = None
        self.plan = _plan(sc, None)
        self._flat_split = {}
        tag = cfg.get("extra_backend_tag")
        self.prefix = "%s_" % tag if tag else ""
        self.store = DistributedObjectStore()
        self.registered = []
        local = LocalConfig()
        settings = {k: v for k, v in cfg.items() if k not in _CONTROL}
        for k, v in settings.items():
            if hasattr(local, k):
                setattr(local, k, v)
            else:
                log.warning("mmc.sglang: ignoring unknown setting %r", k)
        if settings and self.store.setup(local) != 0:
            self.store.close()
            raise RuntimeError("mmc setup failed: %s" % self.store._last_error)
        lend = cfg.get("lend", cfg.get("init_bm", True))
        rc = self.store.init(int(cfg.get("device_id", getattr(sc, "tp_rank", 0))), bool(lend))
        if rc != 0:
            self.store.close()
            raise RuntimeError("mmc init failed (%d): %s" % (rc, self.store._last_error))
        if kwargs is not None and not isinstance(kwargs, dict) and hasattr(kwargs, "get_page_buffer_meta"):
            self.register_mem_pool_host(kwargs)  # built-in style construction (storage_config, mem_pool_host)

    # ---- host pool
    def register_mem_pool_host(self, mem_pool_host):
        super().register_mem_pool_host(mem_pool_host)
        self.mem_pool_host = mem_pool_host
        self.plan = _plan(self.storage_config, mem_pool_host)
        self._flat_split = {}
        tensors = [getattr(mem_pool_host, n, None) for n in _POOL_TENSORS]
        for addr, n in _ranges([t for t in tensors if t is not None and hasattr(t, "data_ptr")]):
            if self.store.register_buffer(addr, n) != 0:
                raise RuntimeError("mmc register_buffer failed for the host pool (%d bytes at %#x)" % (n, addr))
            self.registered.append((addr, n))

    def _logical_anchor(self):
        """DeepSeek-V4's FULL pool: page slots without a KV buffer; its data lives in the hybrid pools."""
        return self.mem_pool_host is not None and getattr(self.mem_pool_host, "kv_buffer", None) is None

    def _object_keys(self, keys):
        return [self.prefix + k + s for k in keys for s in self.plan.suffixes]

    @staticmethod
    def _per_key(fn, n, *lists):
        """fn over the per-key lists in calls of at most BATCH_MAX keys, one result per key. libmmc takes no more
        in one call, and the store answers a larger batch with a single code: read as one result per key, it
        would have left every page after the first marked as loaded or stored."""
        out = []
        for lo in range(0, n, BATCH_MAX):
            hi = min(n, lo + BATCH_MAX)
            res = list(fn(*(v[lo:hi] for v in lists)))
            out += res if len(res) == hi - lo else [_FAILED] * (hi - lo)
        return out

    def _exist(self, okeys):
        return self._per_key(self.store.batch_is_exist, len(okeys), okeys)

    def _page_results(self, res, pages):
        per = len(self.plan.suffixes)
        return [all(r == 0 for r in res[i * per:(i + 1) * per]) for i in range(pages)]

    # ---- the hit query, for both interfaces
    def batch_exists(self, keys, extra_info=None):
        if not keys or self._logical_anchor():
            return len(keys)
        res = self._exist(self._object_keys(keys))
        per = len(self.plan.suffixes)
        for i in range(len(keys)):
            if len(res) < (i + 1) * per or any(r != 1 for r in res[i * per:(i + 1) * per]):
                return i
        return len(keys)

    def exists(self, key):
        return self.batch_exists([key]) == 1

    # ---- zero-copy v1 interface (interface_v1 truthy)
    def _page_buffers(self, keys, host_indices):
        """Per object of the pages: its key and the host pool's buffers it gathers, zero copy."""
        pool, plan = self.mem_pool_host, self.plan
        page_size = getattr(pool, "page_size", 1) or 1
        if len(host_indices) != len(keys) * page_size:
            raise ValueError("%d keys for %d host slots of %d-token pages" % (len(keys), len(host_indices),
                                                                                page_size))
        if plan.split_factor:
            ptrs, sizes = pool.get_split_heads_page_buffer_meta(host_indices, plan.split_factor)
        else:
            ptrs, sizes = pool.get_page_buffer_meta(host_indices)
        if len(ptrs) != len(keys) * plan.buffers:
            raise ValueError("the %s host pool gave %d buffers for %d pages of %d" %
                             (getattr(pool, "layout", "?"), len(ptrs), len(keys), plan.buffers))
        okeys, optrs, osizes = self._object_keys(keys), [], []
        for page in range(len(keys)):
            base = page * plan.buffers
            for parts in plan.parts:
                optrs.append([ptrs[base + i] for i in parts])
                osizes.append([sizes[base + i] for i in parts])
        return okeys, optrs, osizes

    def _put(self, okeys, ptrs, sizes):
        if self.plan.layered:
            return self._per_key(self.store.batch_put_from_layers, len(okeys), okeys, ptrs, sizes)
        return self._per_key(self.store.batch_put_from, len(okeys), okeys, [p[0] for p in ptrs],
                             [n[0] for n in sizes])

    def _get_prefix(self, okeys, ptrs, sizes):
        """How many objects from the first landed, read in calls of at most BATCH_MAX under one deadline for them
        all; a negative code when the first call failed as a whole."""
        end, landed = time.monotonic() + self.prefix_timeout_ms / 1000.0, 0
        for lo in range(0, len(okeys), BATCH_MAX):
            hi = min(len(okeys), lo + BATCH_MAX)
            left_ms = max(1, int((end - time.monotonic()) * 1000))
            if self.plan.layered:
                got = self.store.batch_get_into_layers_prefix(okeys[lo:hi], ptrs[lo:hi], sizes[lo:hi], left_ms)
            else:
                got = self.store.batch_get_into_prefix(okeys[lo:hi], [p[0] for p in ptrs[lo:hi]],
                                                       [n[0] for n in sizes[lo:hi]], left_ms)
            if got < 0:
                return got if lo == 0 else landed
            landed += min(got, hi - lo)
            if got < hi - lo:
                break
        return landed

    def _get(self, okeys, ptrs, sizes):
        """A load: the objects of pages in order, read as a prefix under the deadline when there is one (a stalled
        or dying peer then costs the request at most prefix_timeout_ms, not rma_timeout_ms per page)."""
        if self.prefix_timeout_ms and lib_has("mmc_batch_get_into_prefix"):
            landed = self._get_prefix(okeys, ptrs, sizes)
            if landed < 0:
                return [landed] * len(okeys)
            return [0] * landed + [-1] * (len(okeys) - landed)
        if self.plan.layered:
            return self._per_key(self.store.batch_get_into_layers, len(okeys), okeys, ptrs, sizes)
        return self._per_key(self.store.batch_get_into, len(okeys), okeys, [p[0] for p in ptrs],
                             [n[0] for n in sizes])

    def batch_get_v1(self, keys, host_indices, extra_info=None):
        if not keys or self._logical_anchor():
            return [True] * len(keys)
        okeys, ptrs, sizes = self._page_buffers(keys, host_indices)
        return self._page_results(self._get(okeys, ptrs, sizes), len(keys))

    def batch_set_v1(self, keys, host_indices, extra_info=None):
        if not keys or self._logical_anchor():
            return [True] * len(keys)
        okeys, ptrs, sizes = self._page_buffers(keys, host_indices)
        exist = self._exist(okeys)
        res = [0] * len(okeys)
        todo = [i for i, e in enumerate(exist) if e != 1]
        if todo:
            put = self._put([okeys[i] for i in todo], [ptrs[i] for i in todo], [sizes[i] for i in todo])
            for i, r in zip(todo, put):
                res[i] = r
        return self._page_results(res, len(keys))

    # ---- the generic path: a flat page per key (get_data_page / set_from_flat_data_page), the same objects
    def _object_sizes(self, total):
        """The bytes of each object of a flat page of total bytes, in flat order; None if it does not split so."""
        if total not in self._flat_split:
            self._flat_split[total] = self._split_flat(total)
        return self._flat_split[total]

    def _split_flat(self, total):
        plan, pool = self.plan, self.mem_pool_host
        if pool is not None and hasattr(pool, "get_page_buffer_meta") and not plan.split_factor:
            import torch
            page_size = getattr(pool, "page_size", 1) or 1
            _, sizes = pool.get_page_buffer_meta(torch.arange(page_size))
            by_object = [sum(sizes[i] for i in parts) for parts in plan.parts]
            out = [by_object[o] for o in plan.flat_order]
        else:
            n = len(plan.suffixes)
            out = [total // n] * n if total % n == 0 else None
        return out if out and sum(out) == total else None

    def _flat_objects(self, keys, locations, sizes):
        """(object keys, pointers, sizes, page of each object) for flat pages given as tensors or (pointer, size)."""
        okeys, ptrs, lens, page_of = [], [], [], []
        for page, (key, loc) in enumerate(zip(keys, locations)):
            if loc is None:
                continue
            if isinstance(loc, int):
                addr, total = loc, int(sizes[page])
            else:
                if not loc.is_contiguous():
                    raise ValueError("page %r: a flat page must be contiguous" % key)
                addr, total = loc.data_ptr(), _nbytes(loc)
            split = self._object_sizes(total)
            if split is None:
                raise ValueError("page %r: %d bytes do not split into the %d objects of a page" %
                                 (key, total, len(self.plan.suffixes)))
            at = addr
            for obj, n in zip(self.plan.flat_order, split):
                okeys.append(self.prefix + key + self.plan.suffixes[obj])
                ptrs.append(at)
                lens.append(n)
                page_of.append(page)
                at += n
        return okeys, ptrs, lens, page_of

    def _allocate_pages(self, keys):
        """Flat uint8 pages sized from what the store holds (None for pages it lacks)."""
        import torch
        infos = self.store.batch_get_key_info(self._object_keys(keys))
        per = len(self.plan.suffixes)
        if len(infos) != len(keys) * per:
            return [None] * len(keys)
        out = []
        for i in range(len(keys)):
            sizes = [x.size() for x in infos[i * per:(i + 1) * per]]
            out.append(torch.empty(sum(sizes), dtype=torch.uint8) if all(sizes) else None)
        return out

    def get(self, key, target_location=None, target_sizes=None):
        out = self.batch_get([key], [target_location] if target_location is not None else None,
                             [target_sizes] if target_sizes is not None else None)
        return out[0]

    def batch_get(self, keys, target_locations=None, target_sizes=None):
        if not keys:
            return []
        if target_locations is None:
            target_locations = self._allocate_pages(keys)
        okeys, ptrs, lens, page_of = self._flat_objects(keys, target_locations, target_sizes)
        ok = [loc is not None for loc in target_locations]
        if okeys:
            for page, r in zip(page_of, self._per_key(self.store.batch_get_into, len(okeys), okeys, ptrs, lens)):
                ok[page] = ok[page] and r == 0
        return [loc if good else None for loc, good in zip(target_locations, ok)]

    def set(self, key, value=None, target_location=None, target_sizes=None):
        return self.batch_set([key], [value] if value is not None else None,
                              [target_location] if target_location is not None else None,
                              [target_sizes] if target_sizes is not None else None)

    def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):
        if not keys:
            return True
        src = values if values is not None else target_locations
        if src is None or len(src) != len(keys) or any(v is None for v in src):
            return False
        okeys, ptrs, lens, _ = self._flat_objects(keys, src, target_sizes)
        exist = self._exist(okeys)
        todo = [i for i, e in enumerate(exist) if e != 1]
        if not todo:
            return True
        res = self._per_key(self.store.batch_put_from, len(todo), [okeys[i] for i in todo], [ptrs[i] for i in todo],
                            [lens[i] for i in todo])
        return all(r == 0 for r in res)

    def clear(self):
        """Removes every object of the cluster (SGLang's cache flush), as npu_memcache's clear() does."""
        rc = self.store.remove_all()
        if rc != 0:
            raise RuntimeError("mmc remove_all failed (%d)" % rc)

    def get_stats(self):
        return None

    def close(self):
        try:
            for addr, n in self.registered:
                self.store.unregister_buffer(addr, n)
            self.registered = []
            self.store.close()
        except Exception:  # like SGLang's backends, close() never raises
            pass


__all__ = ["MmcHiCacheStorage", "HiCacheStorage", "HiCacheStorageConfig", "HAVE_SGLANG"]
