"""Mooncake's ErrorCode values (mooncake-store/include/types.h) and the one mapping from libmmc's codes to them."""
from mmc import _lib

OK = 0
INTERNAL_ERROR = -1
BUFFER_OVERFLOW = -10
NO_AVAILABLE_HANDLE = -200
INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
OBJECT_ALREADY_EXISTS = -705
OBJECT_HAS_LEASE = -706
LEASE_EXPIRED = -707
TRANSFER_FAIL = -800
RPC_FAIL = -900

_CODES = {
    _lib.MMC_INVALID_PARAM: INVALID_PARAMS,
    _lib.MMC_OBJECT_NOT_EXISTS: OBJECT_NOT_FOUND,
    _lib.MMC_UNMATCHED_KEY: OBJECT_NOT_FOUND,
    _lib.MMC_NOT_ENOUGH_MEMORY: NO_AVAILABLE_HANDLE,
    _lib.MMC_TIMEOUT: RPC_FAIL,
    _lib.MMC_NOT_CONNECTED_META: RPC_FAIL,
    _lib.MMC_LEASE_NOT_EXPIRED: OBJECT_HAS_LEASE,
    _lib.MMC_LEASE_EXPIRED: TRANSFER_FAIL,
    _lib.MMC_CHECKSUM_MISMATCH: TRANSFER_FAIL,
    _lib.MMC_ERROR: TRANSFER_FAIL,
}


def mooncake_code(rc):
    """The Mooncake ErrorCode for an mmc code (0 stays 0; an unknown error is INTERNAL_ERROR)."""
    if rc >= 0:
        return rc
    return _CODES.get(rc, INTERNAL_ERROR)
