"""Mooncake's SSD offload as mmc's SSD tier: setup(enable_ssd_offload=True, ssd_offload_path=DIR) (SGLang passes
$MOONCAKE_ENABLE_SSD_OFFLOAD and $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH that way) gives the local service this process
runs an SSD tier in DIR: what the meta server evicts from the DRAM this process lends goes there, and gets read it
back from there, as Mooncake's offload does.

- The tier is one file, DIR/mmc-ssd-N.tier, N the first one no running local service holds (mmc locks its SSD file):
  each rank of an engine gets a file of its own, and a rank started again takes a free one back, with what it held.
- Its size: $MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES when set; else the size the file has already; else, for a new
  file, 90 % of the space free on DIR's file system (the file is sparse: it takes room as objects land). Several
  processes sharing one disk should each be given a limit.
"""
import fcntl
import os
import struct

FILES_MAX = 256  # files one directory offers: ranks of the engines sharing it
SIZE_ENV = "MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES"
PATH_ENV = "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH"
SIZE_MIN = 8 << 10  # an mmc SSD tier's smallest: its 4 KiB label and a page
FREE_SHARE = 0.9


def directory(path):
    """The directory the tier goes in (ssd_offload_path, else $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH), made if
    missing; ValueError when neither names one or it cannot be made."""
    d = path or os.environ.get(PATH_ENV, "")
    if not isinstance(d, str) or not d:
        raise ValueError("enable_ssd_offload: no directory (ssd_offload_path or $%s)" % PATH_ENV)
    try:
        os.makedirs(d, exist_ok=True)
    except OSError as e:
        raise ValueError("enable_ssd_offload: cannot make %s: %s" % (d, e.strerror)) from None
    return d


def _limit():
    v = os.environ.get(SIZE_ENV, "").strip()
    if not v:
        return 0
    if not v.isdigit() or int(v) < SIZE_MIN:
        raise ValueError("$%s: %r is not a byte count of at least %d" % (SIZE_ENV, v, SIZE_MIN))
    return int(v)


def _size(path, limit):
    if limit:
        return limit
    try:
        have = os.stat(path).st_size
    except FileNotFoundError:
        have = 0
    if have >= SIZE_MIN:
        return have
    st = os.statvfs(os.path.dirname(path))
    size = int(st.f_bavail * st.f_frsize * FREE_SHARE) // 4096 * 4096
    if size < SIZE_MIN:
        raise ValueError("enable_ssd_offload: %s has no room for an SSD tier" % os.path.dirname(path))
    return size


def held(path):
    """Whether a running local service holds path (its lock on the file's first byte)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        lk = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)
        return struct.unpack("hhqqi4x", fcntl.fcntl(fd, fcntl.F_OFD_GETLK, lk))[0] != fcntl.F_UNLCK
    finally:
        os.close(fd)


def files(d):
    """(path, size) of each file the tier may take in d, those another service holds left out; ValueError on a
    bad size limit or a full disk."""
    limit = _limit()
    for i in range(FILES_MAX):
        path = os.path.join(d, "mmc-ssd-%d.tier" % i)
        if not held(path):
            yield path, _size(path, limit)
