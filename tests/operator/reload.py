"""SIGHUP re-reads the file (and the command line, which still wins) and applies it whole or not at all: an invalid
pair or a bad value is rejected with a warning naming the key, and the running values stay."""
import os
import signal
import sys

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


def main():
    checks = []
    conf = os.path.join(os.environ.get('TMPDIR', '/tmp'), f'mmc-reload-{os.getpid()}.conf')
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
        checks.append(('the server is still running', s.proc.poll() is None, s.stderr()))
    checks.append(('it stops cleanly', s.proc.returncode == 0, f'rc={s.proc.returncode}'))
    os.unlink(conf)
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
