"""A failed start of mmc-metaserver exits with its documented code (metaserver/base/exit_code.h, docs/operations.md)
after one `op=start exit_code=N` line, never by a signal, and with no sanitizer report. Runs the build's server,
and the ASan build's too when build-asan/ exists beside it and is not older."""
import os
import shutil
import signal
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
from tap import report  # noqa: E402
from metaserver import BINARY, LOOPBACK_PORTS, SANITIZER, Server, run_once  # noqa: E402


def failed(checks, what, binary, args, code):
    rc, err = run_once(args, binary)
    lines = [ln for ln in err.splitlines() if f'op=start exit_code={code} ' in ln]
    ok = rc == code and len(lines) == 1 and not SANITIZER.search(err)
    checks.append((f'{what}: exit {code}', ok, f'rc={rc} (negative: killed by that signal) stderr: {err[-2000:]}'))


def cases(checks, binary, tag):
    tmp = tempfile.mkdtemp(prefix='mmc-fail-')
    with Server(binary=binary, workdir=tmp) as held:
        data = os.path.join(tmp, 'data')
        failed(checks, f'{tag} data dir in use', binary, ['--data-dir', data] + LOOPBACK_PORTS, 5)
        failed(checks, f'{tag} rpc port in use', binary,
               ['--data-dir', os.path.join(tmp, 'd2')] + LOOPBACK_PORTS +
               ['--env', f'ock.mmc.meta_service_url=tcp://127.0.0.1:{held.rpc}'], 4)
        failed(checks, f'{tag} KVCM port in use', binary,
               ['--data-dir', os.path.join(tmp, 'd3')] + LOOPBACK_PORTS +
               ['--env', f'kvcm.service.http_port={held.http}'], 4)
    afile = os.path.join(tmp, 'a-file')
    open(afile, 'w').close()
    failed(checks, f'{tag} data dir under a file', binary, ['--data-dir', afile + '/data'] + LOOPBACK_PORTS, 3)
    failed(checks, f'{tag} data dir is a file', binary, ['--data-dir', afile] + LOOPBACK_PORTS, 3)
    failed(checks, f'{tag} data dir under /proc', binary, ['--data-dir', '/proc/mmc-no/data'] + LOOPBACK_PORTS, 3)
    failed(checks, f'{tag} Redis store unreachable', binary,
           ['--data-dir', os.path.join(tmp, 'd6'), '--env', 'ock.mmc.meta.store_uri=redis://127.0.0.1:1'] +
           LOOPBACK_PORTS, 3)
    failed(checks, f'{tag} unknown key', binary, ['--env', 'ock.mmc.no_such_key=1'], 2)
    failed(checks, f'{tag} unknown option', binary, ['--bogus'], 2)
    failed(checks, f'{tag} option without its value', binary, ['--config'], 2)
    failed(checks, f'{tag} stray argument', binary, ['stray'], 2)
    failed(checks, f'{tag} bad value', binary, ['--env', 'ock.mmc.meta.world_size=0'], 2)
    kvcm_bounds(checks, binary, tag)
    failed(checks, f'{tag} high below low', binary, ['--env', 'ock.mmc.evict_threshold_high=70'], 2)
    failed(checks, f'{tag} missing config file', binary, ['--config', os.path.join(tmp, 'none.conf')], 2)
    conf = os.path.join(tmp, 'bad.conf')
    with open(conf, 'w') as f:
        f.write('# a comment\nock.mmc.no_such_key = 1\n')
    failed(checks, f'{tag} unknown key in a config file', binary, ['--config', conf], 2)
    err = reason(run_once(['--config', conf], binary)[1])
    checks.append((f'{tag} a refused line names its file and line', f'{conf}:2: unknown configuration key' in err, err))
    failed(checks, f'{tag} KVCM on every interface without credentials', binary,
           ['--data-dir', os.path.join(tmp, 'd5')] + LOOPBACK_PORTS + ['--env', 'kvcm.service.bind=0.0.0.0'], 2)
    failed(checks, f'{tag} log file unopenable', binary,
           ['--data-dir', os.path.join(tmp, 'd4'), '--env', f'ock.mmc.log_path={afile}/log'] + LOOPBACK_PORTS, 6)


def kvcm_bounds(checks, binary, tag):
    """A kvcm.* key is a row of the server's one table: out of its bounds, the start and --check-config refuse it
    alike, exit 2, naming the key and its range."""
    for args in (['--env', 'kvcm.service.http_port=70000'], ['--check-config', '--env', 'kvcm.service.http_port=70000']):
        failed(checks, f'{tag} kvcm key out of bounds ({args[0]})', binary, args, 2)
        err = reason(run_once(args, binary)[1])
        checks.append((f'{tag} kvcm key out of bounds ({args[0]}): the key and its range are named',
                       'kvcm.service.http_port' in err and '[0, 65535]' in err, err))


def reason(stderr):
    """The err= of a failed start's one line."""
    line = next((ln for ln in stderr.splitlines() if 'op=start exit_code=' in ln), '')
    return line.split(' err=', 1)[-1]


def checked_alike(checks, binary, tag, what, keys, code, tmp):
    """--check-config and a start on a fresh data dir both fail with code and the same err= text: one check serves
    both."""
    args = [a for k in keys for a in ('--env', k)]
    data = tempfile.mkdtemp(dir=tmp)
    both = (['--check-config'] + args, ['--data-dir', data] + LOOPBACK_PORTS + args)
    failed(checks, f'{tag} {what}: --check-config', binary, both[0], code)
    failed(checks, f'{tag} {what}: start', binary, both[1], code)
    said = [reason(run_once(a, binary)[1]) for a in both]
    checks.append((f'{tag} {what}: the same reason both ways', said[0] == said[1], f'{said}'))


def lock_keys_checked_alike(checks, binary, tag):
    """The leader-election keys the start refuses (it accepted redis://host, without a port, which the start then
    refused)."""
    tmp = tempfile.mkdtemp(prefix='mmc-lock-')
    bad = [['kvcm.distributed_lock.uri=' + u] for u in ('redis://host', 'redis://', 'redis://host:0', 'zk://h:2181',
                                                         'file://')]
    bad.append(['kvcm.distributed_lock.uri=file://' + os.path.join(tmp, 'lock'),
                'kvcm.leader_elector.loop_interval_ms=1000', 'kvcm.leader_elector.lease_ms=3000'])
    for keys in bad:
        checked_alike(checks, binary, tag, ' '.join(keys), keys, 2, tmp)
    shutil.rmtree(tmp, ignore_errors=True)


def start_checks_checked_alike(checks, binary, tag):
    """Every check the start makes before it binds a socket, --check-config makes too (it said "configuration ok"
    for each of these, which the start then refused): the KVCM binds' exposure, the TLS files of both ports, the
    bootstrap admin's and the Redis store's password files, the log file."""
    tmp = tempfile.mkdtemp(prefix='mmc-check-')
    missing = os.path.join(tmp, 'missing')
    afile = os.path.join(tmp, 'a-file')
    open(afile, 'w').close()
    cases = [('KVCM on every interface without credentials', ['kvcm.service.bind=0.0.0.0'], 2),
             ('KVCM gRPC on every interface without credentials', ['kvcm.service.rpc_bind=0.0.0.0'], 2),
             ('an RPC TLS certificate that is not there',
              ['ock.mmc.tls.enable=true', f'ock.mmc.tls.cert.path={missing}.pem', f'ock.mmc.tls.key.path={missing}.key'],
              2),
             ('a KVCM TLS certificate that is not there',
              [f'kvcm.service.tls.cert_file={missing}.pem', f'kvcm.service.tls.key_file={missing}.key'], 2),
             ('an admin password file that is not there',
              ['kvcm.service.admin_user=root', f'kvcm.service.admin_password_file={missing}.pw'], 2),
             ('a Redis store password file that is not there',
              ['ock.mmc.meta.store_uri=redis://127.0.0.1:1', f'ock.mmc.meta.store_password_file={missing}.pw'], 2),
             ('a log file that cannot be opened', [f'ock.mmc.log_path={afile}/log'], 6)]
    for what, keys, code in cases:
        checked_alike(checks, binary, tag, what, keys, code, tmp)
    shutil.rmtree(tmp, ignore_errors=True)


def restart_right_after_sigterm(checks, binary, tag):
    """A rolling restart (SIGTERM, then a start at once on the same data dir) waits while the stopping server drains
    and holds the data dir's lock, and serves: it exited 5 (data_dir_in_use), which the unit does not restart."""
    tmp = tempfile.mkdtemp(prefix='mmc-restart-')
    data = os.path.join(tmp, 'data')
    for d in ('old', 'new'):
        os.mkdir(os.path.join(tmp, d))
    old = Server(['--data-dir', data], binary=binary, workdir=os.path.join(tmp, 'old'))
    old.signal(signal.SIGTERM)
    try:
        with Server(['--data-dir', data], binary=binary, workdir=os.path.join(tmp, 'new')) as new:
            ok, detail = True, new.stderr()
    except RuntimeError as e:
        ok, detail = False, str(e)
    old.proc.wait(30)
    checks.append((f'{tag} a start right after SIGTERM waits for the stopping server, then serves', ok, detail))
    shutil.rmtree(tmp, ignore_errors=True)


def parents_created(checks, binary, tag):
    tmp = tempfile.mkdtemp(prefix='mmc-parents-')
    data = os.path.join(tmp, 'var', 'lib', 'mmc', 'data')
    with Server(['--data-dir', data], binary=binary, workdir=tmp) as s:
        modes = [oct(os.stat(os.path.join(tmp, *p)).st_mode & 0o777) for p in
                 (['var'], ['var', 'lib'], ['var', 'lib', 'mmc'], ['var', 'lib', 'mmc', 'data'])]
        ok = all(m == '0o700' for m in modes) and os.path.exists(os.path.join(data, 'data.mdb'))
        checks.append((f'{tag} missing parents of the data dir are created 0700', ok, f'{modes} {s.stderr()}'))
    checks.append((f'{tag} a clean stop exits 0', s.proc.returncode == 0, f'rc={s.proc.returncode}'))


def resolver_down(checks, binary, tag):
    """A name the resolver cannot answer for yet (DNS not up at boot) is a failure to listen, exit 4, which the
    systemd units restart; exit 2 (the configuration), which they do not, kept the server down for good. The
    resolver is made unreachable in a mount namespace of the server's own (root only)."""
    if os.geteuid() != 0 or not shutil.which('unshare'):
        print(f'# {tag} resolver down: not run (needs root and unshare)')
        return
    with open('/etc/nsswitch.conf') as f:
        hosts = next((ln.split()[1:] for ln in f if ln.startswith('hosts:')), ['files', 'dns'])
    if 'dns' not in hosts or any(src.startswith('resolve') for src in hosts):
        print(f'# {tag} resolver down: not run (hosts: {" ".join(hosts)}; the test cuts resolv.conf\'s resolver)')
        return
    tmp = tempfile.mkdtemp(prefix='mmc-nodns-')
    resolv, wrapper = os.path.join(tmp, 'resolv.conf'), os.path.join(tmp, 'no-dns')
    with open(resolv, 'w') as f:
        f.write('nameserver 127.255.255.254\noptions timeout:1 attempts:1\n')
    with open(wrapper, 'w') as f:
        f.write(f'#!/bin/sh\nmount --bind {resolv} /etc/resolv.conf && exec {binary} "$@"\n')
    os.chmod(wrapper, 0o755)
    failed(checks, f'{tag} resolver down', 'unshare',
           ['-m', wrapper, '--data-dir', os.path.join(tmp, 'data')] + LOOPBACK_PORTS +
           ['--env', 'ock.mmc.meta_service_url=tcp://mmc-head.resolver-down.example:0'], 4)


def main():
    checks = []
    binaries = [('build', BINARY)]
    root = os.path.realpath(os.path.join(os.path.dirname(BINARY), '..', '..'))
    asan = os.path.join(root, 'build-asan', 'metaserver', 'mmc-metaserver')
    if os.path.exists(asan) and os.path.realpath(asan) != os.path.realpath(BINARY):
        if os.path.getmtime(asan) >= os.path.getmtime(BINARY):
            binaries.append(('build-asan', asan))
        else:  # an older build-asan may predate what this build fixes
            print(f'# {asan} is older than {BINARY}: not run (rebuild it to include it)')
    for tag, binary in binaries:
        cases(checks, binary, tag)
        lock_keys_checked_alike(checks, binary, tag)
        start_checks_checked_alike(checks, binary, tag)
        parents_created(checks, binary, tag)
        restart_right_after_sigterm(checks, binary, tag)
        resolver_down(checks, binary, tag)
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
