"""mmc.Error and one subclass per MMC_* code, raised by the Pythonic layer (mmc.Store).

The codes and their classes come from the loaded libmmc (its MMC_ERRNO_MAP, through mmc_err_name()), so this
module holds no copy of the table: MMC_TIMEOUT gives TimeoutError, MMC_META_BACKUP_ERROR MetaBackupError, MMC_ERROR
(the fabric or the OS failed) GenericError.
"""
from . import _lib
from ._lib import strerror

codes = dict(_lib.codes)


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


def _words(name):
    return [p.capitalize() for p in name[len("MMC_"):].split("_")]


def class_name(name):
    """The exception class of an MMC_* name: MMC_NOT_ENOUGH_MEMORY -> NotEnoughMemoryError; a name that already ends
    in ERROR keeps one suffix (MMC_META_BACKUP_ERROR -> MetaBackupError), and MMC_ERROR, whose text is "generic
    error", is GenericError (Error is the base class)."""
    words = _words(name)
    if words == ["Error"]:
        words = ["Generic"]
    if words[-1] == "Error":
        words.pop()
    return "".join(words) + "Error"


def _old_class_name(name):
    # 0.1.0 gave every name an Error suffix: ErrorError, InternalErrorError, MetaBackupErrorError
    return "".join(_words(name)) + "Error"


_by_code = {}
__all__ = ["Error", "BatchError", "codes", "error_for"]
for _name, _code in codes.items():
    if _code == 0:
        continue
    _cls = type(class_name(_name), (Error,), {"__doc__": "%s (%d)" % (_name, _code)})
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)
    _by_code[_code] = _cls
    if _old_class_name(_name) != _cls.__name__:  # the old, doubled name stays an alias so user code keeps working
        globals()[_old_class_name(_name)] = _cls
        __all__.append(_old_class_name(_name))
NotFoundError = ObjectNotExistsError = globals()["ObjectNotExistsError"]
__all__.append("NotFoundError")


def error_for(code, context=None):
    """The Error (subclass) instance for a code; context prefixes the message."""
    cls = _by_code.get(code, Error)
    msg = strerror(code)
    return cls(code, "%s: %s" % (context, msg) if context else msg)
