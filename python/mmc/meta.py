"""MetaService: memcache_hybrid's in-process meta service, here mmc-metaserver run in the foreground."""
import os
import re
import shutil
import signal
import subprocess

from .config import MetaConfig

_LEVELS = ("debug", "info", "warn", "error")


def metaserver_path():
    """mmc-metaserver: $MMC_METASERVER, else the installed one, else the build tree's, else $PATH."""
    env = os.environ.get("MMC_METASERVER")
    if env:
        return env
    try:
        from . import _paths
        cand = os.path.join(_paths.BINDIR, "mmc-metaserver")
        if os.access(cand, os.X_OK):
            return cand
    except ImportError:
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    cand = os.path.join(here, "..", "..", "build", "metaserver", "mmc-metaserver")
    if os.access(cand, os.X_OK):
        return os.path.normpath(cand)
    return shutil.which("mmc-metaserver")


def _valid(cfg):
    if not re.fullmatch(r"tcp://[^:/]+:\d{1,5}", cfg.meta_service_url):
        return False
    if cfg.log_level.lower() not in _LEVELS:
        return False
    hi, lo = cfg.evict_threshold_high, cfg.evict_threshold_low
    return 1 <= lo < hi <= 99


class MetaService:
    """setup(config) -> 0 / -1; main() runs mmc-metaserver in the foreground and returns 0 after SIGINT/SIGTERM."""
    _config = None

    @staticmethod
    def setup(config):
        if not isinstance(config, MetaConfig):
            raise TypeError("setup: expected MetaConfig, got %s" % type(config).__name__)
        if not _valid(config):
            return -1
        MetaService._config = config
        return 0

    @staticmethod
    def command():
        """The mmc-metaserver command line main() runs (without setup(): its defaults and $MMC_META_CONFIG_PATH)."""
        exe = metaserver_path()
        if not exe:
            return None
        argv = [exe]
        cfg = MetaService._config
        if cfg is not None:
            for kv in cfg.env():
                if kv.startswith("ock.mmc.meta.data_dir="):
                    argv += ["--data-dir", kv.split("=", 1)[1]]
                elif kv.split("=", 1)[0].startswith("ock.mmc.log_level"):
                    argv += ["--env", kv.lower()]
                else:
                    argv += ["--env", kv]
        return argv

    @staticmethod
    def main():
        argv = MetaService.command()
        if argv is None:
            return -1
        try:
            child = subprocess.Popen(argv)
        except OSError:
            return -1
        old = {}

        def forward(sig, _frame):
            child.send_signal(sig)

        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                old[sig] = signal.signal(sig, forward)
            except ValueError:  # not the main thread
                pass
        try:
            while True:
                try:
                    rc = child.wait()
                    break
                except KeyboardInterrupt:
                    child.send_signal(signal.SIGINT)
        finally:
            for sig, h in old.items():
                signal.signal(sig, h)
        return 0 if rc == 0 else -1
