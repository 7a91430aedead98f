"""Argument conversion with the type rules of the pybind11 binding it replaces.

Integers: int or anything with __index__ (numpy integers); float, str and None raise TypeError, and so does a
negative value or one too large for the C type. Sequences: any iterable that is not str/bytes, or a numpy array
(converted with tolist()). Keys: str (UTF-8) or bytes.
"""
import ctypes
import operator
from array import array
from itertools import accumulate

U64_MAX = (1 << 64) - 1

def uint(v, name, hi=U64_MAX):
    if isinstance(v, float):
        raise TypeError("%s: expected an int, got float" % name)
    try:
        i = operator.index(v)
    except TypeError:
        raise TypeError("%s: expected an int, got %s" % (name, type(v).__name__)) from None
    if i < 0 or i > hi:
        raise TypeError("%s: %d is out of range 0..%d" % (name, i, hi))
    return i


def sint(v, name, lo=-(1 << 31), hi=(1 << 31) - 1):
    if isinstance(v, float):
        raise TypeError("%s: expected an int, got float" % name)
    try:
        i = operator.index(v)
    except TypeError:
        raise TypeError("%s: expected an int, got %s" % (name, type(v).__name__)) from None
    if i < lo or i > hi:
        raise TypeError("%s: %d is out of range %d..%d" % (name, i, lo, hi))
    return i


def boolean(v, name):
    if isinstance(v, bool):
        return v
    if type(v).__name__ == "bool_":  # numpy.bool_
        return bool(v)
    if isinstance(v, int):
        return bool(v)
    raise TypeError("%s: expected a bool, got %s" % (name, type(v).__name__))


def seq(v, name):
    if isinstance(v, (str, bytes, bytearray)) or v is None:
        raise TypeError("%s: expected a sequence, got %s" % (name, type(v).__name__))
    tolist = getattr(v, "tolist", None)
    if tolist is not None and hasattr(v, "dtype"):
        v = tolist()
    try:
        return list(v)
    except TypeError:
        raise TypeError("%s: expected a sequence, got %s" % (name, type(v).__name__)) from None


def _nul(name):
    # libmmc takes keys as C strings: "k\0one" and "k\0two" would both be "k", one key's bytes read for the other
    return ValueError("%s: a key cannot hold a NUL character (libmmc keys are C strings)" % name)


def key(k, name="key"):
    if isinstance(k, str):
        k = k.encode()
    elif not isinstance(k, bytes):
        raise TypeError("%s: expected str, got %s" % (name, type(k).__name__))
    if b"\0" in k:
        raise _nul(name)
    return k


def keys(ks, name="keys"):
    ks = seq(ks, name)
    try:
        out = [k.encode() for k in ks]
    except AttributeError:  # bytes keys, or a wrong type (TypeError from key())
        return [key(k, name) for k in ks]
    if any(b"\0" in k for k in out):
        raise _nul(name)
    return out


def key_array(encoded):
    return (ctypes.c_char_p * len(encoded))(*encoded)


def _ints(v, name, code, too_big):
    if isinstance(v, (str, bytes, bytearray)) or v is None:
        raise TypeError("%s: expected a sequence of ints, got %s" % (name, type(v).__name__))
    if hasattr(v, "dtype") and hasattr(v, "tolist"):
        v = v.tolist()
    try:
        return array(code, v)
    except OverflowError:
        raise TypeError("%s: %s" % (name, too_big)) from None
    except TypeError:
        raise TypeError("%s: expected a sequence of ints" % name) from None


def u64s(v, name):
    """array('Q') of a sequence of non-negative ints (numpy arrays too); TypeError for anything else."""
    return _ints(v, name, "Q", "a value is negative or too large for 64 bits")


def i32s(v, name):
    return _ints(v, name, "i", "a value does not fit 32 bits")


def addr(a):
    """The address of an array.array's items (valid while a lives and is not resized)."""
    return a.buffer_info()[0]


def results(n):
    return array("i", bytes(4 * n))


def zeros_u64(n):
    return array("Q", bytes(8 * n))


def ptr_array(ptrs):
    """A ctypes array of addresses (the Pythonic layer's few-buffer calls)."""
    return (ctypes.c_void_p * len(ptrs))(*ptrs)


def size_array(sizes):
    return (ctypes.c_size_t * len(sizes))(*sizes)


def nested_u64s(v, name):
    """Rows of a nested list ([[ptr]] or [[size]]) as one flat array('Q') plus each row's length."""
    rows = [u64s(r, name) for r in seq(v, name)]
    flat = array("Q")
    for r in rows:
        flat.extend(r)
    return flat, [len(r) for r in rows]


def row_addrs(flat, lens):
    """array('Q') of the address of each row of a flat array('Q') (the T *const * of the layer calls)."""
    return array("Q", accumulate((8 * n for n in lens[:-1]), initial=addr(flat)))


class Py_buffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(Py_buffer), ctypes.c_int]
_get_buffer.restype = ctypes.c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(Py_buffer)]
_release_buffer.restype = None
PyBUF_SIMPLE = 0
PyBUF_WRITABLE = 1


def _holds_objects(obj):
    """Whether obj (or the array a memoryview shows) holds Python objects, whose buffer is their pointers."""
    if isinstance(obj, memoryview):
        if obj.format.lstrip("@=<>!") == "O":
            return True
        obj = obj.obj
    return bool(getattr(getattr(obj, "dtype", None), "hasobject", False))


class Buffer:
    """A held buffer-protocol view (contiguous bytes) of obj: .addr and .len; release() or use as a context."""
    __slots__ = ("view", "addr", "len", "held")

    def __init__(self, obj, name="buf", writable=False):
        self.held = False
        if isinstance(obj, (str, int, float)) or obj is None:
            raise TypeError("%s: expected a buffer-protocol object, got %s" % (name, type(obj).__name__))
        # numpy exports an array of Python objects as its pointers: their bytes are not the objects'
        if _holds_objects(obj):
            raise TypeError("%s: an array of Python objects has no bytes of its own to store" % name)
        self.view = Py_buffer()
        try:
            _get_buffer(obj, ctypes.byref(self.view), PyBUF_WRITABLE if writable else PyBUF_SIMPLE)
        except (BufferError, TypeError, ValueError) as e:  # numpy: ValueError for a strided array
            raise TypeError("%s: %s object is not a contiguous %sbuffer (%s)" %
                            (name, type(obj).__name__, "writable " if writable else "", e)) from None
        self.held = True
        self.addr = self.view.buf or 0
        self.len = self.view.len

    def release(self):
        if self.held:
            self.held = False
            _release_buffer(ctypes.byref(self.view))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        self.release()
