"""SIGHUP re-reads the file (and the command line, which still wins) and applies it whole or not at all: an invalid
pair or a bad value is rejected with a warning naming the key, and the running values stay. The KV Cache Manager's
kvcm.* keys are rows of the same table: a bad one rejects the reload, a reloadable one takes effect (seen through its
API), a restart-only one is named in the same warning as the object store's. A file the next start would refuse
(the checks of --check-config) is rejected as well."""
import json
import os
import re
import signal
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
from tap import report  # noqa: E402
from logfmt import parse  # noqa: E402
from metaserver import Server  # noqa: E402


def write(path, text):
    with open(path + '.new', 'w') as f:
        f.write(text)
    os.replace(path + '.new', path)


def reload_lines(s, result):
    out = []
    for line in s.stderr().splitlines():
        level, f = parse(line)
        if f.get('op') == 'reload' and f.get('result') == result:
            out.append((level, f))
    return out


def wait_count(s, pattern, n, timeout=20):
    """Waits until the log has more than n lines matching pattern; returns the last one or None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [ln for ln in s.stderr().splitlines() if re.search(pattern, ln)]
        if len(found) > n:
            return found[-1]
        time.sleep(0.05)
    return None


def register(s, group):
    """The admin API's registerInstance into group: the reply's status code."""
    body = {'instance_group': group, 'instance_id': 'reload-' + group, 'block_size': 8,
            'model_deployment': {'model_name': 'm', 'dtype': 'd'}, 'location_spec_infos': [{'name': 'tp0', 'size': 1}]}
    req = urllib.request.Request(f'http://127.0.0.1:{s.admin}/api/registerInstance', json.dumps(body).encode(),
                                 {'Content-Type': 'application/json'})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            reply = json.load(r)
    except urllib.error.HTTPError as e:
        reply = json.load(e)
    return reply.get('header', {}).get('status', {}).get('code')


def kvcm_keys(checks, s, conf):
    base = 'ock.mmc.evict_threshold_high = 95\nock.mmc.evict_threshold_low = 85\n'
    applied = len(reload_lines(s, 'applied'))
    write(conf, base + 'kvcm.write_session.max_sessions = 0\n')
    s.signal(signal.SIGHUP)
    line = s.wait_log(r'op=reload result=rejected key=kvcm.write_session.max_sessions')
    checks.append(('a kvcm key out of its bounds rejects the reload, naming it', line is not None, s.stderr()))

    checks.append(('before the reload a missing group is refused', register(s, 'reload_group') not in (None, 'OK'),
                   s.stderr()))
    write(conf, base + 'kvcm.instance_group.auto_create = true\nkvcm.service.max_connections = 10\n')
    s.signal(signal.SIGHUP)
    line = wait_count(s, r'op=reload result=applied', applied)
    checks.append(('a file with kvcm keys is applied', line is not None, s.stderr()))
    checks.append(('a reloadable kvcm key takes effect (kvcm.instance_group.auto_create)',
                   register(s, 'reload_group') == 'OK', s.stderr()))
    line = s.wait_log(r'op=reload key=kvcm.service.max_connections ')
    checks.append(('a restart-only kvcm key is named in the warning the object store\'s keys get',
                   line is not None and parse(line)[0] == 'warn' and 'next start' in line, s.stderr()))
    checks.append(('a reloadable kvcm key gets no such warning',
                   s.wait_log(r'op=reload key=kvcm.instance_group.auto_create ', timeout=0.2) is None, s.stderr()))


def next_start(checks, s, conf, password):
    """A file the next start would refuse (start_checks) is refused now; one that only fails as the running settings
    do (a file they name changed since the start) is applied, with a warning."""
    base = 'ock.mmc.evict_threshold_high = 95\nock.mmc.evict_threshold_low = 85\n'
    applied = len(reload_lines(s, 'applied'))
    write(conf, base + 'ock.mmc.tls.enable = true\nock.mmc.tls.cert.path = /nonexistent/cert.pem\n'
                       'ock.mmc.tls.key.path = /nonexistent/key.pem\n')
    s.signal(signal.SIGHUP)
    line = s.wait_log(r'op=reload result=rejected .*nonexistent/cert\.pem')
    checks.append(('a file naming TLS files a start could not load is rejected, as --check-config would',
                   line is not None, s.stderr()))
    write(conf, base + f'ock.mmc.meta.store_password_file = {password}\n')
    os.chmod(password, 0o644)
    s.signal(signal.SIGHUP)
    line = s.wait_log(r'op=reload result=rejected key=ock.mmc.meta.store_password_file .*chmod o-rwx')
    checks.append(('a password file every user may open is rejected, naming the key and the mend', line is not None,
                   s.stderr()))
    checks.append(('nothing of those files is applied', len(reload_lines(s, 'applied')) == applied, s.stderr()))
    os.chmod(password, 0o600)
    write(conf, base + 'ock.mmc.log_level = debug\n')
    s.signal(signal.SIGHUP)
    line = wait_count(s, r'op=reload result=applied', applied)
    checks.append(('a file the next start takes is applied', line is not None, s.stderr()))
    return applied + 1


def running_fails_too(checks):
    """The running settings name a password file that was opened to everyone after the start: a reload of a file
    that changes nothing of that is applied, and the warning says a start would fail."""
    conf = os.path.join(os.environ.get('TMPDIR', '/tmp'), f'mmc-reload-pw-{os.getpid()}.conf')
    password = conf + '.password'
    write(password, 'secret\n')
    os.chmod(password, 0o600)
    write(conf, f'ock.mmc.meta.store_password_file = {password}\n')
    with Server(['--config', conf]) as s:
        os.chmod(password, 0o644)
        write(conf, f'ock.mmc.meta.store_password_file = {password}\nock.mmc.log_level = debug\n')
        s.signal(signal.SIGHUP)
        line = s.wait_log(r'op=reload result=applied')
        checks.append(('a file the running settings fail as well is applied', line is not None, s.stderr()))
        line = s.wait_log(r'op=reload key=ock.mmc.meta.store_password_file warning=.*--check-config.*chmod o-rwx')
        checks.append(('with a warning that a start would fail, naming the key and the mend',
                       line is not None and parse(line)[0] == 'warn', s.stderr()))
        # a fault of its own beside the old one is still refused: TLS files that do not exist
        write(conf, f'ock.mmc.meta.store_password_file = {password}\nock.mmc.tls.enable = true\n'
                    'ock.mmc.tls.cert.path = /nonexistent/cert.pem\nock.mmc.tls.key.path = /nonexistent/key.pem\n')
        s.signal(signal.SIGHUP)
        line = s.wait_log(r'op=reload result=rejected .*nonexistent/cert\.pem')
        checks.append(('a new fault is refused even when the running settings fail another check', line is not None,
                       s.stderr()))
    os.unlink(conf)
    os.unlink(password)


def main():
    checks = []
    conf = os.path.join(os.environ.get('TMPDIR', '/tmp'), f'mmc-reload-{os.getpid()}.conf')
    password = conf + '.password'
    write(password, 'secret\n')
    os.chmod(password, 0o600)
    write(conf, 'ock.mmc.evict_threshold_high = 90\nock.mmc.evict_threshold_low = 80\n')
    with Server(['--config', conf, '--env', 'ock.mmc.meta.lease_ttl_ms=7000']) as s:
        write(conf, 'ock.mmc.evict_threshold_high = 70\nock.mmc.evict_threshold_low = 80\n'
                    'ock.mmc.log_level = debug\n')
        s.signal(signal.SIGHUP)
        line = s.wait_log(r'op=reload result=rejected')
        level, f = parse(line) if line else (None, {})
        checks.append(('high 70 / low 80 is rejected with a warning naming the key',
                       level == 'warn' and f.get('key') == 'ock.mmc.evict_threshold_high', f'{line!r}'))
        checks.append(('nothing of the rejected file is applied', not reload_lines(s, 'applied'), s.stderr()))

        write(conf, 'ock.mmc.evict_threshold_high = 90\nock.mmc.log_level = loud\n')
        s.signal(signal.SIGHUP)
        line = s.wait_log(r'op=reload result=rejected key=ock.mmc.log_level')
        checks.append(('a bad value is rejected naming its key', line is not None, s.stderr()))

        # the key comes from where the failure happened, not from the message: one without the ock.mmc. prefix
        # is named as well (reading it back out of the message gave key=-)
        write(conf, 'ock.mmc.evict_threshold_high = 90\nmeta.world_size = 16\n')
        s.signal(signal.SIGHUP)
        line = s.wait_log(r'op=reload result=rejected key=meta.world_size')
        checks.append(('an unknown key is rejected naming it', line is not None, s.stderr()))

        # a log file that cannot be opened rejects the whole reload: the log level beside it stays as it was
        write(conf, 'ock.mmc.evict_threshold_high = 90\nock.mmc.log_level = debug\n'
                    'ock.mmc.log_path = /nonexistent-dir/meta.log\n')
        s.signal(signal.SIGHUP)
        line = s.wait_log(r'op=reload result=rejected key=ock.mmc.log_path')
        checks.append(('a log file that cannot be opened rejects the reload, naming the key', line is not None,
                       s.stderr()))
        checks.append(('nothing of that file is applied', not reload_lines(s, 'applied'), s.stderr()))

        write(conf, 'ock.mmc.evict_threshold_high = 95\nock.mmc.evict_threshold_low = 85\n'
                    'ock.mmc.meta.lease_ttl_ms = 5000\nock.mmc.meta.world_size = 16\n')
        s.signal(signal.SIGHUP)
        line = s.wait_log(r'op=reload result=applied')
        f = parse(line)[1] if line else {}
        checks.append(('a valid file is applied',
                       f.get('evict_high') == '95' and f.get('evict_low') == '85', f'{line!r}'))
        checks.append(('the command line still wins after a reload', f.get('lease_ttl_ms') == '7000', f'{line!r}'))
        line = s.wait_log(r'op=reload key=ock.mmc.meta.world_size')
        checks.append(('a key that needs a restart is named in a warning',
                       line is not None and parse(line)[0] == 'warn', s.stderr()))
        kvcm_keys(checks, s, conf)
        next_start(checks, s, conf, password)
        checks.append(('the server is still running', s.proc.poll() is None, s.stderr()))
    checks.append(('it stops cleanly', s.proc.returncode == 0, f'rc={s.proc.returncode}'))
    running_fails_too(checks)
    os.unlink(conf)
    os.unlink(password)
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
