"""DistributedObjectStore and KeyInfo: memcache_hybrid's API over libmmc.

Return conventions are MemCache's Python ones: ints and lists of ints, never an exception for a storage error.
Pointers are Python ints; wrong argument types raise TypeError. Every call that moves bytes or waits on the meta
server runs with the GIL released (ctypes.CDLL), including get() and close().
"""
import ctypes

from . import _args as A
from . import _lib
from ._lib import lib, BATCH_MAX, MMC_INVALID_PARAM as INVALID, MMC_ERROR as ERROR
from .config import LocalConfig, ReplicateConfig

L2G, G2L, G2H, H2G, AUTO = 0, 1, 2, 3, 9
MEDIA_HBM, MEDIA_DRAM, MEDIA_SSD, MEDIA_NONE = 0, 1, 2, 3
_U32_MAX = 0xFFFFFFFF

_DEFAULT_RC = ReplicateConfig()


def _rc(rc):
    """(ok, pointer) for a ReplicateConfig argument; ok False: MemCache refuses it (-1)."""
    if not isinstance(rc, ReplicateConfig):
        raise TypeError("replicateConfig: expected ReplicateConfig, got %s" % type(rc).__name__)
    c = rc.to_c()
    return (c is not None), (ctypes.byref(c) if c is not None else None)


def _batch_size(n):
    """None when n keys may go to libmmc; else the early MemCache answer kind: 'empty' or 'over'."""
    if n == 0:
        return "empty"
    if n > BATCH_MAX:
        return "over"
    return None


class KeyInfo:
    """What the meta server knows of a key; size() == 0 when it is absent (or the query failed)."""
    __slots__ = ("_size", "_locs", "_types", "_gvas")

    def __init__(self, c=None):
        if c is None or not c.size:
            self._size, self._locs, self._types, self._gvas = 0, [], [], []
            return
        n = min(c.blob_num, _lib.REPLICA_MAX)
        self._size = c.size
        self._locs = list(c.loc[:n])
        self._types = list(c.type[:n])
        self._gvas = list(c.gva[:n])

    def size(self):
        return self._size

    def loc_list(self):
        return list(self._locs)

    def type_list(self):
        return list(self._types)

    def gva_list(self):
        return list(self._gvas)

    def __str__(self):
        return "loc:%s, type:%s, blobNum:%d, size:%d" % (",".join(map(str, self._locs)),
                                                         ",".join(map(str, self._types)), len(self._locs),
                                                         self._size)

    __repr__ = __str__


def _remove_code(rc):
    # MemCache answers a missing key with MMC_UNMATCHED_KEY; libmmc says MMC_OBJECT_NOT_EXISTS
    return _lib.MMC_UNMATCHED_KEY if rc == _lib.MMC_OBJECT_NOT_EXISTS else rc


class DistributedObjectStore:
    """memcache_hybrid.DistributedObjectStore: one libmmc store (mmc_create)."""

    def __init__(self):
        self._s = lib.mmc_create()
        if not self._s:
            raise MemoryError("mmc_create failed")
        self._last_error = ""

    def __del__(self):
        s, self._s = getattr(self, "_s", None), None
        if s and lib is not None:
            lib.mmc_destroy(s)

    # ---- life cycle
    def setup(self, config):
        if not isinstance(config, LocalConfig):
            raise TypeError("setup: expected LocalConfig, got %s" % type(config).__name__)
        try:
            c = config.to_c()
        except ValueError as e:
            self._last_error = str(e)
            return INVALID
        rc = lib.mmc_setup(self._s, ctypes.byref(c))
        self._last_error = "" if rc == 0 else "mmc_setup: " + _lib.strerror(rc)
        return rc

    def init(self, device_id, init_bm=True):
        dev = A.uint(device_id, "device_id", _U32_MAX)
        rc = lib.mmc_init(self._s, dev, A.boolean(init_bm, "init_bm"))
        self._last_error = "" if rc == 0 else "mmc_init: " + _lib.strerror(rc)
        return rc

    def close(self):
        if self._s:
            lib.mmc_teardown(self._s)
        return 0

    def get_local_service_id(self):
        out = ctypes.c_uint32()
        rc = lib.mmc_get_local_service_id(self._s, ctypes.byref(out))
        return out.value if rc == 0 else _U32_MAX

    # ---- buffers
    def register_buffer(self, buffer_ptr, size):
        return lib.mmc_register_buffer(self._s, A.uint(buffer_ptr, "buffer_ptr"), A.uint(size, "size"))

    def unregister_buffer(self, buffer_ptr, size):
        return lib.mmc_unregister_buffer(self._s, A.uint(buffer_ptr, "buffer_ptr"), A.uint(size, "size"))

    # ---- buffer-object puts and bytes gets
    def put(self, key, buf, replicateConfig=_DEFAULT_RC):
        k = A.key(key)
        with A.Buffer(buf, "buf") as b:
            ok, rc = _rc(replicateConfig)
            if not ok:
                return ERROR
            return lib.mmc_put_from(self._s, k, b.addr, b.len, H2G, rc)

    def put_batch(self, keys, values, replicateConfig=_DEFAULT_RC):
        ks = A.keys(keys)
        vals = A.seq(values, "values")
        if not ks and not vals:
            return 0
        if len(ks) > BATCH_MAX or len(ks) != len(vals):
            return INVALID
        bufs = [A.Buffer(v, "values") for v in vals]
        try:
            ok, rc = _rc(replicateConfig)
            if not ok:
                return ERROR
            res = A.results(len(ks))
            ptrs, lens = A.u64s([b.addr for b in bufs], "values"), A.u64s([b.len for b in bufs], "values")
            r = lib.mmc_batch_put_from(self._s, A.key_array(ks), A.addr(ptrs), A.addr(lens), len(ks), H2G, rc,
                                       A.addr(res))
            if r:
                return r
            return next((x for x in res if x), 0)
        finally:
            for b in bufs:
                b.release()

    def get(self, key, /):
        k = A.key(key)
        info = _lib.mmc_key_info()
        if lib.mmc_get_key_info(self._s, k, 0, ctypes.byref(info)) or not info.size:
            return b""
        out = bytearray(info.size)
        addr = ctypes.addressof((ctypes.c_char * info.size).from_buffer(out))
        if lib.mmc_get_into(self._s, k, addr, info.size, G2H):
            return b""
        return bytes(out)

    def get_batch(self, keys, /):
        ks = A.keys(keys)
        if _batch_size(len(ks)):
            return [] if not ks else [b""] * len(ks)
        infos = (_lib.mmc_key_info * len(ks))()
        if lib.mmc_batch_get_key_info(self._s, A.key_array(ks), len(ks), 0, infos):
            return [b""] * len(ks)
        want = [i for i in range(len(ks)) if infos[i].size]
        out = [b""] * len(ks)
        if not want:
            return out
        bufs = {i: bytearray(infos[i].size) for i in want}
        addrs = [ctypes.addressof((ctypes.c_char * len(bufs[i])).from_buffer(bufs[i])) for i in want]
        res = A.results(len(want))
        addrs, lens = A.u64s(addrs, "buffers"), A.u64s([infos[i].size for i in want], "sizes")
        lib.mmc_batch_get_into(self._s, A.key_array([ks[i] for i in want]), A.addr(addrs), A.addr(lens),
                               len(want), G2H, A.addr(res))
        for j, i in enumerate(want):
            if res[j] == 0:
                out[i] = bytes(bufs[i])
        return out

    # ---- pointer puts and gets
    def put_from(self, key, buffer_ptr, size, direct=H2G, replicateConfig=_DEFAULT_RC):
        k = A.key(key)
        p, n, d = A.uint(buffer_ptr, "buffer_ptr"), A.uint(size, "size"), A.sint(direct, "direct")
        ok, rc = _rc(replicateConfig)
        if not ok:
            return ERROR
        return lib.mmc_put_from(self._s, k, p, n, d, rc)

    def get_into(self, key, buffer_ptr, size, direct=G2H):
        k = A.key(key)
        return lib.mmc_get_into(self._s, k, A.uint(buffer_ptr, "buffer_ptr"), A.uint(size, "size"),
                                A.sint(direct, "direct"))

    def _flat(self, keys, buffer_ptrs, sizes, direct):
        """The arguments of a flat batch, and the answer when the batch is refused before any call (else None)."""
        ks = A.keys(keys)
        ps, ns = A.u64s(buffer_ptrs, "buffer_ptrs"), A.u64s(sizes, "sizes")
        early = _batch_size(len(ks))
        if early:
            refused = [] if early == "empty" else [INVALID]
        elif len(ps) != len(ks) or len(ns) != len(ks):
            refused = [ERROR] * len(ks)
        else:
            refused = None
        return ks, ps, ns, A.sint(direct, "direct"), refused

    def batch_put_from(self, keys, buffer_ptrs, sizes, direct=H2G, replicateConfig=_DEFAULT_RC):
        ks, ps, ns, d, refused = self._flat(keys, buffer_ptrs, sizes, direct)
        if refused is not None:
            return refused
        ok, rc = _rc(replicateConfig)
        if not ok:
            return [ERROR] * len(ks)
        res = A.results(len(ks))
        lib.mmc_batch_put_from(self._s, A.key_array(ks), A.addr(ps), A.addr(ns), len(ks), d, rc, A.addr(res))
        return res.tolist()

    def batch_get_into(self, keys, buffer_ptrs, sizes, direct=G2H):
        ks, ps, ns, d, refused = self._flat(keys, buffer_ptrs, sizes, direct)
        if refused is not None:
            return refused
        res = A.results(len(ks))
        lib.mmc_batch_get_into(self._s, A.key_array(ks), A.addr(ps), A.addr(ns), len(ks), d, A.addr(res))
        return res.tolist()

    def batch_get_into_prefix(self, keys, buffer_ptrs, sizes, timeout_ms, direct=G2H):
        """mmc's own (not MemCache's): the leading keys of a prefix that land within timeout_ms. Returns how many
        (buffers past them are unspecified), or a negative code when the call is refused."""
        ks, ps, ns, d, refused = self._flat(keys, buffer_ptrs, sizes, direct)
        if refused is not None:
            return 0 if not refused else refused[0]
        landed = ctypes.c_size_t(0)
        rc = lib.mmc_batch_get_into_prefix(self._s, A.key_array(ks), A.addr(ps), A.addr(ns), len(ks), d,
                                           A.uint(timeout_ms, "timeout_ms", 0xFFFFFFFF), ctypes.byref(landed))
        return rc if rc else landed.value

    # ---- layer calls: one object gathered from / scattered to several buffers
    def put_from_layers(self, key, buffer_ptrs, sizes, direct=H2G, replicateConfig=_DEFAULT_RC):
        k = A.key(key)
        ps, ns, d = A.u64s(buffer_ptrs, "buffer_ptrs"), A.u64s(sizes, "sizes"), A.sint(direct, "direct")
        if len(ps) != len(ns):
            return INVALID
        ok, rc = _rc(replicateConfig)
        if not ok:
            return ERROR
        return lib.mmc_put_from_layers(self._s, k, A.addr(ps), A.addr(ns), len(ps), d, rc)

    def get_into_layers(self, key, buffer_ptrs, sizes, direct=G2H):
        k = A.key(key)
        ps, ns, d = A.u64s(buffer_ptrs, "buffer_ptrs"), A.u64s(sizes, "sizes"), A.sint(direct, "direct")
        if len(ps) != len(ns):
            return INVALID
        return lib.mmc_get_into_layers(self._s, k, A.addr(ps), A.addr(ns), len(ps), d)

    def _layers(self, keys, buffer_ptrs, sizes, direct):
        """(keys, ptr rows, size rows, layers, direct, keepalive) or an early answer list."""
        ks = A.keys(keys)
        pflat, plens = A.nested_u64s(buffer_ptrs, "buffer_ptrs")
        nflat, nlens = A.nested_u64s(sizes, "sizes")
        d = A.sint(direct, "direct")
        early = _batch_size(len(ks))
        if early:
            return [] if early == "empty" else [INVALID]
        if len(plens) != len(ks) or plens != nlens:
            return [INVALID] * len(ks)
        prow, nrow = A.row_addrs(pflat, plens), A.row_addrs(nflat, nlens)
        layers = A.u64s(plens, "layers")
        return ks, A.addr(prow), A.addr(nrow), A.addr(layers), d, (pflat, nflat, prow, nrow, layers)

    def batch_put_from_layers(self, keys, buffer_ptrs, sizes, direct=H2G, replicateConfig=_DEFAULT_RC):
        a = self._layers(keys, buffer_ptrs, sizes, direct)
        if isinstance(a, list):
            return a
        ks, parr, narr, layers, d, _keep = a  # _keep: the arrays behind the addresses
        ok, rc = _rc(replicateConfig)
        if not ok:
            return [ERROR] * len(ks)
        res = A.results(len(ks))
        lib.mmc_batch_put_from_layers(self._s, A.key_array(ks), parr, narr, layers, len(ks), d, rc, A.addr(res))
        return res.tolist()

    def batch_get_into_layers(self, keys, buffer_ptrs, sizes, direct=G2H):
        a = self._layers(keys, buffer_ptrs, sizes, direct)
        if isinstance(a, list):
            return a
        ks, parr, narr, layers, d, _keep = a  # _keep: the arrays behind the addresses
        res = A.results(len(ks))
        lib.mmc_batch_get_into_layers(self._s, A.key_array(ks), parr, narr, layers, len(ks), d, A.addr(res))
        return res.tolist()

    def batch_get_into_layers_prefix(self, keys, buffer_ptrs, sizes, timeout_ms, direct=G2H):
        """batch_get_into_prefix into layer lists (mmc's own)."""
        a = self._layers(keys, buffer_ptrs, sizes, direct)
        if isinstance(a, list):
            return 0 if not a else a[0]
        ks, parr, narr, layers, d, _keep = a  # _keep: the arrays behind the addresses
        landed = ctypes.c_size_t(0)
        rc = lib.mmc_batch_get_into_layers_prefix(self._s, A.key_array(ks), parr, narr, layers, len(ks), d,
                                                  A.uint(timeout_ms, "timeout_ms", 0xFFFFFFFF), ctypes.byref(landed))
        return rc if rc else landed.value

    # ---- metadata
    def remove(self, key, /):
        return _remove_code(lib.mmc_remove(self._s, A.key(key)))

    def remove_batch(self, keys, /):
        ks = A.keys(keys)
        early = _batch_size(len(ks))
        if early:
            return [] if early == "empty" else [INVALID]
        res = A.results(len(ks))
        lib.mmc_batch_remove(self._s, A.key_array(ks), len(ks), A.addr(res))
        return [_remove_code(r) for r in res]

    def remove_all(self):
        """Removes every object (mmc_remove_all): 0, or the error code. A libmmc without that call: MMC_ERROR."""
        n = self.remove_all_count()
        return n if n < 0 else 0

    def remove_all_count(self):
        """mmc_remove_all: how many objects it removed, or a negative code (MMC_ERROR when libmmc lacks it)."""
        if not _lib.has("mmc_remove_all"):
            self._last_error = "remove_all: this libmmc has no mmc_remove_all"
            return ERROR
        out = ctypes.c_uint64()
        rc = lib.mmc_remove_all(self._s, ctypes.byref(out))
        return rc if rc else out.value

    def remove_by_regex_count(self, regex):
        """mmc_remove_by_regex (POSIX ERE, searched): how many it removed, or a negative code (MMC_INVALID_PARAM for a
        pattern that does not compile; MMC_ERROR when libmmc lacks the call)."""
        r = A.key(regex, "regex")
        if not _lib.has("mmc_remove_by_regex"):
            self._last_error = "remove_by_regex: this libmmc has no mmc_remove_by_regex"
            return ERROR
        out = ctypes.c_uint64()
        rc = lib.mmc_remove_by_regex(self._s, r, ctypes.byref(out))
        return rc if rc else out.value

    def is_exist(self, key, /):
        return lib.mmc_is_exist(self._s, A.key(key))

    def batch_is_exist(self, keys):
        ks = A.keys(keys)
        early = _batch_size(len(ks))
        if early:
            return [] if early == "empty" else [INVALID]
        res = A.results(len(ks))
        lib.mmc_batch_is_exist(self._s, A.key_array(ks), len(ks), A.addr(res))
        return res.tolist()

    def get_key_info(self, key, /, flag=0):
        k = A.key(key)
        out = _lib.mmc_key_info()
        if lib.mmc_get_key_info(self._s, k, A.uint(flag, "flag", _U32_MAX), ctypes.byref(out)):
            return KeyInfo()
        return KeyInfo(out)

    def batch_get_key_info(self, keys, flag=0):
        ks = A.keys(keys)
        f = A.uint(flag, "flag", _U32_MAX)
        if _batch_size(len(ks)):
            return []
        out = (_lib.mmc_key_info * len(ks))()
        if lib.mmc_batch_get_key_info(self._s, A.key_array(ks), len(ks), f, out):
            return []
        return [KeyInfo(out[i]) for i in range(len(ks))]

    # ---- tiers (mmc: the whole C API)
    def prefetch_keys(self, keys, src_media=MEDIA_SSD, dst_media=MEDIA_DRAM, flags=0):
        ks = A.keys(keys)
        if _batch_size(len(ks)):
            return INVALID
        return lib.mmc_prefetch_keys(self._s, A.key_array(ks), len(ks), A.uint(src_media, "src_media", 255),
                                     A.uint(dst_media, "dst_media", 255), A.uint(flags, "flags", _U32_MAX))

    def evict_keys(self, keys, src_media=MEDIA_DRAM, dst_media=MEDIA_SSD, flags=0):
        ks = A.keys(keys)
        if _batch_size(len(ks)):
            return INVALID
        return lib.mmc_evict_keys(self._s, A.key_array(ks), len(ks), A.uint(src_media, "src_media", 255),
                                  A.uint(dst_media, "dst_media", 255), A.uint(flags, "flags", _U32_MAX))

    # ---- the GVA one-copy flow
    def batch_alloc(self, keys, sizes, media=MEDIA_DRAM):
        ks, ns = A.keys(keys), A.u64s(sizes, "sizes")
        m = A.uint(media, "media", 0xFFFF)
        early = _batch_size(len(ks))
        if early:
            return [] if early == "empty" else [0] * len(ks)
        if len(ns) != len(ks):
            return [0] * len(ks)
        gvas = A.zeros_u64(len(ks))
        if lib.mmc_batch_malloc(self._s, A.key_array(ks), A.addr(ns), len(ks), m, 0, A.addr(gvas)):
            return [0] * len(ks)
        return gvas.tolist()

    def batch_copy(self, gva_ptrs, buffer_ptrs, sizes, direct=G2L):
        gs, ps, ns = A.u64s(gva_ptrs, "gva_ptrs"), A.u64s(buffer_ptrs, "buffer_ptrs"), A.u64s(sizes, "sizes")
        d = A.sint(direct, "direct")
        if len(gs) != len(ps) or len(ps) != len(ns):
            return ERROR
        if not gs:
            return 0
        return lib.mmc_batch_copy(self._s, A.addr(gs), A.addr(ps), A.addr(ns), len(gs), d, 0)

    def batch_copy_layers(self, gva_ptrs, buffer_ptrs, sizes, direct=G2L):
        gs = A.u64s(gva_ptrs, "gva_ptrs")
        pss = [A.u64s(x, "buffer_ptrs") for x in A.seq(buffer_ptrs, "buffer_ptrs")]
        nss = [A.u64s(x, "sizes") for x in A.seq(sizes, "sizes")]
        d = A.sint(direct, "direct")
        if len(pss) != len(gs) or len(nss) != len(gs) or any(len(p) != len(n) for p, n in zip(pss, nss)):
            return ERROR
        fg, fp, fn = [], [], []
        for g, ps, ns in zip(gs, pss, nss):
            off = 0
            for p, n in zip(ps, ns):
                fg.append(g + off)
                fp.append(p)
                fn.append(n)
                off += n
        if not fg:
            return 0
        fg, fp, fn = A.u64s(fg, "gva_ptrs"), A.u64s(fp, "buffer_ptrs"), A.u64s(fn, "sizes")
        return lib.mmc_batch_copy(self._s, A.addr(fg), A.addr(fp), A.addr(fn), len(fg), d, 0)

    def batch_add_lease(self, keys, leaseTtlMs=0):
        ks = A.keys(keys)
        ttl = A.uint(leaseTtlMs, "leaseTtlMs")
        early = _batch_size(len(ks))
        if early:
            return [] if early == "empty" else [INVALID]
        res = A.results(len(ks))
        lib.mmc_batch_add_lease(self._s, A.key_array(ks), len(ks), ttl, A.addr(res))
        return res.tolist()

    def batch_remove_lease(self, keys):
        ks = A.keys(keys)
        if _batch_size(len(ks)):
            return INVALID
        return lib.mmc_batch_remove_lease(self._s, A.key_array(ks), len(ks))

    def batch_write_finish(self, keys, results):
        ks = A.keys(keys)
        rs = A.i32s(results, "results")
        if not ks or len(ks) > BATCH_MAX or len(rs) != len(ks):
            return [INVALID] * len(ks)
        out = A.results(len(ks))
        lib.mmc_batch_write_finish(self._s, A.key_array(ks), A.addr(rs), len(ks), A.addr(out))
        return out.tolist()
