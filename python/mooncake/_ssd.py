"""Mooncake's SSD offload as mmc's SSD tier: setup(enable_ssd_offload=True, ssd_offload_path=DIR) (SGLang passes
$MOONCAKE_ENABLE_SSD_OFFLOAD and $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH that way) gives the local service this process
runs an SSD tier in DIR: what the meta server evicts from the DRAM it lends goes there and is read back from there,
as Mooncake's offload does.

- The tier is one file, DIR/mmc-ssd-N.tier, N the first no running local service holds: each rank of an engine gets
  a file of its own, and a rank started again takes a free one back (libmmc keeps what its SSD file held). A rank
  claims its file before it sets its store up (a lock on the file's second byte, libmmc's being on the first), so
  ranks starting together each try one file, not one after another.
- Its size: $MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES when set; else the size the file has already; else, for a new
  file, 90 % of the space free on DIR's file system, at most 64 TB (the file is sparse: it takes room as objects
  land, and like Mooncake's offload it is bounded by the disk). Several processes sharing one disk should each be
  given a limit.
"""
import fcntl
import os
import struct

FILES_MAX = 256  # files one directory offers: ranks of the engines sharing it
SIZE_ENV = "MOONCAKE_OFFLOAD_TOTAL_SIZE_LIMIT_BYTES"
PATH_ENV = "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH"
SIZE_MIN = 8 << 10  # an mmc SSD tier's smallest: its 4 KiB label and a page
SIZE_MAX = 64 << 40  # ock.mmc.local_service.ssd.size's largest
FREE_SHARE = 0.9
_FLOCK = "hhqqi4x"  # struct flock: l_type, l_whence, l_start, l_len, l_pid (32 bytes on x86_64 and aarch64)
_LIBMMC_BYTE, _CLAIM_BYTE = 0, 1

_claims = set()  # descriptors holding a claim in this process: a forked child closes its copies


def _forget_claims():
    for fd in _claims:
        try:
            os.close(fd)
        except OSError:
            pass
    _claims.clear()


os.register_at_fork(after_in_child=_forget_claims)


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
    if not v.isdigit() or not SIZE_MIN <= int(v) <= SIZE_MAX:
        raise ValueError("$%s: %r is not a byte count from %d to %d" % (SIZE_ENV, v, SIZE_MIN, SIZE_MAX))
    return int(v)


def _size(fd, d, limit):
    if limit:
        return limit
    have = os.fstat(fd).st_size
    if SIZE_MIN <= have <= SIZE_MAX:
        return have
    st = os.statvfs(d)
    size = min(int(st.f_bavail * st.f_frsize * FREE_SHARE) // 4096 * 4096, SIZE_MAX)
    if size < SIZE_MIN:
        raise ValueError("enable_ssd_offload: %s has no room for an SSD tier" % d)
    return size


def _lock(fd, cmd, kind, byte):
    """fcntl's OFD lock call on one byte; the lock type it reports."""
    return struct.unpack(_FLOCK, fcntl.fcntl(fd, cmd, struct.pack(_FLOCK, kind, os.SEEK_SET, byte, 1, 0)))[0]


def held(path):
    """Whether a running local service holds path (libmmc's lock on its first byte). A file this process may not
    open is held (not ours to take); one whose locks cannot be read is not (libmmc then runs without the lock)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        return _lock(fd, fcntl.F_OFD_GETLK, fcntl.F_WRLCK, _LIBMMC_BYTE) != fcntl.F_UNLCK
    except OSError:
        return False
    finally:
        os.close(fd)


def _open_claimable(path):
    """The file at path, made if missing (never through a symbolic link); None when it cannot be had."""
    for flags in (os.O_RDWR, os.O_RDWR | os.O_CREAT | os.O_EXCL, os.O_RDWR):
        try:
            return os.open(path, flags | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except (FileNotFoundError, FileExistsError):
            continue  # made or removed meanwhile by another rank: look again
        except OSError:
            return None
    return None


class Claim:
    """A file of the directory this process has claimed, its path and size; release() gives it up (after the
    store that uses it has closed)."""

    def __init__(self, path, fd, size):
        self.path, self.size, self._fd = path, size, fd
        _claims.add(fd)

    def release(self):
        if self._fd is not None:
            _claims.discard(self._fd)
            os.close(self._fd)
            self._fd = None


def claims(d):
    """Claims on the files of d, one after another (the caller releases each it does not keep), those another
    process claimed or a service holds left out; ValueError on a bad size limit or a full disk."""
    limit = _limit()
    for i in range(FILES_MAX):
        path = os.path.join(d, "mmc-ssd-%d.tier" % i)
        fd = _open_claimable(path)
        if fd is None:
            continue
        try:
            _lock(fd, fcntl.F_OFD_SETLK, fcntl.F_WRLCK, _CLAIM_BYTE)
        except (BlockingIOError, PermissionError):  # another rank's
            os.close(fd)
            continue
        except OSError:
            pass  # no locks on this file system: libmmc goes on without them too
        if held(path):
            os.close(fd)
            continue
        try:
            size = _size(fd, d, limit)
        except BaseException:
            os.close(fd)
            raise
        yield Claim(path, fd, size)
