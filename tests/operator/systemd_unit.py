"""The installed units, started as systemd would start them but without systemd: docs/operations.md's steps for a
secured server ("Running under systemd") and for a second cluster ("Several clusters on one host") run under a root
prefix, then for each unit its ExecStart runs with its Environment and EnvironmentFile, a CREDENTIALS_DIRECTORY
holding what its LoadCredential lines find in /etc/credstore (mode 0400, owned by the service's uid, a missing one
skipped), its STATE_DIRECTORY and LOGS_DIRECTORY (owned by that uid) and a NOTIFY_SOCKET, as an unprivileged uid
that owns nothing else, as DynamicUser gives. It must start, say READY=1, log to its log directory, keep its data in
its state directory and serve with the cluster secret, the admin password and the TLS key it was given.
Needs root (to run as another uid); skips otherwise. usage: systemd_unit.py BUILD_ROOT"""
import base64
import json
import os
import re
import shlex
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
sys.path.insert(0, os.path.dirname(__file__))
import docblocks  # noqa: E402
from metaserver import BINARY, LOOPBACK_PORTS  # noqa: E402
from tap import report  # noqa: E402

UID = 61184 + os.getpid() % 4000  # DynamicUser's range: an account no file belongs to
CREDSTORE = ('etc/credstore', 'run/credstore', 'usr/lib/credstore')
# the doc's servers bind every interface: the test's stay on loopback, on free ports
OVERRIDES = ' '.join(LOOPBACK_PORTS) + ' --env kvcm.service.bind=127.0.0.1'


def service_section(path, instance):
    """The [Service] settings of a unit file, each key to its list of values, with %i and %% expanded."""
    out, in_service = {}, False
    for line in open(path):
        line = line.strip()
        if line.startswith('['):
            in_service = line == '[Service]'
        elif in_service and '=' in line and not line.startswith('#'):
            key, value = line.split('=', 1)
            out.setdefault(key, []).append(value.replace('%i', instance).replace('%%', '%'))
    return out


def env_file(path):
    env = {}
    for line in open(path) if os.path.exists(path) else []:
        m = re.match(r'\s*([A-Za-z_]\w*)=(.*)', line)
        if m:
            env[m.group(1)] = ' '.join(shlex.split(m.group(2)))
    return env


def exec_argv(line, env):
    """systemd's ExecStart rules: ${VAR} is replaced inside a word, a word that is $VAR becomes the variable's
    words (none when unset)."""
    argv = []
    for w in shlex.split(line):
        if re.fullmatch(r'\$[A-Za-z_]\w*', w):
            argv += env.get(w[1:], '').split()
        else:
            argv.append(re.sub(r'\$\{(\w+)\}', lambda m: env.get(m.group(1), ''), w))
    return argv


def private_dir(root, base, name, uid):
    """StateDirectory= / LogsDirectory= under DynamicUser: BASE/private/NAME owned by uid, BASE/NAME a link to it."""
    private = os.path.join(root, base, 'private')
    os.makedirs(os.path.join(private, name), exist_ok=True)
    os.chmod(private, 0o711)  # systemd hides the others from the service with a mount; a traversable dir here
    os.chown(os.path.join(private, name), uid, uid)
    os.chmod(os.path.join(private, name), 0o700)
    link = os.path.join(root, base, name)
    if not os.path.islink(link):
        os.symlink(os.path.join('private', name), link)
    return link


def credentials(root, unit, lines, uid):
    """CREDENTIALS_DIRECTORY as systemd fills it from LoadCredential=ID:SOURCE lines."""
    d = os.path.join(root, 'run', 'credentials', unit)
    os.makedirs(d)
    for line in lines:
        cid, _, source = line.partition(':')
        source = source or cid
        found = [os.path.join(root, s, source) for s in CREDSTORE] if not source.startswith('/') else \
            [docblocks.rooted(source, root)]
        found = [f for f in found if os.path.exists(f)]
        if not found and source.startswith('/'):
            raise FileNotFoundError(f'LoadCredential={line}: systemd fails the start (243/CREDENTIALS)')
        if found:
            shutil.copy(found[0], os.path.join(d, cid))
            os.chown(os.path.join(d, cid), uid, uid)
            os.chmod(os.path.join(d, cid), 0o400)
    os.chown(d, uid, uid)
    os.chmod(d, 0o500)
    return d


class Started:
    """One unit's ExecStart as its service user; ready is the ready line, notify what reached NOTIFY_SOCKET."""

    def __init__(self, root, build, unit, instance=''):
        self.name = name = unit.replace('@.', f'@{instance}.')
        svc = service_section(os.path.join(build, unit), instance)
        env = {'PATH': '/usr/bin:/bin'}
        self.state = self.logs = ''  # none without StateDirectory= or LogsDirectory=
        for k in ('ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS'):
            if k in os.environ:
                env[k] = os.environ[k]
        for value in svc.get('Environment', []):
            env.update(dict(w.split('=', 1) for w in shlex.split(docblocks.rooted(value, root))))
        for value in svc.get('EnvironmentFile', []):
            env.update(env_file(docblocks.rooted(value.lstrip('-'), root)))
        for value in svc.get('StateDirectory', []):
            self.state = env['STATE_DIRECTORY'] = private_dir(root, 'var/lib', value, UID)
        for value in svc.get('LogsDirectory', []):
            self.logs = env['LOGS_DIRECTORY'] = private_dir(root, 'var/log', value, UID)
        env['CREDENTIALS_DIRECTORY'] = credentials(root, name, svc.get('LoadCredential', []), UID)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        env['NOTIFY_SOCKET'] = os.path.join(root, 'run', f'notify-{name}')
        self.sock.bind(env['NOTIFY_SOCKET'])
        os.chmod(env['NOTIFY_SOCKET'], 0o777)
        argv = exec_argv(docblocks.rooted(svc['ExecStart'][0], root), env)
        self.argv = [BINARY] + argv[1:]
        self.stderr = os.path.join(root, f'{name}.stderr')
        self.proc = subprocess.Popen(self.argv, env=env, cwd='/', stdout=subprocess.PIPE,
                                     stderr=open(self.stderr, 'w'), text=True, preexec_fn=self.demote)
        self.ready = self.proc.stdout.readline()
        self.notify = self.receive() if self.ready else ''
        m = re.search(r'rpc=tcp://\S+:(\d+) http=(\d+) admin=(\d+)', self.ready)
        self.rpc, self.http, self.admin = (int(g) for g in m.groups()) if m else (0, 0, 0)

    @staticmethod
    def demote():
        os.setgroups([])
        os.setgid(UID)
        os.setuid(UID)

    def receive(self):
        self.sock.settimeout(20)
        try:
            return self.sock.recv(4096).decode()
        except socket.timeout:
            return ''

    def why(self):
        if self.proc.poll() is None:
            return self.argv
        return f'exit {self.proc.returncode}: {open(self.stderr).read()[-2000:]} argv {self.argv}'

    def log(self, name='metaserver.log'):
        path = os.path.join(self.logs, name)
        return open(path).read() if self.logs and os.path.exists(path) else ''

    def listing(self, path):
        return os.listdir(path) if path and os.path.isdir(path) else f'no directory "{path}"'

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.sock.close()
        return self.proc.returncode


def https(port, path, cafile, user=None, password=None):
    """(status, body) of a POST over TLS that verifies the server's certificate against cafile."""
    ctx = ssl.create_default_context(cafile=cafile)
    req = urllib.request.Request(f'https://127.0.0.1:{port}{path}', data=b'{}', method='POST')
    if user:
        req.add_header('Authorization', 'Basic ' + base64.b64encode(f'{user}:{password}'.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=20, context=ctx) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, {}
    except OSError as e:
        return 0, str(e)


def tls_handshake(port, cafile):
    ctx = ssl.create_default_context(cafile=cafile)
    try:
        with socket.create_connection(('127.0.0.1', port), timeout=20) as s:
            with ctx.wrap_socket(s, server_hostname='127.0.0.1') as t:
                return t.version()
    except OSError as e:
        return str(e)


def setup(root, cwd):
    """The doc's steps, with a certificate for 127.0.0.1 as meta.pem and meta.key; the test's own ports."""
    docblocks.certificate(cwd)
    bindir = os.path.join(root, 'bin')
    docblocks.stubs(bindir)
    blocks = [b for s in ('Running under systemd', 'Several clusters on one host')
              for b in docblocks.sh_blocks(docblocks.section(s))]
    rc, out, _ = docblocks.run(blocks, root, cwd, bindir)
    default = os.path.join(root, 'etc', 'default', 'mmc-metaserver')
    opts = env_file(default).get('MMC_METASERVER_OPTS', '')
    with open(default, 'w') as f:
        f.write(f'MMC_METASERVER_OPTS="{opts} {OVERRIDES}"\n')
    with open(default + '-b', 'w') as f:
        f.write(f'MMC_METASERVER_OPTS="{OVERRIDES}"\n')
    return rc, out


def secured(s, root, cafile):
    """The checks of the plain unit, whose config has the cluster secret, an admin and TLS on both ports."""
    password = open(os.path.join(root, 'etc', 'credstore', 'mmc-metaserver.admin.password')).read().strip()
    ok_status, body = https(s.admin, '/api/listAccount', cafile, 'root', password)
    bad_status, _ = https(s.admin, '/api/listAccount', cafile, 'root', password + 'x')
    return [('its RPC port speaks TLS with the key from the credential', 'TLS' in tls_handshake(s.rpc, cafile),
             tls_handshake(s.rpc, cafile)),
            ('its log file says the cluster secret and TLS are on', 'tls=on auth=token' in s.log(), s.log()[-2000:]),
            ('its admin port speaks TLS and admits root with the password from admin.password',
             ok_status == 200 and body.get('header', {}).get('status', {}).get('code') == 'OK', f'{ok_status} {body}'),
            ('and refuses a wrong password', bad_status == 401, bad_status)]


def common(s, what):
    data = os.path.join(s.state, 'data.mdb')
    return [(f'{what} starts as uid {UID} and prints its ready line', bool(s.ready), s.why()),
            (f'{what} sends READY=1 to NOTIFY_SOCKET', 'READY=1' in s.notify, s.notify),
            (f'{what} keeps its LMDB data in its STATE_DIRECTORY',
             s.state and os.path.exists(data) and os.stat(data).st_uid == UID, s.listing(s.state)),
            (f'{what} logs into its LOGS_DIRECTORY', 'op=start' in s.log(), s.listing(s.logs))]


def main():
    build = sys.argv[1]
    if os.geteuid() != 0:
        print('1..0 # SKIP running a unit as its own uid needs root')
        return 0
    if not shutil.which('openssl'):
        print('1..0 # SKIP the doc\'s steps need openssl (Debian package openssl)')
        return 0
    root = tempfile.mkdtemp(prefix='mmc-unit-')
    os.chmod(root, 0o755)
    cwd = os.path.join(root, 'work')
    os.makedirs(cwd)
    started = []
    try:
        rc, out = setup(root, cwd)
        checks = [('the doc\'s steps for a secured server and a second cluster run', rc == 0, out[-2000:])]
        cafile = os.path.join(cwd, 'meta.pem')
        for unit, instance, what in (('mmc-metaserver.service', '', 'mmc-metaserver.service'),
                                     ('mmc-metaserver@.service', 'b', 'mmc-metaserver@b.service')):
            s = Started(root, build, unit, instance)
            started.append(s)
            checks += common(s, what)
            if not instance:
                checks += secured(s, root, cafile)
            else:
                checks.append((f'{what} has its own cluster secret', 'auth=token' in s.log(), s.log()[-2000:]))
        for s in started:
            checks.append((f'SIGTERM stops {s.name} with exit 0', s.stop() == 0, s.why()))
    finally:
        for s in started:
            s.stop()
        shutil.rmtree(root, ignore_errors=True)
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
