"""Metrics and health for local agents whatever kvcm.service.bind is (docs/operations.md, "Monitoring"): a server
whose KVCM ports bind one address (10.0.0.1, in a network namespace of its own) with an admin account answers the
doc's probe block, run as printed on the same host, without credentials over 127.0.0.1, while its address still
wants an admin; then deploy/prometheus/prometheus.yml (a Prometheus on the head node) and prometheus-remote.yml (one
elsewhere: TLS, HTTP Basic, the password from a file) scrape it as shipped, with real Prometheus, the files they
name made under a private /etc. Needs root and iproute2 (skips otherwise); the Prometheus part needs prometheus.
usage: local_agents.py SOURCE_ROOT"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
sys.path.insert(0, os.path.dirname(__file__))
import docblocks  # noqa: E402
from tap import report  # noqa: E402
from metaserver import BINARY  # noqa: E402

ADDR = '10.0.0.1'
USER, PASSWORD = 'monitor', 'monitor-pw-' + os.urandom(6).hex()


def skip(reason):
    print(f'1..0 # SKIP {reason}')
    sys.exit(0)


class Head:
    """A network namespace with 10.0.0.1 on a link of its own, and a holder process in it whose /etc is an overlay."""

    def __init__(self, tmp):
        self.ns = f'mmc-agents-{os.getpid()}'
        self.tmp = tmp
        for d in ('etc-up', 'etc-wk'):
            os.makedirs(os.path.join(tmp, d))
        self.holder = None

    def up(self):
        # a veth pair with both ends inside: the address needs a link that is up, and not every kernel has dummy
        for s in (['netns', 'add', self.ns], ['-n', self.ns, 'link', 'add', 'd0', 'type', 'veth', 'peer', 'name', 'd1'],
                  ['-n', self.ns, 'addr', 'add', ADDR + '/32', 'dev', 'd0'], ['-n', self.ns, 'link', 'set', 'd0', 'up'],
                  ['-n', self.ns, 'link', 'set', 'd1', 'up'], ['-n', self.ns, 'link', 'set', 'lo', 'up']):
            r = subprocess.run(['ip'] + s, capture_output=True, text=True)
            if r.returncode:
                return f'ip {" ".join(s)}: {r.stderr.strip()}'
        t = self.tmp
        self.holder = subprocess.Popen(
            ['ip', 'netns', 'exec', self.ns, 'unshare', '--mount', '--propagation', 'private', 'sh', '-c',
             f'mount -t overlay overlay -o lowerdir=/etc,upperdir={t}/etc-up,workdir={t}/etc-wk /etc && echo up && '
             'exec sleep 86400'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        return None if self.holder.stdout.readline().strip() == 'up' else self.holder.stderr.read()

    def etc(self, name):
        """Where /etc/NAME of this host is, seen from outside."""
        return os.path.join(self.tmp, 'etc-up', name)

    def popen(self, argv, **kw):
        return subprocess.Popen(['nsenter', '-t', str(self.holder.pid), '--net', '--mount'] + argv, **kw)

    def run(self, argv, **kw):
        return subprocess.run(['nsenter', '-t', str(self.holder.pid), '--net', '--mount'] + argv, capture_output=True,
                              text=True, timeout=60, **kw)

    def down(self):
        if self.holder and self.holder.poll() is None:
            self.holder.kill()
            self.holder.wait()
        subprocess.run(['ip', 'netns', 'del', self.ns], capture_output=True)


def certificates(tmp):
    """A CA and a certificate for the server naming meta.example, 10.0.0.1 and 127.0.0.1."""
    def ssl(*args):
        subprocess.run(['openssl'] + list(args), cwd=tmp, check=True, capture_output=True)
    ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
    ssl('req', '-x509', *ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=mmc-ca')
    ssl('req', *ec, '-keyout', 'meta.key', '-out', 'meta.csr', '-subj', '/CN=meta')
    with open(os.path.join(tmp, 'san.ext'), 'w') as f:
        f.write(f'subjectAltName=DNS:meta.example,IP:{ADDR},IP:127.0.0.1\n')
    ssl('x509', '-req', '-in', 'meta.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'meta.pem',
        '-days', '2', '-extfile', 'san.ext')


class Server:
    def __init__(self, head, tmp, tls):
        pw = os.path.join(tmp, 'admin.pw')
        with open(os.open(pw, os.O_WRONLY | os.O_CREAT, 0o600), 'w') as f:
            f.write(PASSWORD + '\n')
        args = [BINARY, '--data-dir', os.path.join(tmp, 'data-tls' if tls else 'data'),
                '--env', f'kvcm.service.bind={ADDR}', '--env', f'kvcm.service.admin_user={USER}',
                '--env', f'kvcm.service.admin_password_file={pw}']
        if tls:
            args += ['--env', f'kvcm.service.tls.cert_file={tmp}/meta.pem',
                     '--env', f'kvcm.service.tls.key_file={tmp}/meta.key']
        self.log = os.path.join(tmp, 'tls.log' if tls else 'plain.log')
        self.proc = head.popen(args, stdout=subprocess.PIPE, stderr=open(self.log, 'w'), text=True)
        self.ready = self.proc.stdout.readline()

    def stderr(self):
        return open(self.log, errors='replace').read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)


def curl(head, url, *args):
    """The HTTP status of GET url from inside the head's namespace."""
    r = head.run(['curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', *args, url])
    return r.stdout.strip()


def plain(checks, head, tmp):
    s = Server(head, tmp, tls=False)
    try:
        checks.append(('a server with kvcm.service.bind=10.0.0.1 and an admin account starts',
                       'admin=6492' in s.ready, s.ready + s.stderr()[-2000:]))
        block = [b for b in docblocks.sh_blocks(docblocks.section('Monitoring')) if '/api/healthy' in b]
        r = head.run(['bash', '-e', '-u', '-o', 'pipefail', '-c', block[0]]) if block else None
        checks.append(('the doc\'s probe block, as printed on the head node, passes without credentials',
                       r is not None and r.returncode == 0, r and (r.stdout + r.stderr)[-2000:]))
        auth = ['-u', f'{USER}:{PASSWORD}']
        got = (curl(head, f'http://{ADDR}:6492/metrics'), curl(head, f'http://{ADDR}:6492/metrics', *auth),
               curl(head, 'http://127.0.0.1:6492/api/listAccount', '-X', 'POST', '-d', '{}'))
        checks.append(('10.0.0.1 still wants the admin (401, then 200); the loopback listener opens no admin call',
                       got == ('401', '200', '401'), got))
        prometheus(checks, head, tmp, 'prometheus.yml')
    finally:
        s.stop()


def tls(checks, head, tmp):
    certificates(tmp)
    s = Server(head, tmp, tls=True)
    try:
        got = curl(head, 'https://127.0.0.1:6492/api/healthy', '--cacert', os.path.join(tmp, 'ca.pem'))
        checks.append(('with TLS: a local probe over https://127.0.0.1 with the CA needs no account', got == '200',
                       got + s.stderr()[-1500:]))
        os.makedirs(head.etc('prometheus'), exist_ok=True)
        shutil.copy(os.path.join(tmp, 'ca.pem'), head.etc('prometheus/mmc-ca.pem'))
        with open(head.etc('prometheus/mmc.password'), 'w') as f:
            f.write(PASSWORD + '\n')
        prometheus(checks, head, tmp, 'prometheus-remote.yml')
    finally:
        s.stop()


def prometheus(checks, head, tmp, config):
    """Runs Prometheus on deploy/prometheus/CONFIG as shipped until it has scraped the server (or says why not)."""
    if not shutil.which('prometheus'):
        checks.append((f'{config} scrapes the server # SKIP prometheus is not installed', True, ''))
        return
    data = tempfile.mkdtemp(dir=tmp)
    p = head.popen(['prometheus', f'--config.file={os.path.join(ROOT, "deploy", "prometheus", config)}',
                    f'--storage.tsdb.path={data}', '--web.listen-address=127.0.0.1:9090'],
                   stdout=subprocess.DEVNULL, stderr=open(os.path.join(data, 'log'), 'w'))
    target, deadline = None, time.monotonic() + 60
    try:
        while time.monotonic() < deadline and p.poll() is None:  # the first scrape comes within an interval (15 s)
            r = head.run(['curl', '-s', 'http://127.0.0.1:9090/api/v1/targets'])
            try:
                active = json.loads(r.stdout)['data']['activeTargets']
                target = next((t for t in active if t['labels'].get('job') == 'mmc-metaserver'), None)
            except (ValueError, KeyError):
                target = None
            if target and target['health'] != 'unknown':
                break
            time.sleep(0.5)
    finally:
        p.terminate()
        p.wait(30)
    checks.append((f'{config}, as shipped, scrapes the server', target is not None and target['health'] == 'up',
                   target or open(os.path.join(data, 'log')).read()[-2000:]))


def main():
    global ROOT
    ROOT = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        skip('needs root to create a network namespace and mounts')
    for tool in ('ip', 'nsenter', 'unshare', 'curl', 'openssl'):
        if not shutil.which(tool):
            skip(f'{tool} is not installed')
    tmp = tempfile.mkdtemp(prefix='mmc-agents-')
    head = Head(tmp)
    checks = []
    try:
        err = head.up()
        if err:
            skip(f'a network namespace or an overlay is not permitted here ({err})')
        plain(checks, head, tmp)
        tls(checks, head, tmp)
    finally:
        head.down()
        shutil.rmtree(tmp, ignore_errors=True)
    return report(checks)


ROOT = None

if __name__ == '__main__':
    sys.exit(main())
