"""mooncake on mmc: `from mooncake.store import MooncakeDistributedStore, ReplicateConfig` backed by libmmc through
the mmc package (the same ctypes core). Installed only with meson -Dmooncake=true, so that it never shadows a real
Mooncake install; from a source tree put python/ on PYTHONPATH. See docs/python.md, "Mooncake users".
"""
