"""One real mmc-metaserver for the operator tests: free ports on loopback, a fresh directory, stopped on exit."""
import os
import re
import signal
import subprocess
import tempfile
import time

BINARY = os.environ.get('MMC_METASERVER', 'mmc-metaserver')
LOOPBACK_PORTS = ['--env', 'ock.mmc.meta_service_url=tcp://127.0.0.1:0', '--env', 'kvcm.service.http_port=0',
                  '--env', 'kvcm.service.admin_http_port=0', '--env', 'kvcm.service.rpc_port=0',
                  '--env', 'kvcm.service.admin_rpc_port=0']
SANITIZER = re.compile(r'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error:')


def run_once(args, binary=BINARY, timeout=60):
    """Runs the server to its exit (a start that must fail); returns (returncode, stderr)."""
    try:
        p = subprocess.run([binary] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout,
                           text=True, errors='replace')
    except subprocess.TimeoutExpired as e:  # it started after all (the child was killed)
        return None, f'still running after {timeout} s: {e.stderr}'
    return p.returncode, p.stderr


class Server:
    """A running server; ready holds its ready line, rpc/http/admin its ports."""

    def __init__(self, args=(), binary=BINARY, workdir=None, ports=True):
        self.dir = workdir or tempfile.mkdtemp(prefix='mmc-op-')
        self.log = os.path.join(self.dir, 'stderr.log')
        argv = [binary, '--data-dir', os.path.join(self.dir, 'data')] + (LOOPBACK_PORTS if ports else []) + list(args)
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=open(self.log, 'w'), text=True)
        self.ready = self.proc.stdout.readline()
        m = re.search(r'rpc=tcp://(\S+):(\d+) http=(\d+) admin=(\d+)', self.ready)
        if not m:
            self.proc.wait(30)
            raise RuntimeError(f'no ready line (rc {self.proc.returncode}): {self.stderr()}')
        self.host, self.rpc, self.http, self.admin = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))

    def stderr(self):
        with open(self.log, errors='replace') as f:
            return f.read()

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait_log(self, pattern, path=None, timeout=20):
        """Waits until the log (stderr, or path) has a line matching pattern; returns it or None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with open(path or self.log, errors='replace') as f:
                    for line in f:
                        if re.search(pattern, line):
                            return line
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        return None

    def stop(self):
        """SIGTERM and wait; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class Node:
    """An mmc-test-node (tests/integration/node.c) of server s, driven line by line: init'ed to lend pool bytes."""

    def __init__(self, s, node_bin, pool):
        env = dict(os.environ, MMC_TEST_META=f'tcp://127.0.0.1:{s.rpc}', MMC_PROTOCOL='host_tcp')
        self.p = subprocess.Popen([node_bin], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.cmd(f'init 1 {pool}')

    def cmd(self, c):
        """Sends one command; returns its reply line (none for quit)."""
        self.p.stdin.write(c + '\n')
        self.p.stdin.flush()
        return '' if c == 'quit' else self.p.stdout.readline()

    def quit(self):
        self.cmd('quit')
        self.p.wait(60)
