"""docs/operations.md's two-host walkthrough ("Running on several machines") and its TLS recipe ("Security", RPC
port), run exactly as printed: every shell block, as root, on the host its first line names. Two hosts are two
network namespaces joined by a veth pair with the doc's addresses (10.0.0.1, 10.0.0.2), each with its own host
name (A, B: same-host shortcuts do not apply between them) and its own /etc, /var (overlays on the real ones) and
/dev/shm, so the blocks touch nothing of this machine. The only steps not in a block are the ones the text asks
for: "Copy `FILE`... to host B" (copied between the hosts' file systems) and "stop the server (Ctrl-C)" (SIGINT).
A block that keeps running (the server, the writer) is left running once it printed its first line. Checks that
each block did what the text says, and that the block's bytes crossed the link. Needs root (namespaces, mounts)
and iproute2; skips with the reason otherwise.
usage: two_hosts.py MMC_QUICKSTART"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import docblocks  # noqa: E402
from metaserver import BINARY  # noqa: E402

BLOCK = 4 << 20
ADDRESSES = {'A': '10.0.0.1', 'B': '10.0.0.2'}
COPY = re.compile(r'Copy ((?:`[^`]+`(?:,\s+|\s+and\s+)?)+)\s+to\s+host\s+B')
STOP = re.compile(r'stop the server \(Ctrl-C\)')
RECIPE = re.compile(r'run the TLS recipe of \[Security\]')


def sh(*args):
    return subprocess.run(args, capture_output=True, text=True)


def skip(reason):
    print(f'1..0 # SKIP {reason}')
    sys.exit(0)


class Host:
    """A network namespace, and a holder process in it with the host's name and mounts, that blocks enter."""

    def __init__(self, name, tmp, tag):
        self.name, self.ip = name, ADDRESSES[name]
        self.ns, self.veth = f'mmc-{name.lower()}-{tag}', f'mmc{name.lower()}{tag}'
        self.dir = os.path.join(tmp, name)
        self.work = os.path.join(self.dir, 'work')
        self.holder = None
        for d in ('etc-up', 'etc-wk', 'var-up', 'var-wk', 'work'):
            os.makedirs(os.path.join(self.dir, d))

    def enter(self):
        """Starts the holder: a UTS and mount namespace inside the network one, with the overlays mounted."""
        d = self.dir
        mounts = (f'hostname {self.name} && '
                  f'mount -t overlay overlay -o lowerdir=/etc,upperdir={d}/etc-up,workdir={d}/etc-wk /etc && '
                  f'mount -t overlay overlay -o lowerdir=/var,upperdir={d}/var-up,workdir={d}/var-wk /var && '
                  'mount -t tmpfs tmpfs /dev/shm && echo up && exec sleep 86400')
        self.holder = subprocess.Popen(['ip', 'netns', 'exec', self.ns, 'unshare', '--uts', '--mount',
                                        '--propagation', 'private', 'sh', '-c', mounts],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if self.holder.stdout.readline().strip() != 'up':
            return f'host {self.name}: {self.holder.stderr.read()}'
        return None

    def path(self, name):
        """Where a file the text names lives on this host, seen from outside: /etc and /var in the overlays."""
        for top in ('etc', 'var'):
            if name.startswith(f'/{top}/'):
                return os.path.join(self.dir, f'{top}-up', name[len(top) + 2:])
        return os.path.join(self.work, name)

    def rx_bytes(self):
        r = sh('ip', 'netns', 'exec', self.ns, 'cat', f'/sys/class/net/{self.veth}/statistics/rx_bytes')
        return int(r.stdout.strip() or 0)

    def leave(self):
        if self.holder and self.holder.poll() is None:
            self.holder.kill()
            self.holder.wait()
        sh('ip', 'netns', 'del', self.ns)


def link(a, b):
    steps = [('netns', 'add', a.ns), ('netns', 'add', b.ns),
             ('link', 'add', a.veth, 'type', 'veth', 'peer', 'name', b.veth),
             ('link', 'set', a.veth, 'netns', a.ns), ('link', 'set', b.veth, 'netns', b.ns)]
    for h in (a, b):
        steps += [('-n', h.ns, 'addr', 'add', h.ip + '/24', 'dev', h.veth), ('-n', h.ns, 'link', 'set', h.veth, 'up'),
                  ('-n', h.ns, 'link', 'set', 'lo', 'up')]
    for s in steps:
        r = sh('ip', *s)
        if r.returncode:
            return f'ip {" ".join(s)}: {r.stderr.strip()}'
    return None


class Run:
    """One block running on its host: bash -eu -o pipefail on the block as printed, in the host's work directory."""

    def __init__(self, host, block, n, env):
        self.host, self.block = host, block
        self.what = f'host {host.name} block {n} ({block.splitlines()[0].lstrip("# ")[:60]})'
        script = os.path.join(host.dir, f'block{n}.sh')
        with open(script, 'w') as f:
            f.write(block)
        self.out = os.path.join(host.dir, f'block{n}.out')
        self.err = os.path.join(host.dir, f'block{n}.err')
        self.proc = subprocess.Popen(['nsenter', '-t', str(host.holder.pid), '--net', '--uts', '--mount', '--wd=' +
                                      host.work, 'bash', '-e', '-u', '-o', 'pipefail', script], env=env,
                                     stdout=open(self.out, 'w'), stderr=open(self.err, 'w'), start_new_session=True)

    def output(self):
        return open(self.out, errors='replace').read()

    def log(self):
        return open(self.err, errors='replace').read()

    def started(self, timeout=60):
        """Until it exited or printed a line; False when neither happened in time."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None or '\n' in self.output():
                return True
            time.sleep(0.05)
        return False

    def finish(self, timeout=90):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def interrupt(self):
        """Ctrl-C, as in a terminal: SIGINT to the block's process group."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
        return self.finish(30)

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def events(text, recipe):
    """The section's blocks and the steps its text asks for, in order: ('block', text), ('copy', [names]),
    ('stop', None), and the recipe's blocks where the text says to run it."""
    out = []
    pattern = re.compile(r'^```sh\n(.*?)^```|' + COPY.pattern + '|' + STOP.pattern + '|' + RECIPE.pattern,
                         re.S | re.M)
    for m in pattern.finditer(text):
        if m.group(1) is not None:
            out.append(('block', m.group(1)))
        elif m.group(2):
            out.append(('copy', re.findall(r'`([^`]+)`', m.group(2))))
        elif STOP.match(m.group(0)):
            out.append(('stop', None))
        else:
            out += [('block', b) for b in recipe]
    return out


class Walk:
    def __init__(self, hosts, env):
        self.hosts, self.env = hosts, env
        self.runs, self.checks, self.n = [], [], 0
        self.rx = {}

    def check(self, what, ok, detail):
        self.checks.append((what, ok, detail))

    def block(self, text):
        first = text.splitlines()[0]
        m = re.match(r'# host ([AB])\b', first)
        if not m:
            self.check(f'block {self.n + 1} names its host on its first line', False, first)
            return False
        host = self.hosts[m.group(1)]
        self.n += 1
        if host.name == 'B':
            self.rx.setdefault(self.n, host.rx_bytes())
        run = Run(host, text, self.n, self.env)
        self.runs.append(run)
        if not run.started():
            self.check(f'{run.what} starts', False, run.log()[-2000:])
            return False
        if run.proc.poll() is not None:
            self.check(f'{run.what} exits 0', run.proc.returncode == 0,
                       f'rc={run.proc.returncode}\n{run.output()[-1500:]}\n{run.log()[-2500:]}')
            return run.proc.returncode == 0
        return True

    def copy(self, names):
        a, b = self.hosts['A'], self.hosts['B']
        for name in names:
            src, dst = a.path(name), b.path(name)
            os.makedirs(os.path.dirname(dst), mode=0o755, exist_ok=True)
            ok = os.path.exists(src)
            if ok:
                shutil.copy2(src, dst)
            self.check(f'the text\'s copy of {name} to host B finds it on host A', ok, src)

    def stop(self):
        """The blocks still running end: the writer by itself, then the server on Ctrl-C, each with exit 0."""
        running = [r for r in self.runs if r.proc.poll() is None]
        for r in running:
            if 'mmc-metaserver ready' not in r.output():
                rc = r.finish()
                self.check(f'{r.what} ends by itself, exit 0', rc == 0, f'rc={rc}\n{r.output()}\n{r.log()[-2000:]}')
        for r in running:
            if 'mmc-metaserver ready' in r.output():
                rc = r.interrupt()
                self.check(f'{r.what} stops on Ctrl-C, exit 0', rc == 0, f'rc={rc}\n{r.log()[-2000:]}')

    def run(self, evs):
        for kind, arg in evs:
            if kind == 'block' and not self.block(arg):
                return False
            if kind == 'copy':
                self.copy(arg)
            if kind == 'stop':
                self.stop()
        self.stop()
        return True

    def cleanup(self):
        for r in self.runs:
            r.kill()


def judge(w, evs):
    """What the text promises of each block, from their outputs and logs."""
    servers = [r for r in w.runs if 'mmc-metaserver ready' in r.output()]
    plain, tls = (servers + [None, None])[:2]
    w.check('the meta server on host A serves at 10.0.0.1:5000, with the cluster secret',
            plain is not None and 'rpc=tcp://10.0.0.1:5000' in plain.output() and 'auth=token' in plain.log(),
            plain and plain.log()[-2000:])
    writer = next((r for r in w.runs if 'writer: put' in r.output() and r.host.name == 'A'), None)
    w.check('host A\'s store lends a pool and puts the block', writer is not None and 'MMC_OK' in writer.output(),
            writer and writer.output() + writer.log()[-2000:])
    reader = next((r for r in w.runs if 'reader: got' in r.output() and r.host.name == 'B'), None)
    w.check('host B\'s store reads it: bytes match', reader is not None and 'bytes match' in reader.output(),
            reader and reader.output() + reader.log()[-2000:])
    if reader:
        n = w.runs.index(reader) + 1
        rx = reader.host.rx_bytes() - w.rx.get(n, 0)
        w.check(f'the block crossed the link (B received {rx} bytes)', rx >= BLOCK, f'rx={rx}')
    w.check('the meta server logs host A\'s store as host="A"', plain is not None and 'op=mount' in plain.log() and
            'host="A"' in plain.log(), plain and plain.log()[-2000:])
    w.check('with TLS: the server on host A serves with TLS', tls is not None and 'tls=on' in tls.log(),
            tls and tls.log()[-2000:])
    both = next((r for r in w.runs if 'b-tls.conf' in r.block), None)
    w.check('with TLS: host B\'s writer and reader, with the store\'s certificate, read the block back',
            both is not None and both.proc.returncode == 0 and 'bytes match' in both.output(),
            both and both.output() + both.log()[-2000:])
    w.check('with TLS: the server admitted host B\'s stores over TLS', tls is not None and
            'host="B"' in tls.log() and 'op=tls_handshake' not in tls.log(), tls and tls.log()[-2000:])


def main():
    quickstart = sys.argv[1]
    if os.geteuid() != 0:
        skip('needs root to create network namespaces and mounts')
    for tool in ('ip', 'nsenter', 'unshare', 'openssl'):
        if not shutil.which(tool):
            skip(f'{tool} is not installed')
    several = docblocks.section('Running on several machines')
    recipe = [b for b in docblocks.sh_blocks(docblocks.section('Security')) if 'ock.mmc.tls.ca.path' in b]
    evs = events(several[several.index('**Two hosts, step by step.**'):], recipe)
    tmp = tempfile.mkdtemp(prefix='mmc-2hosts-')
    bindir = os.path.join(tmp, 'bin')
    os.makedirs(bindir)
    os.symlink(os.path.abspath(BINARY), os.path.join(bindir, 'mmc-metaserver'))
    os.symlink(os.path.abspath(quickstart), os.path.join(bindir, 'mmc-quickstart'))
    env = {k: v for k, v in os.environ.items() if not k.startswith(('FI_', 'MMC_'))}
    env['PATH'] = bindir + os.pathsep + env.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')
    tag = str(os.getpid() % 100000)
    hosts = {n: Host(n, tmp, tag) for n in ADDRESSES}
    w = Walk(hosts, env)
    try:
        err = link(hosts['A'], hosts['B']) or hosts['A'].enter() or hosts['B'].enter()
        if err:
            skip(f'network namespaces or mounts are not permitted here ({err})')
        w.check(f'the walkthrough and the recipe have {sum(k == "block" for k, _ in evs)} shell blocks and the '
                'copies and the stop the text asks for', len(evs) >= 7 and len(recipe) == 1, evs)
        if w.run(evs):
            judge(w, evs)
    finally:
        w.cleanup()
        for h in hosts.values():
            h.leave()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f'1..{len(w.checks)}')
    for i, (what, ok, detail) in enumerate(w.checks, 1):
        print(f'{"ok" if ok else "not ok"} {i} - {what}')
        if not ok:
            print('# ' + str(detail).replace('\n', '\n# '))
    return 0 if all(ok for _, ok, _ in w.checks) else 1


if __name__ == '__main__':
    sys.exit(main())
