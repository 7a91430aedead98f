"""mmc: Python over libmmc (ctypes, no compiler needed).

- The memcache_hybrid-compatible API: DistributedObjectStore, LocalConfig, ReplicateConfig, KeyInfo, MetaConfig,
  MetaService (ints and lists of codes, as MemCache's binding returns them).
- The Pythonic layer: Store (a context manager raising mmc.Error subclasses; numpy arrays, torch CPU tensors and
  memoryviews wherever a pointer is wanted; put_tensor / get_tensor).
- mmc.sglang: a native SGLang HiCache storage backend.

libmmc is found through $MMC_LIBRARY, else where meson installed it, else the build tree, else the loader's path.
"""
from ._lib import LibraryError, version as _libversion, library_path, strerror, LOCAL_CONFIG_VERSION
from ._lib import BATCH_MAX, KEY_MAX, LAYERS_MAX, REPLICA_MAX
from .config import LocalConfig, MetaConfig, ReplicateConfig, parse_size
from .store import DistributedObjectStore, KeyInfo, L2G, G2L, G2H, H2G, AUTO
from .store import MEDIA_HBM, MEDIA_DRAM, MEDIA_SSD, MEDIA_NONE
from .meta import MetaService
from .errors import Error, codes
from .errors import *  # noqa: F401,F403  (the Error subclasses)
from .pythonic import Store, set_log_handler

__version__ = "0.1.0"


def version():
    """mmc_version() of the libmmc actually loaded."""
    return _libversion


__all__ = ["DistributedObjectStore", "KeyInfo", "LocalConfig", "MetaConfig", "MetaService", "ReplicateConfig",
           "L2G", "G2L", "G2H", "H2G", "AUTO", "MEDIA_HBM", "MEDIA_DRAM", "MEDIA_SSD", "MEDIA_NONE",
           "Store", "Error", "LibraryError", "version", "strerror", "parse_size", "set_log_handler",
           "BATCH_MAX", "KEY_MAX", "LAYERS_MAX", "REPLICA_MAX", "library_path", "LOCAL_CONFIG_VERSION", "codes"]
