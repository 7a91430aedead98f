"""LocalConfig, MetaConfig and ReplicateConfig with memcache_hybrid's attribute names.

LocalConfig maps onto struct mmc_local_config (the defaults come from libmmc's mmc_local_config_init). Sizes are
strings such as "1GB" parsed with the rules of mmc configuration files (4096, 2048KB, 512m, 2.5GB, 1TB; binary
units, any case); an int is taken as bytes. Attributes MemCache has but mmc has no use for (TLS, thread pools,
aggregation) are kept and ignored, as libmmc ignores the same keys in a configuration file.
"""
import ctypes

from . import _lib
from ._args import boolean, uint, sint, seq

_libc = ctypes.CDLL(None)
_libc.strtod.restype = ctypes.c_double
_libc.strtod.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]

_UNITS = {"": 0, "b": 0, "k": 10, "kb": 10, "m": 20, "mb": 20, "g": 30, "gb": 30, "t": 40, "tb": 40}


def parse_size(text):
    """Bytes of a size string, with conf_parse_size()'s rules; raises ValueError on a bad one."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError("size %d is negative" % text)
        return text
    if not isinstance(text, str):
        raise TypeError("a size is a str such as \"1GB\" or an int, not %s" % type(text).__name__)
    raw = text.encode()
    if not raw[:1].isdigit():
        raise ValueError("bad size %r" % text)
    buf = ctypes.create_string_buffer(raw)
    end = ctypes.c_char_p()
    v = _libc.strtod(buf, ctypes.byref(end))
    consumed = ctypes.cast(end, ctypes.c_void_p).value - ctypes.addressof(buf)
    rest = raw[consumed:].lstrip(b" \t\n\r\f\v").decode(errors="replace").lower()
    if rest not in _UNITS or v < 0 or v != v:
        raise ValueError("bad size %r (use e.g. 4096, 2048KB, 512MB, 2.5GB, 1TB)" % text)
    b = v * (1 << _UNITS[rest])
    if _UNITS[rest]:  # a fraction of a unit is the nearest byte (0.1GB), as in conf_parse_size()
        b = float(int(b + 0.5))
    if b >= 18446744073709551615.0 or b != int(b):
        raise ValueError("bad size %r (not a whole number of bytes)" % text)
    return int(b)


def format_size(n):
    for unit, shift in (("TB", 40), ("GB", 30), ("MB", 20), ("KB", 10)):
        if n and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return str(n)


_TLS_FILES = ("ca", "ca_crl", "cert", "key", "key_pass", "package", "decrypter")

# name -> (kind, C field or None). kind: str / size / int / bool. None: accepted for compatibility, no effect.
_LOCAL_ATTRS = {
    "meta_service_url": ("str", "meta_service_url"),
    "config_store_url": ("str", "config_store_url"),
    "hcom_url": ("str", "hcom_url"),
    "log_level": ("str", "log_level"),
    "protocol": ("str", "protocol"),
    "dram_size": ("size", "dram_size"),
    "hbm_size": ("size", "hbm_size"),
    "max_dram_size": ("size", "max_dram_size"),
    "max_hbm_size": ("size", "max_hbm_size"),
    "memory_pool_mode": ("str", None),
    "world_size": ("int", "world_size"),
    "client_retry_milliseconds": ("int", "retry_ms"),
    "client_timeout_seconds": ("int", "timeout_ms"),
    "read_thread_pool_size": ("int", None),
    "write_thread_pool_size": ("int", None),
    "aggregate_num": ("int", None),
    "aggregate_io": ("bool", None),
    "ubs_io_enable": ("bool", None),
    "tls_enable": ("bool", None),
    "config_store_tls_enable": ("bool", None),
    "hcom_tls_enable": ("bool", None),
    # mmc additions (mmc_local_config fields MemCache does not have)
    "config_path": ("str", "config_path"),
    "lease_ttl_ms": ("int", "lease_ttl_ms"),
    "heartbeat_ms": ("int", "heartbeat_ms"),
    "rma_timeout_ms": ("int", "rma_timeout_ms"),
    "ssd_path": ("str", "ssd_path"),
    "ssd_size": ("size", "ssd_size"),
    "verify_checksum": ("bool", "verify_checksum"),
}
for _f in _TLS_FILES:
    _LOCAL_ATTRS["tls_%s_path" % _f] = ("str", None)
    _LOCAL_ATTRS["config_store_tls_%s_path" % _f] = ("str", None)
    if _f != "package":
        _LOCAL_ATTRS["hcom_tls_%s_path" % _f] = ("str", None)

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
        c = _lib.mmc_local_config()
        _lib.lib.mmc_local_config_init(ctypes.byref(c), _lib.LOCAL_CONFIG_VERSION)
        v = {}
        for name, (kind, field) in _LOCAL_ATTRS.items():
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
        """The mmc_local_config; raises ValueError naming the attribute on a bad value."""
        c = _lib.mmc_local_config()
        _lib.lib.mmc_local_config_init(ctypes.byref(c), _lib.LOCAL_CONFIG_VERSION)
        for name, (kind, field) in _LOCAL_ATTRS.items():
            if field is None:
                continue
            value = self._v[name]
            if kind == "str":
                raw = value.encode()
                cap = getattr(type(c), field).size
                if len(raw) >= cap:
                    raise ValueError("%s is longer than %d bytes" % (name, cap - 1))
                setattr(c, field, raw)
            elif kind == "size":
                try:
                    setattr(c, field, parse_size(value))
                except ValueError as e:
                    raise ValueError("%s: %s" % (name, e)) from None
            elif field == "timeout_ms":
                if value * 1000 > 0xFFFFFFFF:
                    raise ValueError("client_timeout_seconds %d is too large" % value)
                c.timeout_ms = value * 1000
            else:
                setattr(c, field, value)
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
