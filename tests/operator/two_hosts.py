"""The two-host walkthrough of docs/operations.md ("Running on several machines"), with two network namespaces
joined by a veth pair standing in for two hosts: host A (10.77.N.1) runs mmc-metaserver and a lending store
(mmc-quickstart writer), host B (10.77.N.2) a client (mmc-quickstart reader) that reads the block one-sided over
tcp. Passes when the reader's bytes match and B's interface received at least the block's bytes. Needs root
(CAP_NET_ADMIN) and iproute2; skips with the reason otherwise.
usage: two_hosts.py MMC_QUICKSTART"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from metaserver import BINARY  # noqa: E402

BLOCK = 4 << 20


def sh(*args):
    return subprocess.run(args, capture_output=True, text=True)


def skip(reason):
    print(f'1..0 # SKIP {reason}')
    sys.exit(0)


class Hosts:
    def __init__(self):
        n = os.getpid() % 250 + 1
        self.a, self.b = f'mmc-a-{os.getpid()}', f'mmc-b-{os.getpid()}'
        self.ip_a, self.ip_b = f'10.77.{n}.1', f'10.77.{n}.2'
        self.va, self.vb = f'mmcva{n}', f'mmcvb{n}'

    def up(self):
        steps = [('netns', 'add', self.a), ('netns', 'add', self.b),
                 ('link', 'add', self.va, 'type', 'veth', 'peer', 'name', self.vb),
                 ('link', 'set', self.va, 'netns', self.a), ('link', 'set', self.vb, 'netns', self.b),
                 ('-n', self.a, 'addr', 'add', self.ip_a + '/24', 'dev', self.va),
                 ('-n', self.b, 'addr', 'add', self.ip_b + '/24', 'dev', self.vb),
                 ('-n', self.a, 'link', 'set', self.va, 'up'), ('-n', self.b, 'link', 'set', self.vb, 'up'),
                 ('-n', self.a, 'link', 'set', 'lo', 'up'), ('-n', self.b, 'link', 'set', 'lo', 'up')]
        for s in steps:
            r = sh('ip', *s)
            if r.returncode:
                return f'ip {" ".join(s)}: {r.stderr.strip()}'
        return None

    def down(self):
        sh('ip', 'netns', 'del', self.a)
        sh('ip', 'netns', 'del', self.b)

    def rx_bytes(self):
        r = sh('ip', 'netns', 'exec', self.b, 'cat', f'/sys/class/net/{self.vb}/statistics/rx_bytes')
        return int(r.stdout.strip() or 0)


def conf(path, meta_url, hcom):
    with open(path, 'w') as f:
        f.write(f'ock.mmc.meta_service_url = {meta_url}\nock.mmc.local_service.protocol = host_tcp\n'
                f'ock.mmc.local_service.hcom_url = {hcom}\nock.mmc.local_service.dram.size = 64MB\n')


def walkthrough(h, quickstart, tmp):
    checks = []
    env = {k: v for k, v in os.environ.items() if not k.startswith(('FI_', 'MMC_LOCAL'))}
    meta = subprocess.Popen(['ip', 'netns', 'exec', h.a, BINARY, '--data-dir', os.path.join(tmp, 'data'),
                             '--env', f'ock.mmc.meta_service_url=tcp://{h.ip_a}:0',
                             '--env', 'kvcm.service.http_port=0', '--env', 'kvcm.service.admin_http_port=0'],
                            stdout=subprocess.PIPE, stderr=open(os.path.join(tmp, 'meta.log'), 'w'), text=True)
    procs = [meta]
    try:
        ready = meta.stdout.readline()
        m = re.search(r'rpc=(tcp://\S+)', ready)
        checks.append(('the meta server binds host A\'s address', bool(m) and h.ip_a in ready, ready))
        if not m:
            return checks
        conf(os.path.join(tmp, 'a.conf'), m.group(1), f'tcp://{h.ip_a}')
        conf(os.path.join(tmp, 'b.conf'), m.group(1), f'tcp://{h.ip_b}')
        writer = subprocess.Popen(['ip', 'netns', 'exec', h.a, quickstart, 'writer'], text=True,
                                  env=dict(env, MMC_LOCAL_CONFIG_PATH=os.path.join(tmp, 'a.conf')),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        procs.append(writer)
        line = writer.stdout.readline()
        checks.append(('host A lends a pool and puts the block', 'MMC_OK' in line, line))
        rx0 = h.rx_bytes()
        reader = subprocess.run(['ip', 'netns', 'exec', h.b, quickstart, 'reader'], text=True, timeout=120,
                                env=dict(env, MMC_LOCAL_CONFIG_PATH=os.path.join(tmp, 'b.conf')),
                                capture_output=True)
        rx = h.rx_bytes() - rx0
        checks.append(('host B reads it and the bytes match', reader.returncode == 0 and 'bytes match' in reader.stdout,
                       reader.stdout + reader.stderr))
        checks.append((f'the block crossed the link (B received {rx} bytes)', rx >= BLOCK, f'rx={rx}'))
        writer.wait(60)
        checks.append(('the writer leaves once the reader removed the block', writer.returncode == 0,
                       writer.stdout.read()))
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
    return checks


def main():
    quickstart = sys.argv[1]
    if os.geteuid() != 0:
        skip('needs root to create network namespaces')
    if not shutil.which('ip'):
        skip('iproute2 (ip) is not installed')
    h = Hosts()
    err = h.up()
    if err:
        h.down()
        skip(f'network namespaces are not permitted here ({err})')
    tmp = tempfile.mkdtemp(prefix='mmc-2hosts-')
    try:
        checks = walkthrough(h, quickstart, tmp)
    finally:
        h.down()
    print(f'1..{len(checks)}')
    for i, (what, ok, detail) in enumerate(checks, 1):
        print(f'{"ok" if ok else "not ok"} {i} - {what}')
        if not ok:
            print('# ' + str(detail).replace('\n', '\n# '))
            print('# meta server log: ' + open(os.path.join(tmp, 'meta.log')).read()[-3000:].replace('\n', '\n# '))
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == '__main__':
    sys.exit(main())
