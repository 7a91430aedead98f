"""mmc.Store: a Pythonic store for new users.

- A context manager (close() on exit); errors raise mmc.Error subclasses with the code and message.
- Wherever a pointer is wanted it takes a numpy array, a torch CPU tensor (through data_ptr()), a memoryview or
  any buffer-protocol object (or a raw int address with an explicit size).
- register(obj) / unregister(obj) pin a buffer with the fabric; register=True on a data call does it on first use.
- put_tensor / get_tensor(key, out=...) store a tensor with its dtype and shape, as Mooncake's helpers do.
"""
import ctypes
import json
import sys
import threading

from . import _args as A
from . import _lib
from .config import LocalConfig, ReplicateConfig
from .errors import BatchError, Error, error_for
from .store import DistributedObjectStore, G2H, H2G

_lib_handle = _lib.lib
_log_fn = None  # keeps the ctypes callback alive
_log_prev = None  # and the one before: a handler that replaces itself is still running in it


def set_log_handler(fn):
    """fn(level: int, message: str) receives libmmc's log lines (any thread); None restores the default."""
    global _log_fn, _log_prev
    if fn is None:
        # libmmc first: it returns once no thread is inside the old callback, which may be freed only then
        _lib_handle.mmc_set_log_handler(ctypes.cast(None, _lib.LOG_FN))
        _log_prev, _log_fn = _log_fn, None
        return

    def tramp(level, msg):
        try:
            fn(level, msg.decode(errors="replace"))
        except Exception:  # a handler must not unwind into C
            pass

    cb = _lib.LOG_FN(tramp)
    _lib_handle.mmc_set_log_handler(cb)
    _log_prev, _log_fn = _log_fn, cb


class _Ref:
    """(addr, nbytes) of an object plus what keeps its memory alive while a call uses it."""
    __slots__ = ("addr", "len", "hold")

    def __init__(self, addr, n, hold=None):
        self.addr, self.len, self.hold = addr, n, hold

    def release(self):
        if isinstance(self.hold, A.Buffer):
            self.hold.release()


def _within(n, size, name):
    """size= of an object of n bytes: at most n (libmmc would read or write past the object's memory)."""
    if size is None:
        return n
    size = A.uint(size, "size")
    if size > n:
        raise ValueError("%s: size %d exceeds the buffer's %d bytes" % (name, size, n))
    return size


def _numpy():
    return sys.modules.get("numpy")  # loaded by whoever made a numpy object; never imported here


def _writable_memory(addr, n):
    """Whether [addr, addr + n) lies in writable mappings: a tensor over a read-only mmap (torch.from_numpy of an
    np.load(mmap_mode="r") array) has no flag that says so, and libmmc would crash writing into it. The mappings are
    read at each call (34 µs with torch loaded), never from a copy: a read-only mapping may since have taken the
    address of a freed writable one. The engines' calls take raw addresses and do not pay this."""
    if n == 0:
        return True
    end, at = addr + n, addr
    with open("/proc/self/maps") as f:
        for line in f:  # sorted by address; adjacent writable mappings cover a range together
            addrs, perms = line.split(None, 2)[:2]
            lo, hi = (int(x, 16) for x in addrs.split("-"))
            if hi <= at:
                continue
            if lo > at or perms[1] != "w":
                return False
            at = hi
            if at >= end:
                return True
    return False


def _tensor_storage(t):
    """What owns a tensor's memory: held for a call, so that another thread's t.set_() cannot free the memory under
    libmmc (the tensor object alone does not keep its old storage)."""
    storage = getattr(t, "untyped_storage", None) or t.storage  # torch >= 2.0, else 1.x
    return storage()


def ref(obj, size=None, writable=False, name="buffer"):
    """The memory of obj: int address (with size), torch CPU tensor, numpy array or buffer-protocol object. A numpy
    integer with size= is an address too (as a tensor's data_ptr() kept in an array gives it); without, a value."""
    np = _numpy()
    if np is not None and isinstance(obj, np.integer) and size is not None:
        obj = int(obj)
    if isinstance(obj, int) and not isinstance(obj, bool):
        if size is None:
            raise TypeError("%s: a raw address needs size=" % name)
        return _Ref(A.uint(obj, name), A.uint(size, "size"))
    if hasattr(obj, "data_ptr") and hasattr(obj, "element_size"):  # torch.Tensor
        if obj.device.type != "cpu":
            raise TypeError("%s: a %s tensor; mmc moves host memory only (use a CPU tensor)" % (name, obj.device))
        if not obj.is_contiguous():
            raise TypeError("%s: the tensor is not contiguous" % name)
        if obj.is_conj() or obj.is_neg():
            raise TypeError("%s: a lazily conjugated or negated view; resolve it first (resolve_conj(), "
                            "resolve_neg())" % name)
        # the address from the storage held, so that another thread's set_() can neither free it nor move it
        storage = _tensor_storage(obj)
        offset = obj.storage_offset() * obj.element_size()
        n = _within(obj.numel() * obj.element_size(), size, name)
        if offset + n > storage.nbytes():
            raise TypeError("%s: the tensor changed storage while it was read" % name)
        addr = storage.data_ptr() + offset
        if writable and not _writable_memory(addr, n):
            raise TypeError("%s: the tensor's memory is read-only" % name)
        return _Ref(addr, n, (obj, storage))
    if np is not None and isinstance(obj, np.generic):
        # a scalar's __array_interface__ points at a temporary array, freed once the interface is dropped: its
        # value goes in an array of its own, which the reference holds
        if writable:
            raise TypeError("%s: a numpy scalar cannot be written into" % name)
        obj = np.array(obj)
    if np is not None and isinstance(obj, np.ndarray):
        if not obj.flags.c_contiguous:
            raise TypeError("%s: the array is not C-contiguous" % name)
        if writable and not obj.flags.writeable:
            raise TypeError("%s: the array is read-only" % name)
        if obj.dtype.hasobject:
            raise TypeError("%s: an array of Python objects holds pointers, not data" % name)
        return _Ref(obj.__array_interface__["data"][0], _within(obj.nbytes, size, name), obj)
    b = A.Buffer(obj, name, writable=writable)
    try:
        n = _within(b.len, size, name)
    except (TypeError, ValueError):
        b.release()
        raise
    return _Ref(b.addr, n, b)


_TENSOR_HEADER = 256  # bytes: b"MMCT" + JSON {dtype, shape, lib}, NUL padded


def _check(rc, what):
    if rc != 0:
        raise error_for(rc, what)


class Store:
    """A started libmmc store.

    Store(meta_service_url="tcp://127.0.0.1:5000", lend=True, device_id=0, config=None, **settings):
    settings are LocalConfig attributes (protocol="host_tcp", dram_size="4GB", ...). lend=False makes a client
    that lends no memory. Without a config and without settings, $MMC_LOCAL_CONFIG_PATH is read, as mmc_init does.
    """

    def __init__(self, meta_service_url=None, *, lend=True, device_id=0, config=None, **settings):
        self._raw = DistributedObjectStore()
        self._registered = {}
        self._reg_lock = threading.Lock()  # one registration per range, whichever threads ask for it at once
        if config is not None and not isinstance(config, LocalConfig):
            raise TypeError("config: expected LocalConfig, got %s" % type(config).__name__)
        if meta_service_url is not None:
            settings["meta_service_url"] = meta_service_url
        if config is not None or settings:
            cfg = config if config is not None else LocalConfig()
            for k, v in settings.items():
                if k not in LocalConfig._table:
                    raise TypeError("Store: unknown setting %r (not a LocalConfig attribute)" % k)
                setattr(cfg, k, v)
            try:
                c = cfg.to_c()
            except ValueError as e:
                raise error_for(_lib.MMC_INVALID_PARAM, str(e)) from None
            _check(_lib_handle.mmc_setup(self._raw._s, ctypes.byref(c)), "mmc_setup")
        _check(self._raw.init(device_id, lend), "mmc_init")
        self.closed = False

    # ---- life cycle
    def close(self):
        if not getattr(self, "closed", True):
            with self._reg_lock:  # a register() of another thread meanwhile would lose its export
                registered, self._registered = self._registered, {}
            for (addr, n), held in registered.items():
                _lib_handle.mmc_unregister_buffer(self._raw._s, addr, n)
                held.release()
            self._raw.close()
            self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def raw(self):
        """The DistributedObjectStore underneath (memcache_hybrid conventions)."""
        return self._raw

    @property
    def local_service_id(self):
        out = ctypes.c_uint32()
        _check(_lib_handle.mmc_get_local_service_id(self._raw._s, ctypes.byref(out)), "mmc_get_local_service_id")
        return out.value

    # ---- registration
    def register(self, obj, size=None):
        """Registers obj's memory with the fabric (zero-copy transfers) until unregister() or close(). A
        buffer-protocol object stays exported meanwhile (a bytearray cannot be resized: its memory cannot move)."""
        r = ref(obj, size)
        k = (r.addr, r.len)
        with self._reg_lock:
            if k in self._registered:
                r.release()
                return
            try:
                _check(_lib_handle.mmc_register_buffer(self._raw._s, r.addr, r.len), "mmc_register_buffer")
            except BaseException:
                r.release()
                raise
            self._registered[k] = r

    def unregister(self, obj, size=None):
        r = ref(obj, size)
        try:
            k = (r.addr, r.len)
            with self._reg_lock:
                _check(_lib_handle.mmc_unregister_buffer(self._raw._s, r.addr, r.len), "mmc_unregister_buffer")
                held = self._registered.pop(k, None)
            if held is not None:
                held.release()
        finally:
            r.release()

    def _refs(self, objs, writable, register, sizes=None):
        out = []
        try:
            for i, o in enumerate(objs):
                r = ref(o, None if sizes is None else sizes[i], writable)
                out.append(r)
                if register and (r.addr, r.len) not in self._registered:
                    self.register(o, None if sizes is None else sizes[i])
        except BaseException:
            for r in out:
                r.release()
            raise
        return out

    # ---- single keys
    def put(self, key, value, *, size=None, replicas=1, preferred=(), register=False):
        """Stores value (bytes, buffer, numpy array, CPU tensor, or an int address with size=)."""
        r, = self._refs([value], False, register, None if size is None else [size])
        try:
            rc = _lib_handle.mmc_put_from(self._raw._s, A.key(key), r.addr, r.len, H2G, self._rc(replicas, preferred))
        finally:
            r.release()
        _check(rc, "put %r" % (key,))

    def get(self, key):
        """The object's bytes; raises ObjectNotExistsError when it is absent."""
        info = self.key_info(key)
        if not info.size():
            raise error_for(_lib.MMC_OBJECT_NOT_EXISTS, "get %r" % (key,))
        out = bytearray(info.size())
        self.get_into(key, out)
        return bytes(out)

    def get_into(self, key, out, *, size=None, register=False):
        """Reads the object into out (its size must equal the object's)."""
        r, = self._refs([out], True, register, None if size is None else [size])
        try:
            rc = _lib_handle.mmc_get_into(self._raw._s, A.key(key), r.addr, r.len, G2H)
        finally:
            r.release()
        _check(rc, "get_into %r" % (key,))

    def exists(self, key):
        rc = self._raw.is_exist(key)
        if rc < 0:
            raise error_for(rc, "exists %r" % (key,))
        return rc == 1

    def remove(self, key):
        _check(_lib_handle.mmc_remove(self._raw._s, A.key(key)), "remove %r" % (key,))

    def key_info(self, key):
        out = _lib.mmc_key_info()
        _check(_lib_handle.mmc_get_key_info(self._raw._s, A.key(key), 0, ctypes.byref(out)), "key_info %r" % (key,))
        from .store import KeyInfo
        return KeyInfo(out)

    # ---- batches
    def _batch(self, fn, keys, objs, writable, register, what, *extra):
        ks = A.keys(keys)
        objs = list(objs)
        if len(objs) != len(ks):
            raise error_for(_lib.MMC_INVALID_PARAM, "%s: %d keys but %d buffers" % (what, len(ks), len(objs)))
        if not ks:
            return
        refs = self._refs(objs, writable, register)
        try:
            res = (ctypes.c_int * len(ks))()
            rc = fn(self._raw._s, A.key_array(ks), A.ptr_array([r.addr for r in refs]),
                    A.size_array([r.len for r in refs]), len(ks), *extra, res)
        finally:
            for r in refs:
                r.release()
        self._raise_batch(rc, what, keys, list(res))

    @staticmethod
    def _raise_batch(rc, what, keys, res):
        if rc == 0 and not any(res):
            return
        code = rc or next(x for x in res if x)
        bad = sum(1 for x in res if x)
        raise BatchError(code, "%s: %d of %d keys failed (first: %s)" % (what, bad, len(res), _lib.strerror(code)),
                         list(keys), res)

    def put_batch(self, keys, values, *, replicas=1, preferred=(), register=False):
        self._batch(_lib_handle.mmc_batch_put_from, keys, values, False, register, "put_batch", H2G,
                    self._rc(replicas, preferred))

    def get_batch_into(self, keys, outs, *, register=False):
        self._batch(_lib_handle.mmc_batch_get_into, keys, outs, True, register, "get_batch_into", G2H)

    def get_prefix_into(self, keys, outs, timeout_ms, *, register=False):
        """Reads the leading pages of a prefix that land within timeout_ms into outs (writable buffers, one per
        key, each the size of its object). Returns how many leading keys landed: outs[:n] hold them, the rest are
        unspecified. Never waits past the deadline by more than a scheduling slice; raises only when the call is
        refused (bad arguments, no meta server)."""
        if not _lib.has("mmc_batch_get_into_prefix"):
            raise error_for(_lib.MMC_ERROR, "get_prefix_into: this libmmc has no mmc_batch_get_into_prefix")
        ks = A.keys(keys)
        outs = list(outs)
        if len(outs) != len(ks):
            raise error_for(_lib.MMC_INVALID_PARAM, "get_prefix_into: %d keys but %d buffers" % (len(ks), len(outs)))
        if not ks:
            return 0
        landed = ctypes.c_size_t(0)
        refs = self._refs(outs, True, register)
        try:
            rc = _lib_handle.mmc_batch_get_into_prefix(self._raw._s, A.key_array(ks),
                                                       A.ptr_array([r.addr for r in refs]),
                                                       A.size_array([r.len for r in refs]), len(ks), G2H,
                                                       A.uint(timeout_ms, "timeout_ms", 0xFFFFFFFF),
                                                       ctypes.byref(landed))
        finally:
            for r in refs:
                r.release()
        _check(rc, "get_prefix_into")
        return landed.value

    def batch_exists(self, keys):
        res = self._raw.batch_is_exist(keys)
        bad = [r for r in res if r < 0]
        if bad:
            raise BatchError(bad[0], "batch_exists: " + _lib.strerror(bad[0]), list(keys), res)
        return [r == 1 for r in res]

    def remove_batch(self, keys):
        ks = A.keys(keys)
        if not ks:
            return
        res = (ctypes.c_int * len(ks))()
        rc = _lib_handle.mmc_batch_remove(self._raw._s, A.key_array(ks), len(ks), res)
        self._raise_batch(rc, "remove_batch", keys, list(res))

    def _rc(self, replicas, preferred):
        rc = ReplicateConfig()
        rc.replicaNum = replicas
        rc.preferredLocalServiceIDs = list(preferred)
        c = rc.to_c()
        if c is None:
            raise error_for(_lib.MMC_INVALID_PARAM, "replicas must be 1..8 with at most 8 preferred services")
        return ctypes.byref(c)

    # ---- tensors
    def put_tensor(self, key, tensor, *, replicas=1, register=False):
        """Stores a numpy array or torch CPU tensor with its dtype and shape (a 256-byte header, then the data)."""
        meta = {"shape": list(tensor.shape)}
        if hasattr(tensor, "data_ptr"):
            meta["lib"], meta["dtype"] = "torch", str(tensor.dtype).replace("torch.", "")
        else:
            meta["lib"], meta["dtype"] = "numpy", tensor.dtype.str
        head = bytearray(_TENSOR_HEADER)
        text = b"MMCT" + json.dumps(meta).encode()
        if len(text) > _TENSOR_HEADER:
            raise error_for(_lib.MMC_INVALID_PARAM, "put_tensor: too many dimensions")
        head[:len(text)] = text
        refs = self._refs([head, tensor], False, False)
        if register:
            self.register(tensor)
        try:
            rc = _lib_handle.mmc_put_from_layers(self._raw._s, A.key(key), A.ptr_array([r.addr for r in refs]),
                                                 A.size_array([r.len for r in refs]), 2, H2G,
                                                 self._rc(replicas, ()))
        finally:
            for r in refs:
                r.release()
        _check(rc, "put_tensor %r" % (key,))

    def get_tensor(self, key, out=None, *, register=False):
        """The tensor stored by put_tensor; with out= (same nbytes), reads into it zero-copy and returns it. An out=
        numpy array or torch tensor of another element type than the stored one raises Error (MMC_INVALID_PARAM)
        after the read: its bytes would not mean the stored values."""
        if out is not None:
            head = bytearray(_TENSOR_HEADER)
            refs = self._refs([head, out], True, False)
            if register:
                self.register(out)
            try:
                rc = _lib_handle.mmc_get_into_layers(self._raw._s, A.key(key), A.ptr_array([r.addr for r in refs]),
                                                     A.size_array([r.len for r in refs]), 2, G2H)
            finally:
                for r in refs:
                    r.release()
            _check(rc, "get_tensor %r" % (key,))
            stored, given = _dtype_name(_parse_header(head)), _dtype_name(out)
            if given is not None and stored != given:
                raise error_for(_lib.MMC_INVALID_PARAM, "get_tensor %r: stored as %s, out= is %s (its bytes are "
                                "the stored ones, not converted)" % (key, stored, given))
            return out
        raw = bytearray(self.get(key))
        meta = _parse_header(raw[:_TENSOR_HEADER])
        data = memoryview(raw)[_TENSOR_HEADER:]
        if meta["lib"] == "torch":
            import torch
            dtype = getattr(torch, meta["dtype"])
            if not len(data):
                return torch.empty(meta["shape"], dtype=dtype)
            return torch.frombuffer(data, dtype=dtype).reshape(meta["shape"])
        import numpy
        return numpy.frombuffer(data, dtype=numpy.dtype(meta["dtype"])).reshape(meta["shape"])


def _numpy_dtype_name(dtype):
    """dtype's name, with its byte order when it is not this machine's: '<f4' and '>f4' are both "float32", and
    the same bytes read as the other are other numbers."""
    if dtype.isnative or dtype.byteorder not in "<>":  # '|': no order of its own (bytes, a structure)
        return dtype.name
    return "%s (%s-endian)" % (dtype.name, "big" if dtype.byteorder == ">" else "little")


def _dtype_name(t):
    """The element type's name, the same for numpy and torch ("float32"); None for a buffer without one. t is a
    tensor header's dict, a numpy array or a torch tensor."""
    if isinstance(t, dict):
        if t.get("lib") == "torch":
            return t["dtype"]
        import numpy
        return _numpy_dtype_name(numpy.dtype(t["dtype"]))
    if hasattr(t, "data_ptr"):
        return str(t.dtype).replace("torch.", "")
    dtype = getattr(t, "dtype", None)
    return _numpy_dtype_name(dtype) if dtype is not None and hasattr(dtype, "isnative") else None


def _parse_header(head):
    head = bytes(head)
    if not head.startswith(b"MMCT"):
        raise Error(_lib.MMC_INVALID_PARAM, "not an object written by put_tensor")
    return json.loads(head[4:].rstrip(b"\0").decode())
