"""Tensors as Mooncake stores them: a 40-byte TensorMetadata header (int32 dtype, int32 ndim, int64 shape[4], -1
for unused dimensions) followed by the tensor's bytes. torch CPU tensors only."""
import ctypes
import struct

_HDR = struct.Struct("<ii4q")
HEADER_SIZE = _HDR.size

# Mooncake's TensorDtype order
_NAMES = ["float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool",
          "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]


def _torch():
    import torch
    return torch


def _dtypes():
    t = _torch()
    return [getattr(t, n, None) for n in _NAMES]


def pack(tensor):
    t = _torch()
    if not isinstance(tensor, t.Tensor):
        raise TypeError("expected a torch.Tensor, got %s" % type(tensor).__name__)
    if tensor.device.type != "cpu":
        raise ValueError("only CPU tensors (this one is on %s)" % tensor.device)
    if tensor.dim() > 4:
        raise ValueError("more than 4 dimensions (%d)" % tensor.dim())
    try:
        code = _dtypes().index(tensor.dtype)
    except ValueError:
        raise ValueError("unsupported dtype %s" % tensor.dtype) from None
    shape = list(tensor.shape) + [-1] * (4 - tensor.dim())
    c = tensor.contiguous()
    raw = c.view(t.uint8).reshape(-1).numpy().tobytes() if c.numel() else b""
    if not raw:
        raise ValueError("an empty tensor")
    return _HDR.pack(code, tensor.dim(), *shape) + raw


def unpack(blob):
    """The tensor of a packed blob (a copy), or None when the blob is not one."""
    if len(blob) <= HEADER_SIZE:
        return None
    code, ndim, *shape = _HDR.unpack_from(blob)
    dts = _dtypes()
    if not 0 <= ndim <= 4 or not 0 <= code < len(dts) or dts[code] is None:
        return None
    t = _torch()
    flat = t.frombuffer(bytearray(blob[HEADER_SIZE:]), dtype=t.uint8)
    try:
        return flat.view(dts[code]).reshape(shape[:ndim])
    except RuntimeError:
        return None


def from_address(ptr, n):
    return unpack(ctypes.string_at(ptr, n))
