"""A native SGLang HiCache storage backend on mmc (L3 storage for the host KV pool).

Load it with SGLang's dynamic backend:

    --hicache-storage-backend dynamic --hicache-storage-backend-extra-config \
      '{"backend_name": "mmc", "module_path": "mmc.sglang", "class_name": "MmcHiCacheStorage",
        "interface_v1": 1, "meta_service_url": "tcp://10.0.0.1:5000", "protocol": "host_rdma", "dram_size": "16GB"}'

It follows the HiCacheStorage contract of sglang/srt/mem_cache/hicache_storage.py and storage/backend_factory.py
as of SGLang commit 001067f (v0.5.x): constructed as cls(storage_config, kwargs), then register_mem_pool_host();
the five abstract methods, batch_exists (leading hit run) and the zero-copy batch_get_v1 / batch_set_v1 through
the host pool's get_page_buffer_meta(). Object keys are those of SGLang's npu_memcache backend ("{hash}_{tp}_k",
"{hash}_{tp}_v"; MLA "{hash}__k"), so both backends share one cache. Without SGLang installed the module imports
against a minimal stand-in base class that declares the same abstract methods.
"""
import json
import logging
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Optional

from .config import LocalConfig
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
            "conf_file_path"}
_POOL_TENSORS = ("kv_buffer", "k_buffer", "v_buffer", "index_k_buffer", "index_k_scale_buffer")


def _nbytes(t):
    return t.numel() * t.element_size()


class MmcHiCacheStorage(HiCacheStorage):
    """HiCache L3 storage on an mmc cluster. extra_config: LocalConfig attributes (meta_service_url, protocol,
    dram_size, ...), plus device_id (default tp_rank), lend / init_bm (default True: this rank lends dram_size to
    the pool), config_file (a JSON file of the same keys; also $SGLANG_HICACHE_MEMCACHE_CONFIG_PATH) and
    extra_backend_tag (a key prefix). With no settings at all, $MMC_LOCAL_CONFIG_PATH configures the store."""

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
        sc = self.storage_config
        self.is_mla = bool(getattr(sc, "is_mla_model", False))
        tp, pp_rank, cp_rank = (getattr(sc, "tp_rank", 0), getattr(sc, "pp_rank", 0),
                                getattr(sc, "attn_cp_rank", 0))
        split = getattr(sc, "pp_size", 1) > 1 or getattr(sc, "attn_cp_size", 1) > 1
        if self.is_mla:  # one copy of the latent cache for all TP ranks: "{hash}__k" (npu_memcache's MLA key)
            self.suffixes = ["_%s_k" % ("%d_%d" % (pp_rank, cp_rank) if split else "")]
        else:
            rank = "%d_%d_%d" % (tp, pp_rank, cp_rank) if split else str(tp)
            self.suffixes = ["_%s_k" % rank, "_%s_v" % rank]
        # batch_exists answers for the objects of the interface SGLang drives: per-part objects for the zero-copy
        # v1 calls (interface_v1 truthy, the default), one object per page key for the generic batch_get/set
        self.v1 = bool(cfg.get("interface_v1", 1))
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
        rc = self.store.init(int(cfg.get("device_id", tp)), bool(lend))
        if rc != 0:
            self.store.close()
            raise RuntimeError("mmc init failed (%d): %s" % (rc, self.store._last_error))
        if kwargs is not None and not isinstance(kwargs, dict) and hasattr(kwargs, "get_page_buffer_meta"):
            self.register_mem_pool_host(kwargs)  # built-in style construction (storage_config, mem_pool_host)

    # ---- host pool
    def register_mem_pool_host(self, mem_pool_host):
        super().register_mem_pool_host(mem_pool_host)
        for name in _POOL_TENSORS:
            t = getattr(mem_pool_host, name, None)
            if t is None or not hasattr(t, "data_ptr"):
                continue
            if self.store.register_buffer(t.data_ptr(), _nbytes(t)) != 0:
                raise RuntimeError("mmc register_buffer failed for the host pool's %s" % name)
            self.registered.append((t.data_ptr(), _nbytes(t)))

    def _object_keys(self, keys):
        return [self.prefix + k + s for k in keys for s in self.suffixes]

    def _page_results(self, res, pages):
        per = len(self.suffixes)
        return [all(r == 0 for r in res[i * per:(i + 1) * per]) for i in range(pages)]

    # ---- zero-copy v1 interface (interface_v1: 1)
    def batch_exists(self, keys, extra_info=None):
        if not keys:
            return 0
        if not self.v1:
            res = self.store.batch_is_exist([self.prefix + k for k in keys])
            return next((i for i, r in enumerate(res) if r != 1), len(keys))
        res = self.store.batch_is_exist(self._object_keys(keys))
        per = len(self.suffixes)
        for i in range(len(keys)):
            if any(r != 1 for r in res[i * per:(i + 1) * per]):
                return i
        return len(keys)

    def _page_buffers(self, keys, host_indices):
        """The object keys of pages and the host pool's buffer for each, zero copy."""
        ptrs, sizes = self.mem_pool_host.get_page_buffer_meta(host_indices)
        okeys = self._object_keys(keys)
        if len(ptrs) != len(okeys):
            raise ValueError("the host pool gave %d buffers for %d objects" % (len(ptrs), len(okeys)))
        return okeys, ptrs, sizes

    def batch_get_v1(self, keys, host_indices, extra_info=None):
        if not keys:
            return []
        okeys, ptrs, sizes = self._page_buffers(keys, host_indices)
        res = self.store.batch_get_into(okeys, ptrs, sizes)
        return self._page_results(res, len(keys))

    def batch_set_v1(self, keys, host_indices, extra_info=None):
        if not keys:
            return []
        okeys, ptrs, sizes = self._page_buffers(keys, host_indices)
        exist = self.store.batch_is_exist(okeys)
        res = [0] * len(okeys)
        todo = [i for i, e in enumerate(exist) if e != 1]
        if todo:
            put = self.store.batch_put_from([okeys[i] for i in todo], [ptrs[i] for i in todo],
                                            [sizes[i] for i in todo])
            for i, r in zip(todo, put):
                res[i] = r
        return self._page_results(res, len(keys))

    # ---- the generic path: one object per page key, a flat tensor per page
    def get(self, key, target_location=None, target_sizes=None):
        out = self.batch_get([key], [target_location] if target_location is not None else None,
                             [target_sizes] if target_sizes is not None else None)
        return out[0]

    def batch_get(self, keys, target_locations=None, target_sizes=None):
        import torch
        okeys = [self.prefix + k for k in keys]
        if target_locations is None:
            infos = self.store.batch_get_key_info(okeys)
            if len(infos) != len(okeys):
                return [None] * len(keys)
            target_locations = [torch.empty(i.size(), dtype=torch.uint8) if i.size() else None for i in infos]
        out = [None] * len(keys)
        want = [i for i, t in enumerate(target_locations) if t is not None]
        if not want:
            return out
        res = self.store.batch_get_into([okeys[i] for i in want],
                                        [target_locations[i].data_ptr() for i in want],
                                        [_nbytes(target_locations[i]) for i in want])
        for i, r in zip(want, res):
            if r == 0:
                out[i] = target_locations[i]
        return out

    def set(self, key, value=None, target_location=None, target_sizes=None):
        return self.batch_set([key], [value] if value is not None else None,
                              [target_location] if target_location is not None else None)

    def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):
        if not keys:
            return True
        src = values if values is not None else target_locations
        if src is None or len(src) != len(keys):
            return False
        okeys = [self.prefix + k for k in keys]
        exist = self.store.batch_is_exist(okeys)
        todo = [i for i, e in enumerate(exist) if e != 1]
        if not todo:
            return True
        res = self.store.batch_put_from([okeys[i] for i in todo], [src[i].data_ptr() for i in todo],
                                        [_nbytes(src[i]) for i in todo])
        return all(r == 0 for r in res)

    def exists(self, key):
        return self.store.is_exist(self.prefix + key) == 1

    def clear(self):
        if self.store.remove_all() != 0:
            log.warning("mmc.sglang: clear() is not supported: libmmc has no remove-all call")

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
