"""Tensors as Mooncake stores them (mooncake-integration/integration_utils.h, TensorMetadata version 1): a 304-byte
header, then the tensor's bytes. torch CPU tensors only.

  header (40 bytes): uint32 magic "MOON" (0x4d4f4f4e), uint16 version 1, uint16 header_size 304, int32 dtype,
    int32 ndim, uint32 layout_kind (0 full, 1 shard), uint32 reserved_flags, uint64 data_offset (304),
    uint64 data_bytes
  layout (264 bytes): int64 global_shape[8], int64 local_shape[8] (-1 past ndim), uint32 axis_count,
    uint32 reserved, 4 axes of {int32 kind, axis_index, shard_rank, shard_count, split_dim, reserved0;
    int64 reserved1 (the local extent of split_dim)}

A tensor-parallel shard (put_tensor_with_tp) is a shard object: its global shape is the whole tensor's, its local
shape its own, and one TP axis (kind 1) says which rank of how many along which dimension. Reads build the tensor
from the local shape. Objects in the earlier 40-byte layout (int32 dtype, int32 ndim, int64 shape[4]), which mmc
wrote before, are still read.
"""
import ctypes
import struct

MAGIC = 0x4D4F4F4E
VERSION = 1
MAX_DIMS = 8
MAX_AXES = 4
FULL, SHARD = 0, 1
AXIS_TP = 1

_HEAD = struct.Struct("<IHHiiIIQQ")
_SHAPE = struct.Struct("<8q")
_COUNT = struct.Struct("<II")
_AXIS = struct.Struct("<iiiiiiq")
HEADER_SIZE = _HEAD.size + 2 * _SHAPE.size + _COUNT.size + MAX_AXES * _AXIS.size  # 304
_LEGACY = struct.Struct("<ii4q")

# Mooncake's TensorDtype order
_NAMES = ["float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool",
          "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]


def _torch():
    import torch
    return torch


def _dtypes():
    t = _torch()
    return [getattr(t, n, None) for n in _NAMES]


def _dims(shape):
    return list(shape) + [-1] * (MAX_DIMS - len(shape))


def header(code, global_shape, local_shape, nbytes, axis=None):
    """The 304-byte header; axis = (rank, count, split_dim) for a TP shard, None for a whole tensor."""
    axes = b""
    if axis is not None:
        rank, count, dim = axis
        axes = _AXIS.pack(AXIS_TP, 0, rank, count, dim, 0, local_shape[dim])
    axes = axes.ljust(MAX_AXES * _AXIS.size, b"\0")
    return (_HEAD.pack(MAGIC, VERSION, HEADER_SIZE, code, len(global_shape), FULL if axis is None else SHARD, 0,
                       HEADER_SIZE, nbytes) + _SHAPE.pack(*_dims(global_shape)) + _SHAPE.pack(*_dims(local_shape))
            + _COUNT.pack(0 if axis is None else 1, 0) + axes)


def _check(tensor):
    """(dtype code, contiguous tensor); TypeError / ValueError for what Mooncake refuses too."""
    t = _torch()
    if not isinstance(tensor, t.Tensor):
        raise TypeError("expected a torch.Tensor, got %s" % type(tensor).__name__)
    if tensor.device.type != "cpu":
        raise ValueError("only CPU tensors (this one is on %s)" % tensor.device)
    if tensor.dim() > MAX_DIMS:
        raise ValueError("more than %d dimensions (%d)" % (MAX_DIMS, tensor.dim()))
    try:
        code = _dtypes().index(tensor.dtype)
    except ValueError:
        raise ValueError("unsupported dtype %s" % tensor.dtype) from None
    if tensor.numel() == 0:
        raise ValueError("an empty tensor")
    # a conjugate or negative view's memory holds the other numbers: resolved first, as contiguous() does not
    return code, tensor.resolve_conj().resolve_neg().contiguous()


def raw(tensor):
    """The tensor's bytes (contiguous), as a uint8 numpy array sharing its memory."""
    return tensor.reshape(-1).view(_torch().uint8).numpy()  # flat first: a 0-dimensional tensor has no view


def pack_parts(tensor, whole=None, axis=None):
    """(header, data) of tensor: data shares the tensor's memory. For a shard, whole is the full tensor and axis
    (rank, count, split_dim)."""
    code, c = _check(tensor)
    shape = list(c.shape)
    hdr = header(code, list(whole.shape) if whole is not None else shape, shape, c.numel() * c.element_size(), axis)
    return hdr, raw(c)


def pack(tensor):
    hdr, data = pack_parts(tensor)
    return hdr + data.tobytes()


def shard(tensor, rank, count, dim):
    """Mooncake's shard rank of count along dim: rows [n*rank/count, n*(rank+1)/count), contiguous."""
    n = tensor.shape[dim]
    start, end = n * rank // count, n * (rank + 1) // count
    return tensor.narrow(dim, start, end - start).contiguous()


def parse(head, total):
    """(dtype code, shape, data offset) of a stored tensor object of total bytes whose first bytes are head, or None
    when it is not one."""
    if total > HEADER_SIZE and len(head) >= HEADER_SIZE and _HEAD.unpack_from(head)[0] == MAGIC:
        magic, ver, hsize, code, ndim, kind, _, off, nbytes = _HEAD.unpack_from(head)
        if ver != VERSION or hsize != HEADER_SIZE or off != HEADER_SIZE or nbytes != total - off:
            return None
        if not 0 <= ndim <= MAX_DIMS or kind > SHARD:
            return None
        local = _SHAPE.unpack_from(head, _HEAD.size + _SHAPE.size)
        code_ok = 0 <= code < len(_NAMES)
        return (code, list(local[:ndim]), off) if code_ok and all(d > 0 for d in local[:ndim]) else None
    if total > _LEGACY.size and len(head) >= _LEGACY.size:
        code, ndim, *shape = _LEGACY.unpack_from(head)
        if 0 <= ndim <= 4 and 0 <= code < len(_NAMES) and all(d > 0 for d in shape[:ndim]):
            return code, shape[:ndim], _LEGACY.size
    return None


def _view(flat, code, shape):
    dt = _dtypes()[code]
    if dt is None:
        return None
    try:
        return flat.view(dt).reshape(shape)
    except RuntimeError:
        return None


def unpack(blob):
    """The tensor of a stored object (a copy), or None when blob is not one."""
    p = parse(blob[:HEADER_SIZE], len(blob))
    if p is None:
        return None
    code, shape, off = p
    t = _torch()
    return _view(t.frombuffer(bytearray(blob[off:]), dtype=t.uint8), code, shape)


def at_address(ptr, n):
    """The tensor of the stored object read into n bytes at ptr, sharing that memory (no copy), or None."""
    if not ptr or n <= 0:
        return None
    p = parse(ctypes.string_at(ptr, min(n, HEADER_SIZE)), n)
    if p is None:
        return None
    code, shape, off = p
    t = _torch()
    return _view(t.frombuffer((ctypes.c_char * (n - off)).from_address(ptr + off), dtype=t.uint8), code, shape)
