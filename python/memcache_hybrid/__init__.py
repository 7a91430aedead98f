"""memcache_hybrid on mmc: the names SGLang (npu_memcache) and vLLM-Ascend (backend "memcache") import, backed by
libmmc through the mmc package. Installed only with meson -Dmemcache_hybrid=true, so that it never shadows a real
MemCache install; from a source tree put python/ on PYTHONPATH.

It needs no memfabric_hybrid. L2G/G2L/G2H/H2G/AUTO are the copy directions (smem_bm_copy_type values).
"""
from mmc import DistributedObjectStore, KeyInfo, LocalConfig, MetaConfig, MetaService, ReplicateConfig
from mmc import L2G, G2L, G2H, H2G, AUTO

__all__ = ["DistributedObjectStore", "KeyInfo", "LocalConfig", "MetaConfig", "MetaService", "ReplicateConfig",
           "L2G", "G2L", "G2H", "H2G", "AUTO"]
