#!/usr/bin/env python3
"""Every mmc-bench command line the docs print is one the built mmc-bench takes, and every mmc-metaserver command
line outside docs/operations.md (whose blocks the operator suite runs under a root prefix) one the server takes.

A benchmark run takes minutes to hours, so the tests cannot run the docs' benchmark commands; what they can prove
is that each command line, as printed, is accepted: the subcommand exists, every flag is known and every value is
valid. Each is run with --check appended (mmc-bench validates its options and runs nothing); `mmc-bench --help`
runs as printed. The lines come from
the shell blocks of README.md and docs/*.md (a `for ... do CMD; done` line gives CMD; a redirect or a comment ends
it) and from inline code spans. Spans with a placeholder (N, B, <x>, a|b) and the internal subcommands (target,
rma-target, meta-client) are skipped; environment assignments before the binary do not change how flags parse and
are dropped. A server command line runs with --check-config: every check a start makes short of binding a port or
opening the metadata store. usage: doc_bench_commands.py SOURCE_ROOT MMC_BENCH MMC_METASERVER
"""
import concurrent.futures
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'operator'))
import docblocks  # noqa: E402
from tap import report  # noqa: E402

INTERNAL = {'target', 'rma-target', 'meta-client'}
# the binary (any build dir, or bare) and what follows it, up to a redirect, a pipe, a ; or a comment
COMMAND = re.compile(r'(?:^|[\s;`])(?:[\w./-]*/)?mmc-bench((?:\s+[^\s>|;#`]+)*)')
SERVER = re.compile(r'(?:^|[\s;`])(?:[\w./-]*/)?mmc-metaserver((?:\s+[^\s>|;#`]+)+)')
PLACEHOLDER = re.compile(r'^[A-Z]$|[<>|]|\.\.\.')


def blocks_and_spans(path):
    """(line, text, from_block) for each shell block line and each inline code span of the file."""
    text = open(path, encoding='utf-8').read()
    out = []
    for first, body in docblocks.sh_blocks_at(text):
        body = body.replace('\\\n', ' \n')  # a continued line is one command
        for i, line in enumerate(body.split('\n')):
            out.append((first + i, line, True))
    prose = re.sub(r'^```.*?^```', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S | re.M)
    for m in re.finditer(r'`([^`]+)`', prose, re.S):
        out.append((prose.count('\n', 0, m.start()) + 1, m.group(1).replace('\n', ' '), False))
    return out


def commands(root, pattern=COMMAND, skip=()):
    """(where, argv after the binary) for each command line of pattern's binary the docs print."""
    found = []
    for path in sorted(glob.glob(os.path.join(root, 'docs', '*.md'))) + [os.path.join(root, 'README.md')]:
        rel = os.path.relpath(path, root)
        if rel in skip:
            continue
        for line, text, from_block in blocks_and_spans(path):
            for m in pattern.finditer(text):
                args = shlex.split(m.group(1))
                if not args or args[0] in INTERNAL:
                    continue
                if not from_block and any(PLACEHOLDER.search(a) for a in args):
                    continue
                found.append((f'{rel}:{line}', args))
    return found


def bench_check(bench, where, args):
    """One check: the command line as printed, with --check (mmc-bench --help runs as printed)."""
    if args[0].startswith('-'):
        r = subprocess.run([bench] + args, capture_output=True, text=True, timeout=60)
        ok = r.returncode == 0 and 'usage:' in r.stdout
    else:
        r = subprocess.run([bench] + args + ['--check'], capture_output=True, text=True, timeout=60)
        ok = r.returncode == 0 and '# options ok' in r.stdout
    detail = f'exit {r.returncode}: {(r.stderr or r.stdout).strip()[-300:]}'
    return (f'{where}: mmc-bench {" ".join(args)}', ok, detail)


def main():
    root, bench, server = sys.argv[1], sys.argv[2], sys.argv[3]
    found = commands(root)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:  # each is a process start: run a few at once
        checks = list(pool.map(lambda f: bench_check(bench, *f), found))
    for where, args in commands(root, SERVER, skip=('docs/operations.md',)):
        if not args[0].startswith('-'):
            continue  # the name in prose ("mmc-metaserver ready"), not a command line
        with tempfile.TemporaryDirectory() as tmp:
            # a --data-dir the doc names under /tmp is made fresh, as the doc's reader would have it
            args = [os.path.join(tmp, os.path.basename(a)) if a.startswith('/tmp/') else a for a in args]
            r = subprocess.run([server] + args + ['--check-config'], capture_output=True, text=True, timeout=60)
        checks.append((f'{where}: mmc-metaserver {" ".join(args)[:80]}', r.returncode == 0,
                       f'exit {r.returncode}: {r.stderr.strip()[-300:]}'))
    # the check itself must be able to fail: a flag no benchmark has is refused
    r = subprocess.run([bench, 'meta', '--no-such-flag', '--check'], capture_output=True, text=True, timeout=60)
    checks.append(('mmc-bench refuses an unknown flag under --check', r.returncode != 0, f'exit {r.returncode}'))
    checks.append(('the docs print mmc-bench commands', len(found) >= 20, f'{len(found)} found'))
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
