"""The Redis lock of leader election and its password (docs/operations.md, "High availability"; docs/kvcm.md):
a password in the lock URI never reaches the log; kvcm.distributed_lock.password_file keeps it off the command
line; a lock Redis that refuses the server (no password, a wrong one) is logged, once and then rate-limited, instead
of a standby that waits in silence for ever; --check-config and the start refuse an unreadable password file alike.
Needs redis-server; skips with the reason otherwise. usage: lock_secrets.py"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
from tap import report  # noqa: E402
from metaserver import LOOPBACK_PORTS, Server, run_once  # noqa: E402

PASSWORD = 'lock-Pa55-' + os.urandom(6).hex()
ELECTION = ['--env', 'kvcm.leader_elector.lease_ms=2000', '--env', 'kvcm.leader_elector.loop_interval_ms=100']


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def redis(tmp):
    port = free_port()
    p = subprocess.Popen(['redis-server', '--port', str(port), '--bind', '127.0.0.1', '--requirepass', PASSWORD,
                          '--save', '', '--appendonly', 'no', '--dir', tmp], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    for _ in range(500):
        try:
            socket.create_connection(('127.0.0.1', port), timeout=1).close()
            return p, port
        except OSError:
            time.sleep(0.01)
    p.kill()
    raise RuntimeError('redis-server did not start')


def secret_file(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), 'w') as f:
        f.write(text + '\n')
    return path


def lock_args(uri, password_file=None):
    args = ELECTION + ['--env', f'kvcm.distributed_lock.uri={uri}']
    return args + (['--env', f'kvcm.distributed_lock.password_file={password_file}'] if password_file else [])


def leads(checks, what, args, tmp):
    with Server(args, workdir=tempfile.mkdtemp(dir=tmp)) as s:
        elected = s.wait_log(r'op=ha_elected', timeout=20)
        log = s.stderr()
    checks.append((f'{what}: the server leads', elected is not None, log[-1500:]))
    checks.append((f'{what}: the password is in no log line', PASSWORD not in log,
                   [ln for ln in log.splitlines() if PASSWORD in ln]))


def refused(checks, what, args, tmp, error):
    """A lock Redis that refuses: said at once, then at most once per 10 s while the same error goes on."""
    with Server(args, workdir=tempfile.mkdtemp(dir=tmp)) as s:
        line = s.wait_log(r'op=ha_lock .*state=failing', timeout=20)
        time.sleep(3)  # 30 loop intervals of refusals: a line each without the limit
        lines = [ln for ln in s.stderr().splitlines() if 'op=ha_lock' in ln]
    checks.append((f'{what}: the standby says why it cannot lead', line is not None and error in line, f'{line}'))
    checks.append((f'{what}: once, not every loop', len(lines) == 1, lines[:5]))


def checked_alike(checks, tmp, port):
    missing = os.path.join(tmp, 'no-such.pw')
    args = lock_args(f'redis://default@127.0.0.1:{port}', missing)
    said = []
    for what, argv in (('--check-config', ['--check-config'] + args),
                       ('start', ['--data-dir', os.path.join(tmp, 'cc')] + LOOPBACK_PORTS + args)):
        rc, err = run_once(argv)
        said.append(err.split(' err=', 1)[-1].strip())
        checks.append((f'a missing lock password file: {what} exits 2', rc == 2 and 'password_file' in err, err))
    checks.append(('a missing lock password file: the same reason both ways', said[0] == said[1], said))


def refusal_masked(checks, tmp):
    """A lock URI the start refuses, with the log in a file: the one line on stderr bypasses the log's formatter."""
    log = os.path.join(tmp, 'refused.log')
    rc, err = run_once(['--data-dir', os.path.join(tmp, 'rf')] + LOOPBACK_PORTS +
                       ['--env', f'ock.mmc.log_path={log}', '--env', f'kvcm.distributed_lock.uri=redis://u:{PASSWORD}@h'])
    text = err + (open(log).read() if os.path.exists(log) else '')
    checks.append(('a refused lock URI: its password is neither on stderr nor in the log file',
                   rc == 2 and 'kvcm.distributed_lock.uri' in err and PASSWORD not in text, text[-1500:]))


def main():
    if not shutil.which('redis-server'):
        print('1..0 # SKIP redis-server is not installed')
        return 0
    tmp = tempfile.mkdtemp(prefix='mmc-lock-secret-')
    proc, port = redis(tmp)
    checks = []
    try:
        leads(checks, 'the password in the URI', lock_args(f'redis://default:{PASSWORD}@127.0.0.1:{port}'), tmp)
        leads(checks, 'the password in kvcm.distributed_lock.password_file',
              lock_args(f'redis://default@127.0.0.1:{port}', secret_file(tmp, 'lock.pw', PASSWORD)), tmp)
        refused(checks, 'no password', lock_args(f'redis://127.0.0.1:{port}'), tmp, 'NOAUTH')
        refused(checks, 'a wrong password', lock_args(f'redis://default@127.0.0.1:{port}',
                                                       secret_file(tmp, 'wrong.pw', 'not-it')), tmp, 'WRONGPASS')
        checked_alike(checks, tmp, port)
        refusal_masked(checks, tmp)
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
