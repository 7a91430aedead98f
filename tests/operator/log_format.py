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


def log_file_reloaded(checks):
    """A SIGHUP whose file is refused still reopens the log (logrotate sends it whatever the file says); one whose
    file no longer names a log file sends the log back to stderr."""
    tmp = tempfile.mkdtemp(prefix='mmc-logreload-')
    log, conf = os.path.join(tmp, 'mmc.log'), os.path.join(tmp, 'mmc.conf')

    def write(text):
        with open(conf, 'w') as f:
            f.write(text)

    write(f'ock.mmc.log_path = {log}\n')
    with Server(['--config', conf], workdir=tmp) as s:
        checks.append(('a config file\'s log_path is used', s.wait_log(r'op=start ', log) is not None, s.stderr()))
        os.rename(log, log + '.1')
        write(f'ock.mmc.log_path = {log}\nock.mmc.evict_threshold_high = 10\nock.mmc.evict_threshold_low = 20\n')
        s.signal(signal.SIGHUP)
        checks.append(('a refused reload still reopens the log under its name',
                       s.wait_log(r'result=rejected', log) is not None, f'exists={os.path.exists(log)}'))
        write('')
        s.signal(signal.SIGHUP)
        checks.append(('a reload that clears log_path sends the log to stderr',
                       s.wait_log(r'op=reload result=applied') is not None, s.stderr()))
        with open(log) as f:
            said = f.read()
        checks.append(('and says so in the file it leaves', 'value=stderr' in said, said))


def main():
    checks = []
    hostile_values(checks)
    log_file(checks)
    log_file_reloaded(checks)
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
