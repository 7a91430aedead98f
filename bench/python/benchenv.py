"""What the Python benchmarks share: the source tree's packages on sys.path (imported first), the build's programs,
and the C target process that lends the memory a client that lends nothing reads and writes."""
import contextlib
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
sys.path.insert(0, os.path.join(ROOT, "python"))

MiB = 1 << 20


def programs(build):
    """mmc-bench's path in build; mmc-metaserver's becomes the one mmctest starts (unless $MMC_METASERVER says)."""
    os.environ.setdefault("MMC_METASERVER", os.path.join(build, "metaserver", "mmc-metaserver"))
    return os.path.join(build, "bench", "mmc-bench")


@contextlib.contextmanager
def target(bench, meta, protocol, size=256 * MiB):
    """An `mmc-bench target` lending size bytes over protocol (tcp, shm), until the block ends."""
    proc = subprocess.Popen([bench, "target", meta.url, "host_" + protocol, str(size)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("ready")
        yield proc
    finally:
        proc.stdin.close()
        proc.wait(30)
