"""mmc.Error and one subclass per MMC_* code, raised by the Pythonic layer (mmc.Store)."""
from ._lib import strerror

codes = {
    "MMC_OK": 0, "MMC_ERROR": -1, "MMC_INVALID_PARAM": -3000, "MMC_MALLOC_FAILED": -3001,
    "MMC_NEW_OBJECT_FAILED": -3002, "MMC_NOT_STARTED": -3003, "MMC_TIMEOUT": -3004, "MMC_REPEAT_CALL": -3005,
    "MMC_DUPLICATED_OBJECT": -3006, "MMC_OBJECT_NOT_EXISTS": -3007, "MMC_NOT_INITIALIZED": -3008,
    "MMC_NET_SEQ_DUP": -3009, "MMC_NET_SEQ_NOT_FOUND": -3010, "MMC_ALREADY_NOTIFIED": -3011,
    "MMC_INTERNAL_ERROR": -3012, "MMC_EXCEED_CAPACITY": -3013, "MMC_LINK_NOT_FOUND": -3014,
    "MMC_NET_REQ_HANDLE_NOT_FOUND": -3015, "MMC_NOT_ENOUGH_MEMORY": -3016, "MMC_NOT_CONNECTED_META": -3017,
    "MMC_NOT_CONNECTED_LOCAL": -3018, "MMC_CLIENT_NOT_INIT": -3019, "MMC_UNMATCHED_STATE": -3101,
    "MMC_UNMATCHED_KEY": -3102, "MMC_UNMATCHED_RET": -3103, "MMC_LEASE_NOT_EXPIRED": -3104,
    "MMC_META_BACKUP_ERROR": -3105, "MMC_LEASE_EXPIRED": -3106, "MMC_CHECKSUM_MISMATCH": -3109,
    "MMC_NOT_AUTHORIZED": -3110,
    "MMC_NOT_LEADER": -3120,
}


class Error(Exception):
    """A libmmc call failed: .code is the MMC_* code, .message the text (mmc_strerror plus context)."""

    def __init__(self, code, message=None):
        self.code = code
        self.message = message or strerror(code)
        super().__init__("%s (%d)" % (self.message, code))


class BatchError(Error):
    """Some keys of a batch failed: .results holds each key's code (0 = ok), .keys the keys."""

    def __init__(self, code, message, keys, results):
        super().__init__(code, message)
        self.keys = keys
        self.results = results


def _camel(name):
    return "".join(p.capitalize() for p in name[4:].split("_")) + "Error"


_by_code = {}
__all__ = ["Error", "BatchError", "codes", "error_for"]
for _name, _code in codes.items():
    if _code == 0:
        continue
    _cls = type(_camel(_name), (Error,), {"__doc__": "%s (%d)" % (_name, _code)})
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)
    _by_code[_code] = _cls
NotFoundError = ObjectNotExistsError = globals()["ObjectNotExistsError"]
__all__.append("NotFoundError")


def error_for(code, context=None):
    """The Error (subclass) instance for a code; context prefixes the message."""
    cls = _by_code.get(code, Error)
    msg = strerror(code)
    return cls(code, "%s: %s" % (context, msg) if context else msg)
