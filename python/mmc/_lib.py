"""libmmc through ctypes: finding the library, the structures of mmc.h and the function prototypes.

Every data call goes through ctypes.CDLL, which releases the GIL for the duration of the C call, so threads that
transfer run concurrently. Nothing here holds the GIL while libmmc waits.
"""
import ctypes
import os

# The layout of mmc_local_config this module describes (MMC_LOCAL_CONFIG_VERSION of the header it follows).
LOCAL_CONFIG_VERSION = 3
# libmmc versions this package supports: the same major, at least this minor.patch.
SUPPORTED_MAJOR = 0
MIN_VERSION = (0, 1, 0)

# The MMC_* error codes (MMC_OK, MMC_INVALID_PARAM, ...) are not written here: error_codes() reads them from the
# loaded libmmc at import, and they become this module's attributes and `codes` (see the end of the file).
ERRNO_RANGE = range(0, -4000, -1)  # mmc.h: every code lies in -3999..0
KEY_MAX = 255
BATCH_MAX = 16384
LAYERS_MAX = 255
REPLICA_MAX = 8

URL_SIZE = 1024
PROTOCOL_SIZE = 64
LOG_LEVEL_SIZE = 16
PATH_SIZE = 1024
TOKEN_SIZE = 256
TENANT_SIZE = 17
TLS_PATH_SIZE = 256


class mmc_local_config(ctypes.Structure):
    """struct mmc_local_config, layout version 3 (include/mmc/mmc.h): the buffer mmc_setup() reads, and where
    LocalConfig reads libmmc's defaults. Nothing writes its fields but libmmc: values go in by key, as text, through
    mmc_config_set() (config_path alone, which no key names, is assigned)."""
    _fields_ = [
        ("version", ctypes.c_uint32),
        ("config_path", ctypes.c_char * PATH_SIZE),
        ("meta_service_url", ctypes.c_char * URL_SIZE),
        ("config_store_url", ctypes.c_char * URL_SIZE),
        ("log_level", ctypes.c_char * LOG_LEVEL_SIZE),
        ("world_size", ctypes.c_uint32),
        ("protocol", ctypes.c_char * PROTOCOL_SIZE),
        ("hcom_url", ctypes.c_char * URL_SIZE),
        ("dram_size", ctypes.c_uint64),
        ("hbm_size", ctypes.c_uint64),
        ("max_dram_size", ctypes.c_uint64),
        ("max_hbm_size", ctypes.c_uint64),
        ("lease_ttl_ms", ctypes.c_uint64),
        ("timeout_ms", ctypes.c_uint32),
        ("retry_ms", ctypes.c_uint32),
        ("heartbeat_ms", ctypes.c_uint32),
        ("ssd_path", ctypes.c_char * PATH_SIZE),
        ("ssd_size", ctypes.c_uint64),
        ("rma_timeout_ms", ctypes.c_uint32),
        ("verify_checksum", ctypes.c_bool),
        # layout version 2
        ("host_path", ctypes.c_bool),
        ("auth_token", ctypes.c_char * TOKEN_SIZE),
        ("auth_token_file", ctypes.c_char * PATH_SIZE),
        ("tls_enable", ctypes.c_bool),
        ("tls_ca_path", ctypes.c_char * TLS_PATH_SIZE),
        ("tls_crl_path", ctypes.c_char * TLS_PATH_SIZE),
        ("tls_cert_path", ctypes.c_char * TLS_PATH_SIZE),
        ("tls_key_path", ctypes.c_char * TLS_PATH_SIZE),
        ("tls_key_pass_path", ctypes.c_char * TLS_PATH_SIZE),
        # layout version 3
        ("tenant", ctypes.c_char * TENANT_SIZE),
    ]


class mmc_replicate_config(ctypes.Structure):
    _fields_ = [
        ("replica_num", ctypes.c_uint16),
        ("preferred_count", ctypes.c_uint16),
        ("preferred_local_service_ids", ctypes.c_int32 * REPLICA_MAX),
    ]


class mmc_key_info(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_uint64),
        ("blob_num", ctypes.c_uint32),
        ("loc", ctypes.c_uint32 * REPLICA_MAX),
        ("type", ctypes.c_uint16 * REPLICA_MAX),
        ("gva", ctypes.c_uint64 * REPLICA_MAX),
    ]


STRUCTS = {"mmc_local_config": mmc_local_config, "mmc_replicate_config": mmc_replicate_config,
           "mmc_key_info": mmc_key_info}

LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p)

# Arrays (keys, pointers, sizes, results) are passed as addresses (c_void_p): the binding builds them as
# array.array objects, several times cheaper per call than ctypes arrays.
_p = ctypes.c_void_p
_pp = ctypes.c_void_p
_keys = ctypes.c_void_p
_sizes = ctypes.c_void_p
_ints = ctypes.c_void_p
_i32 = ctypes.c_int32
_int = ctypes.c_int
_sz = ctypes.c_size_t
_s = ctypes.c_void_p  # mmc_store *
_rc = ctypes.POINTER(mmc_replicate_config)
_ki = ctypes.POINTER(mmc_key_info)

PROTOTYPES = {
    "mmc_local_config_init": (_int, [ctypes.POINTER(mmc_local_config), ctypes.c_uint32]),
    "mmc_config_set": (_int, [ctypes.POINTER(mmc_local_config), ctypes.c_char_p, ctypes.c_char_p]),
    "mmc_create": (_s, []),
    "mmc_setup": (_int, [_s, ctypes.POINTER(mmc_local_config)]),
    "mmc_init": (_int, [_s, ctypes.c_uint32, ctypes.c_bool]),
    "mmc_teardown": (_int, [_s]),
    "mmc_destroy": (None, [_s]),
    "mmc_register_buffer": (_int, [_s, _p, _sz]),
    "mmc_unregister_buffer": (_int, [_s, _p, _sz]),
    "mmc_put_from": (_int, [_s, ctypes.c_char_p, _p, _sz, _i32, _rc]),
    "mmc_get_into": (_int, [_s, ctypes.c_char_p, _p, _sz, _i32]),
    "mmc_remove": (_int, [_s, ctypes.c_char_p]),
    "mmc_is_exist": (_int, [_s, ctypes.c_char_p]),
    "mmc_get_key_info": (_int, [_s, ctypes.c_char_p, ctypes.c_uint32, _ki]),
    "mmc_batch_put_from": (_int, [_s, _keys, _pp, _sizes, _sz, _i32, _rc, _ints]),
    "mmc_batch_get_into": (_int, [_s, _keys, _pp, _sizes, _sz, _i32, _ints]),
    "mmc_batch_remove": (_int, [_s, _keys, _sz, _ints]),
    "mmc_batch_is_exist": (_int, [_s, _keys, _sz, _ints]),
    "mmc_batch_get_key_info": (_int, [_s, _keys, _sz, ctypes.c_uint32, _ki]),
    "mmc_prefetch_keys": (_int, [_s, _keys, _sz, ctypes.c_uint8, ctypes.c_uint8, ctypes.c_uint32]),
    "mmc_evict_keys": (_int, [_s, _keys, _sz, ctypes.c_uint8, ctypes.c_uint8, ctypes.c_uint32]),
    "mmc_batch_add_lease": (_int, [_s, _keys, _sz, ctypes.c_uint64, _ints]),
    "mmc_batch_remove_lease": (_int, [_s, _keys, _sz]),
    "mmc_batch_malloc": (_int, [_s, _keys, _sizes, _sz, ctypes.c_uint16, ctypes.c_uint64,
                                _p]),
    "mmc_batch_copy": (_int, [_s, _pp, _pp, _sizes, _sz, _i32, ctypes.c_uint32]),
    "mmc_batch_copy_keys": (_int, [_s, _keys, _pp, _p, _pp, _pp, _sizes, _sz, _i32, ctypes.c_uint32, _ints]),
    "mmc_batch_write_finish": (_int, [_s, _keys, _ints, _sz, _ints]),
    "mmc_put_from_layers": (_int, [_s, ctypes.c_char_p, _pp, _sizes, _sz, _i32, _rc]),
    "mmc_get_into_layers": (_int, [_s, ctypes.c_char_p, _pp, _sizes, _sz, _i32]),
    "mmc_batch_put_from_layers": (_int, [_s, _keys, _pp, _sizes, _sizes, _sz, _i32,
                                         _rc, _ints]),
    "mmc_batch_get_into_layers": (_int, [_s, _keys, _pp, _sizes, _sizes, _sz, _i32,
                                         _ints]),
    "mmc_get_local_service_id": (_int, [_s, ctypes.POINTER(ctypes.c_uint32)]),
    "mmc_strerror": (ctypes.c_char_p, [_int]),
    "mmc_set_log_handler": (None, [LOG_FN]),
    "mmc_version": (ctypes.c_char_p, []),
}


# Calls a libmmc may lack (added after 0.1.0): bound when present, so the package still imports against an older
# libmmc; callers test has(name) and answer without them.
OPTIONAL_PROTOTYPES = {
    "mmc_remove_by_regex": (_int, [_s, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)]),
    "mmc_remove_all": (_int, [_s, ctypes.POINTER(ctypes.c_uint64)]),
    "mmc_err_name": (ctypes.c_char_p, [_int]),
    "mmc_version_number": (ctypes.c_uint, []),
    "mmc_batch_get_into_prefix": (_int, [_s, _keys, _pp, _sizes, _sz, _i32, ctypes.c_uint32,
                                         ctypes.POINTER(_sz)]),
    "mmc_batch_get_into_layers_prefix": (_int, [_s, _keys, _pp, _sizes, _sizes, _sz, _i32, ctypes.c_uint32,
                                                ctypes.POINTER(_sz)]),
}


class LibraryError(ImportError):
    """libmmc could not be found, or is a version this package does not support."""


def _candidates():
    env = os.environ.get("MMC_LIBRARY")
    if env:
        return [env]
    out = []
    try:
        from . import _paths  # written by meson install
        out.append(os.path.join(_paths.LIBDIR, "libmmc.so.0"))
    except ImportError:
        pass
    # a source checkout: python/mmc/../../build/lib
    here = os.path.dirname(os.path.abspath(__file__))
    out.append(os.path.join(here, "..", "..", "build", "lib", "libmmc.so.0"))
    out.append("libmmc.so.0")  # the dynamic loader's search path
    return out


def parse_version(text):
    parts = text.split(".")
    if len(parts) < 3 or not all(p.isdigit() for p in parts[:3]):
        raise LibraryError("libmmc reports version %r, which is not MAJOR.MINOR.PATCH" % text)
    return tuple(int(p) for p in parts[:3])


def check_version(text):
    """Raises LibraryError unless libmmc version text is one this package supports."""
    v = parse_version(text)
    if v[0] != SUPPORTED_MAJOR or v < MIN_VERSION:
        raise LibraryError(
            "libmmc %s is not supported by this mmc Python package (it needs libmmc %d.x, at least %s); "
            "install a matching libmmc or point MMC_LIBRARY at one" %
            (text, SUPPORTED_MAJOR, ".".join(map(str, MIN_VERSION))))
    return v


def _bind(lib):
    for name, (res, args) in PROTOTYPES.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    for name, (res, args) in OPTIONAL_PROTOTYPES.items():
        if hasattr(lib, name):
            f = getattr(lib, name)
            f.restype = res
            f.argtypes = args


def load():
    errors = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            errors.append("%s: no such file" % path)
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append(str(e))
            continue
        # the version first: a libmmc of another major may lack calls this package binds
        try:
            lib.mmc_version.restype = ctypes.c_char_p
            lib.mmc_version.argtypes = []
        except AttributeError:
            raise LibraryError("%s is not libmmc: it has no mmc_version()" % path) from None
        text = (lib.mmc_version() or b"").decode(errors="replace")
        try:
            check_version(text)
        except LibraryError as e:
            raise LibraryError("%s: %s" % (path, e)) from None
        try:
            _bind(lib)
        except AttributeError as e:
            raise LibraryError("%s is not a libmmc this package can use: %s" % (path, e)) from None
        probe = mmc_local_config()
        if lib.mmc_local_config_init(ctypes.byref(probe), LOCAL_CONFIG_VERSION) != 0:
            raise LibraryError("%s does not know mmc_local_config layout %d" % (path, LOCAL_CONFIG_VERSION))
        lib._mmc_path = path
        return lib
    raise LibraryError("cannot load libmmc.so.0 (set MMC_LIBRARY to its path): " + "; ".join(errors))


lib = load()
version = lib.mmc_version().decode()
library_path = lib._mmc_path


def has(name):
    """True when the loaded libmmc exports the optional call name (OPTIONAL_PROTOTYPES)."""
    return name in OPTIONAL_PROTOTYPES and hasattr(lib, name)


def strerror(code):
    return lib.mmc_strerror(int(code)).decode(errors="replace")


def error_codes(library):
    """{"MMC_OK": 0, "MMC_ERROR": -1, ...}: every code the library knows, from its own MMC_ERRNO_MAP, by asking
    mmc_err_name() over the range mmc.h gives the codes. A libmmc older than mmc_err_name() (0.1.0) still names each
    code as the first word of its mmc_strerror() text ("MMC_TIMEOUT: operation timed out"), the form 0.1.0
    documented, so the names are read from there."""
    out = {}
    named = getattr(library, "mmc_err_name", None)
    for code in ERRNO_RANGE:
        if named is not None:
            name = named(code)
        else:
            name = library.mmc_strerror(code).split(b":", 1)[0]
        if name and name.startswith(b"MMC_"):
            out[name.decode()] = code
    return out


codes = error_codes(lib)
globals().update(codes)
