"""Test support for the Python tests: a TAP runner over unittest, and a real mmc-metaserver per test class.

Each test file is one meson test that prints TAP (`ok N - name` / `not ok N - name`). A server takes a free port
(port 0, read back from its ready line) and a fresh temp directory, and is always stopped, even on failure.
Run a file by hand from the source tree with
  PYTHONPATH=python MMC_LIBRARY=build/lib/libmmc.so.0 MMC_METASERVER=build/metaserver/mmc-metaserver \
      /usr/bin/python3 tests/python/test_api.py
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
PROTOCOL = os.environ.get("MMC_PROTOCOL", "host_tcp")


def metaserver_binary():
    return os.environ.get("MMC_METASERVER") or os.path.join(ROOT, "build", "metaserver", "mmc-metaserver")


class Metaserver:
    """mmc-metaserver on a free loopback port with a temp data dir; .url, .stop(), .pause(), .resume()."""

    def __init__(self, *extra):
        self.dir = tempfile.mkdtemp(prefix="mmc-pytest-")
        argv = [metaserver_binary(), "--data-dir", os.path.join(self.dir, "data"),
                "--env", "ock.mmc.meta_service_url=tcp://127.0.0.1:0",
                "--env", "kvcm.service.http_port=0", "--env", "kvcm.service.admin_http_port=0",
                "--env", "kvcm.service.rpc_port=0", "--env", "kvcm.service.admin_rpc_port=0",
                "--env", "kvcm.service.bind=127.0.0.1", "--env", "ock.mmc.meta.lmdb.sync=false"]
        for e in extra:
            argv += ["--env", e]
        self.log = open(os.path.join(self.dir, "metaserver.log"), "wb")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL)
        line = self.proc.stdout.readline().decode()
        m = re.search(r"rpc=tcp://([^ ]+):(\d+)", line)
        if not line.startswith("mmc-metaserver ready") or not m:
            self.stop()
            raise RuntimeError("mmc-metaserver did not start: %r" % line)
        self.port = int(m.group(2))
        self.url = "tcp://127.0.0.1:%d" % self.port
        a = re.search(r"admin=(\d+)", line)
        self.admin_port = int(a.group(1)) if a else None

    def pause(self):
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def local_config(url, dram="64MB", **kw):
    import mmc
    c = mmc.LocalConfig()
    c.meta_service_url = url
    c.protocol = PROTOCOL
    c.dram_size = dram
    c.rma_timeout_ms = 5000
    for k, v in kw.items():
        setattr(c, k, v)
    return c


def store(url, lend=True, **kw):
    import mmc
    s = mmc.DistributedObjectStore()
    assert s.setup(local_config(url, **kw)) == 0
    assert s.init(0, lend) == 0
    return s


def pattern(n, seed):
    """tests/support/pattern.c's bytes: xorshift64 from seed * 0x9e3779b97f4a7c15 + 1, 8 bytes little-endian."""
    import numpy as np
    m = (1 << 64) - 1
    x = (seed * 0x9e3779b97f4a7c15 + 1) & m
    words = np.empty(n // 8 + 1, dtype=np.uint64)
    for i in range(len(words)):
        x ^= (x << 13) & m
        x ^= x >> 7
        x ^= (x << 17) & m
        words[i] = x
    return words.view(np.uint8)[:n].copy()


class Peer:
    """A second process: script with args, started and waited for until it prints "ready"; it keeps what it holds
    until stop() closes its stdin, and stop() answers its exit status. env: the child's environment."""

    def __init__(self, script, *args, env=None):
        self.proc = subprocess.Popen([sys.executable, script] + [str(a) for a in args], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        line = self.proc.stdout.readline()
        if line.strip() != b"ready":
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("%s %s did not get ready: %r" %
                               (os.path.basename(script), " ".join(map(str, args)), line))

    def stop(self):
        self.proc.stdin.close()
        try:
            return self.proc.wait(60)
        finally:
            self.proc.stdout.close()


class ServerTest(unittest.TestCase):
    """A test class with one metaserver (self.meta) for all its tests."""
    server_env = ()

    @classmethod
    def setUpClass(cls):
        cls.meta = Metaserver(*cls.server_env)

    @classmethod
    def tearDownClass(cls):
        cls.meta.stop()


class TapResult(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.n = 0
        self.failed = 0

    def _line(self, test, ok, extra=""):
        self.n += 1
        name = test.id().split(".", 1)[-1] if hasattr(test, "id") else str(test)
        print("%s %d - %s%s" % ("ok" if ok else "not ok", self.n, name, extra), flush=True)

    def addSuccess(self, test):
        self._line(test, True)

    def addFailure(self, test, err):
        self.failed += 1
        self._line(test, False)
        print("# " + "".join(traceback.format_exception(*err)).replace("\n", "\n# "), flush=True)

    addError = addFailure

    def addSkip(self, test, reason):
        self._line(test, True, " # SKIP " + reason)

    def addExpectedFailure(self, test, err):
        self._line(test, True, " # TODO expected failure")

    def addUnexpectedSuccess(self, test):
        self.failed += 1
        self._line(test, False, " # unexpected success")


def main(module="__main__"):
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[module])
    if len(sys.argv) > 1:  # names to run
        suite = unittest.TestSuite(t for t in _flatten(suite) if any(a in t.id() for a in sys.argv[1:]))
    tests = list(_flatten(suite))
    print("TAP version 13")
    print("1..%d" % len(tests), flush=True)
    result = TapResult()
    suite.run(result)
    # a setUpClass failure reports once for the class: count its tests as failed so the plan adds up
    while result.n < len(tests):
        result.failed += 1
        result._line(tests[result.n], False, " # not run (class setup failed)")
    sys.exit(1 if result.failed else 0)


def _flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _flatten(t)
        else:
            yield t
