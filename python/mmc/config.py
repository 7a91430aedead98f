"""LocalConfig, MetaConfig and ReplicateConfig with memcache_hybrid's attribute names.

LocalConfig's defaults are read from the struct libmmc's mmc_local_config_init fills; its values go into a
configuration by key, as text, through mmc_config_set, which parses them exactly as a line of an mmc configuration
file (sizes such as "1GB": 4096, 2048KB, 512m, 2.5GB, 1TB; binary units, any case; an int is taken as bytes) and
checks their bounds. Attributes MemCache has but mmc has no use for (TLS, thread pools, aggregation) are kept and
ignored, as libmmc ignores the same keys in a configuration file.
"""
import ctypes

from . import _lib
from ._args import boolean, uint, sint, seq

# the size key with the widest bounds: parse_size() reads sizes through it
_SIZE_KEY = b"ock.mmc.local_service.ssd.size"


def _config():
    c = _lib.mmc_local_config()
    _lib.lib.mmc_local_config_init(ctypes.byref(c), _lib.LOCAL_CONFIG_VERSION)
    return c


def parse_size(text):
    """Bytes of a size string, parsed by libmmc as a configuration file's sizes (0 to 64TB); an int is bytes.
    Raises ValueError on a bad one."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError("size %d is negative" % text)
        return text
    if not isinstance(text, str):
        raise TypeError("a size is a str such as \"1GB\" or an int, not %s" % type(text).__name__)
    c = _config()
    if "\0" in text or _lib.lib.mmc_config_set(ctypes.byref(c), _SIZE_KEY, text.encode()) != 0:
        raise ValueError("bad size %r (use e.g. 4096, 2048KB, 512MB, 2.5GB, 1TB)" % text)
    return c.ssd_size


def format_size(n):
    for unit, shift in (("TB", 40), ("GB", 30), ("MB", 20), ("KB", 10)):
        if n and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return str(n)


_TLS_FILES = ("ca", "ca_crl", "cert", "key", "key_pass", "package", "decrypter")

# name -> (kind, ock.mmc key, the mmc_local_config field its default is read from). kind: str / size / int / bool.
# key None: accepted for compatibility, no effect. config_path has no key: it names the file of keys.
_LOCAL_ATTRS = {
    "meta_service_url": ("str", "ock.mmc.meta_service_url", "meta_service_url"),
    "config_store_url": ("str", "ock.mmc.local_service.config_store_url", "config_store_url"),
    "hcom_url": ("str", "ock.mmc.local_service.hcom_url", "hcom_url"),
    "log_level": ("str", "ock.mmc.log_level", "log_level"),
    "protocol": ("str", "ock.mmc.local_service.protocol", "protocol"),
    "dram_size": ("size", "ock.mmc.local_service.dram.size", "dram_size"),
    "hbm_size": ("size", "ock.mmc.local_service.hbm.size", "hbm_size"),
    "max_dram_size": ("size", "ock.mmc.local_service.max.dram.size", "max_dram_size"),
    "max_hbm_size": ("size", "ock.mmc.local_service.max.hbm.size", "max_hbm_size"),
    "memory_pool_mode": ("str", None, None),
    "world_size": ("int", "ock.mmc.local_service.world_size", "world_size"),
    "client_retry_milliseconds": ("int", "ock.mmc.client.retry_milliseconds", "retry_ms"),
    "client_timeout_seconds": ("int", "ock.mmc.client.timeout.seconds", "timeout_ms"),
    "read_thread_pool_size": ("int", None, None),
    "write_thread_pool_size": ("int", None, None),
    "aggregate_num": ("int", None, None),
    "aggregate_io": ("bool", None, None),
    "ubs_io_enable": ("bool", None, None),
    "tls_enable": ("bool", None, None),
    "config_store_tls_enable": ("bool", None, None),
    "hcom_tls_enable": ("bool", None, None),
    # mmc additions (mmc_local_config fields MemCache does not have)
    "config_path": ("str", None, "config_path"),
    "lease_ttl_ms": ("int", "ock.mmc.client.lease_ttl_ms", "lease_ttl_ms"),
    "heartbeat_ms": ("int", "ock.mmc.client.heartbeat_ms", "heartbeat_ms"),
    "rma_timeout_ms": ("int", "ock.mmc.client.rma_timeout_ms", "rma_timeout_ms"),
    "ssd_path": ("str", "ock.mmc.local_service.ssd.path", "ssd_path"),
    "ssd_size": ("size", "ock.mmc.local_service.ssd.size", "ssd_size"),
    "verify_checksum": ("bool", "ock.mmc.client.verify_checksum", "verify_checksum"),
    "tenant": ("str", "ock.mmc.client.tenant", "tenant"),
    "auth_token_file": ("str", "ock.mmc.client.auth_token_file", "auth_token_file"),
}
for _f in _TLS_FILES:
    _LOCAL_ATTRS["tls_%s_path" % _f] = ("str", None, None)
    _LOCAL_ATTRS["config_store_tls_%s_path" % _f] = ("str", None, None)
    if _f != "package":
        _LOCAL_ATTRS["hcom_tls_%s_path" % _f] = ("str", None, None)

_COMPAT_DEFAULTS = {"memory_pool_mode": "standard", "read_thread_pool_size": 32, "write_thread_pool_size": 4,
                    "aggregate_num": 122, "aggregate_io": True, "ubs_io_enable": False}


def _check(kind, name, value):
    if kind == "str":
        if not isinstance(value, str):
            raise TypeError("%s: expected str, got %s" % (name, type(value).__name__))
        return value
    if kind == "size":
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise TypeError("%s: expected a size str such as \"1GB\" (or an int), got %s" %
                            (name, type(value).__name__))
        return value if isinstance(value, str) else str(uint(value, name))
    if kind == "int":
        return uint(value, name, 0xFFFFFFFF if name != "lease_ttl_ms" else (1 << 64) - 1)
    return boolean(value, name)


class _Attrs:
    """Typed attributes from a table; unknown names raise AttributeError (as a pybind class does)."""
    __slots__ = ("_v",)
    _table = {}

    def __getattr__(self, name):
        try:
            return object.__getattribute__(self, "_v")[name]
        except KeyError:
            raise AttributeError("%r object has no attribute %r" % (type(self).__name__, name)) from None

    def __setattr__(self, name, value):
        if name == "_v":
            object.__setattr__(self, name, value)
            return
        if name not in self._table:
            raise AttributeError("%r object has no attribute %r" % (type(self).__name__, name))
        self._v[name] = _check(self._table[name][0], name, value)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._table))

    def __str__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join("%s=%r" % kv for kv in sorted(self._v.items())))

    __repr__ = __str__


class LocalConfig(_Attrs):
    """memcache_hybrid.LocalConfig over mmc_local_config; defaults are libmmc's."""
    __slots__ = ()
    _table = _LOCAL_ATTRS

    def __init__(self):
        c = _config()
        v = {}
        for name, (kind, _, field) in _LOCAL_ATTRS.items():
            if field is None:
                v[name] = _COMPAT_DEFAULTS.get(name, "" if kind == "str" else (False if kind == "bool" else 0))
            elif field == "timeout_ms":
                v[name] = c.timeout_ms // 1000
            elif kind == "size":
                v[name] = format_size(getattr(c, field))
            elif kind == "str":
                v[name] = getattr(c, field).decode()
            else:
                v[name] = getattr(c, field)
        object.__setattr__(self, "_v", v)

    def to_c(self):
        """The mmc_local_config: libmmc's defaults, then every attribute that has a key set through
        mmc_config_set (libmmc's log line says why a value is refused). Raises ValueError naming the attribute on
        a bad value."""
        c = _config()
        path = self._v["config_path"].encode()
        if len(path) >= _lib.PATH_SIZE or b"\0" in path:
            raise ValueError("config_path: longer than %d bytes, or holds a NUL" % (_lib.PATH_SIZE - 1))
        c.config_path = path
        for name, (kind, key, _) in _LOCAL_ATTRS.items():
            if key is None:
                continue
            value = self._v[name]
            text = ("true" if value else "false") if kind == "bool" else str(value)
            if "\0" in text or _lib.lib.mmc_config_set(ctypes.byref(c), key.encode(), text.encode()) != 0:
                raise ValueError("%s: bad value %r for %s" % (name, value, key))
        return c


# MetaConfig attribute -> (kind, ock.mmc key, default)
_META_ATTRS = {
    "meta_service_url": ("str", "ock.mmc.meta_service_url", "tcp://127.0.0.1:5000"),
    "config_store_url": ("str", "ock.mmc.meta_service.config_store_url", "tcp://127.0.0.1:6000"),
    "metrics_url": ("str", "ock.mmc.meta_service.metrics_url", "http://127.0.0.1:8000"),
    "ha_enable": ("bool", "ock.mmc.meta.ha.enable", False),
    "log_level": ("str", "ock.mmc.log_level", "info"),
    "log_path": ("str", "ock.mmc.log_path", ""),
    "log_rotation_file_size": ("int", "ock.mmc.log_rotation_file_size", 20),
    "log_rotation_file_count": ("int", "ock.mmc.log_rotation_file_count", 50),
    "evict_threshold_high": ("int", "ock.mmc.evict_threshold_high", 90),
    "evict_threshold_low": ("int", "ock.mmc.evict_threshold_low", 80),
    "ubs_io_enable": ("bool", "ock.mmc.ubs_io.enable", False),
    "tls_enable": ("bool", "ock.mmc.tls.enable", False),
    "config_store_tls_enable": ("bool", "ock.mmc.config_store.tls.enable", False),
    # mmc additions
    "data_dir": ("str", "ock.mmc.meta.data_dir", ""),
    "lease_ttl_ms": ("int", "ock.mmc.meta.lease_ttl_ms", 10000),
}
for _f in _TLS_FILES:
    _META_ATTRS["tls_%s_path" % _f] = ("str", "ock.mmc.tls.%s.path" % _f.replace("_", "."), "")
    _META_ATTRS["config_store_tls_%s_path" % _f] = ("str", "ock.mmc.config_store.tls.%s.path" % _f.replace("_", "."),
                                                    "")


class MetaConfig(_Attrs):
    """memcache_hybrid.MetaConfig: the settings MetaService.main() hands to mmc-metaserver."""
    __slots__ = ()
    _table = _META_ATTRS

    def __init__(self):
        object.__setattr__(self, "_v", {k: d for k, (_, _, d) in _META_ATTRS.items()})

    def env(self):
        """`key=value` settings for mmc-metaserver --env: every attribute that differs from its default."""
        out = []
        for name, (kind, key, default) in _META_ATTRS.items():
            v = self._v[name]
            if v != default:
                out.append("%s=%s" % (key, str(v).lower() if kind == "bool" else v))
        return out


class ReplicateConfig:
    """memcache_hybrid.ReplicateConfig: replicaNum (1..8, default 1) and preferredLocalServiceIDs."""
    __slots__ = ("_n", "_pref")

    def __init__(self):
        self._n = 1
        self._pref = []

    @property
    def replicaNum(self):
        return self._n

    @replicaNum.setter
    def replicaNum(self, v):
        self._n = uint(v, "replicaNum", 0xFFFF)

    @property
    def preferredLocalServiceIDs(self):
        return list(self._pref)

    @preferredLocalServiceIDs.setter
    def preferredLocalServiceIDs(self, v):
        self._pref = [sint(i, "preferredLocalServiceIDs") for i in seq(v, "preferredLocalServiceIDs")]

    def to_c(self):
        """The mmc_replicate_config, or None when MemCache would refuse it (replicaNum 0 or > 8, > 8 preferred)."""
        if self._n < 1 or self._n > _lib.REPLICA_MAX or len(self._pref) > _lib.REPLICA_MAX:
            return None
        c = _lib.mmc_replicate_config()
        c.replica_num = self._n
        c.preferred_count = len(self._pref)
        for i, p in enumerate(self._pref):
            c.preferred_local_service_ids[i] = p
        return c

    def __repr__(self):
        return "ReplicateConfig(replicaNum=%d, preferredLocalServiceIDs=%r)" % (self._n, self._pref)
