"""A failed start of mmc-metaserver exits with its documented code (metaserver/exit_code.h, docs/operations.md)
after one `op=start exit_code=N` line, never by a signal, and with no sanitizer report. Runs the build's server,
and the ASan build's too when build-asan/ exists beside it and is not older."""
import os
import shutil
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
    failed(checks, f'{tag} bad value', binary, ['--env', 'ock.mmc.meta.world_size=0'], 2)
    failed(checks, f'{tag} high below low', binary, ['--env', 'ock.mmc.evict_threshold_high=70'], 2)
    failed(checks, f'{tag} missing config file', binary, ['--config', os.path.join(tmp, 'none.conf')], 2)
    failed(checks, f'{tag} KVCM on every interface without credentials', binary,
           ['--data-dir', os.path.join(tmp, 'd5')] + LOOPBACK_PORTS + ['--env', 'kvcm.service.bind=0.0.0.0'], 2)
    failed(checks, f'{tag} log file unopenable', binary,
           ['--data-dir', os.path.join(tmp, 'd4'), '--env', f'ock.mmc.log_path={afile}/log'] + LOOPBACK_PORTS, 6)


def lock_keys_checked_alike(checks, binary, tag):
    """--check-config refuses the leader-election keys the start refuses, with the same message: one check serves
    both (it accepted redis://host, without a port, which the start then refused)."""
    tmp = tempfile.mkdtemp(prefix='mmc-lock-')
    bad = [['kvcm.distributed_lock.uri=' + u] for u in ('redis://host', 'redis://', 'redis://host:0', 'zk://h:2181',
                                                         'file://')]
    bad.append(['kvcm.distributed_lock.uri=file://' + os.path.join(tmp, 'lock'),
                'kvcm.leader_elector.loop_interval_ms=1000', 'kvcm.leader_elector.lease_ms=3000'])
    for n, keys in enumerate(bad):
        args = [a for k in keys for a in ('--env', k)]
        what = f'{tag} {" ".join(keys)}'
        failed(checks, f'{what}: --check-config', binary, ['--check-config'] + args, 2)
        failed(checks, f'{what}: start', binary, ['--data-dir', os.path.join(tmp, f'd{n}')] + LOOPBACK_PORTS + args,
               2)
        said = [run_once(a, binary)[1].split(' err=', 1)[-1].strip()
                for a in (['--check-config'] + args, ['--data-dir', os.path.join(tmp, f'd{n}')] + LOOPBACK_PORTS + args)]
        checks.append((f'{what}: the same reason both ways', said[0] == said[1], f'{said}'))
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
        parents_created(checks, binary, tag)
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
