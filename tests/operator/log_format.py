"""mmc-metaserver's log is strict logfmt whatever a value holds (quotes, spaces, `=`, backslashes), and with
ock.mmc.log_path it goes to a file that SIGUSR1 and SIGHUP reopen under its name (logrotate without copytruncate)."""
import os
import signal
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
from tap import report  # noqa: E402
from logfmt import parse  # noqa: E402
from metaserver import LOOPBACK_PORTS, Server, run_once  # noqa: E402


def all_parse(text):
    bad = []
    for line in text.splitlines():
        try:
            parse(line)
        except ValueError as e:
            bad.append(f'{e}: {line}')
    return bad


def field(text, op, key):
    for line in text.splitlines():
        f = parse(line)[1]
        if f.get('op') == op and key in f:
            return f[key]
    return None


def hostile_values(checks):
    tmp = tempfile.mkdtemp(prefix='mmc-logfmt-')
    data = os.path.join(tmp, 'd "1" k=v \\x')
    with Server(['--data-dir', data], workdir=tmp) as s:
        rc, err = run_once(['--data-dir', data] + LOOPBACK_PORTS)
    text = s.stderr() + err
    checks.append(('every line is strict logfmt', not all_parse(text), '\n'.join(all_parse(text))))
    checks.append(('data_dir holds the whole name', field(text, 'start', 'data_dir') == data, text))
    e = field(text, 'start', 'err') or ''
    checks.append(('err holds the whole message', f'"{data}" is in use' in e, f'{e!r}'))


def log_file(checks):
    tmp = tempfile.mkdtemp(prefix='mmc-logfile-')
    log = os.path.join(tmp, 'mmc.log')
    with Server(['--env', f'ock.mmc.log_path={log}'], workdir=tmp) as s:
        checks.append(('lines go to ock.mmc.log_path', s.wait_log(r'op=start ', log) is not None, s.stderr()))
        checks.append(('and not to stderr', 'op=start ' not in s.stderr(), s.stderr()))
        os.rename(log, log + '.1')
        s.signal(signal.SIGUSR1)
        checks.append(('SIGUSR1 reopens the file under its name', s.wait_log(r'op=log_reopen', log) is not None,
                       f'exists={os.path.exists(log)}'))
        os.rename(log, log + '.2')
        s.signal(signal.SIGHUP)
        checks.append(('SIGHUP reopens it too', s.wait_log(r'op=reload', log) is not None,
                       f'exists={os.path.exists(log)}'))
    with open(log) as f:
        rest = f.read()
    checks.append(('the last lines land in the new file', 'op=exit ' in rest, rest))
    with open(log + '.1') as f:
        first = f.read()
    checks.append(('the moved file keeps what was written before', 'op=start ' in first, first))


def main():
    checks = []
    hostile_values(checks)
    log_file(checks)
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
