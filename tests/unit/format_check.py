#!/usr/bin/python3
"""Every tracked .c and .h file is formatted as .clang-format says: the style the conventions claim, checked.
The tree is formatted with clang-format 14 (Debian 12's): another major version formats some constructs otherwise,
so the check skips, saying so, rather than fail on a difference of tools. $CLANG_FORMAT picks the binary.
usage: format_check.py SOURCE_ROOT"""
import os
import re
import shutil
import subprocess
import sys

import tap

MAJOR = 14


def skip(why):
    print(f'1..0 # SKIP {why}')
    return 0


def find_clang_format():
    """(path, major version) of the first clang-format found, or (None, None)."""
    for name in (os.environ.get('CLANG_FORMAT'), f'clang-format-{MAJOR}', 'clang-format'):
        path = name and shutil.which(name)
        if path:
            out = subprocess.run([path, '--version'], capture_output=True, text=True).stdout
            m = re.search(r'version (\d+)\.', out)
            return path, int(m.group(1)) if m else None
    return None, None


def tracked_sources(root):
    """The .c and .h files git tracks under root, or None when root is not a git checkout."""
    if not shutil.which('git'):
        return None
    r = subprocess.run(['git', '-C', root, 'ls-files', '-z', '--', '*.c', '*.h'], capture_output=True, text=True)
    if r.returncode:
        return None
    return [f for f in r.stdout.split('\0') if f and os.path.exists(os.path.join(root, f))]


def unformatted(clang_format, root, files):
    """The files clang-format would change, each once."""
    bad = []
    for i in range(0, len(files), 200):
        r = subprocess.run([clang_format, '--dry-run', '--Werror', *files[i:i + 200]], cwd=root,
                           capture_output=True, text=True)
        for line in r.stderr.splitlines():
            m = re.match(r'^(\S+?):\d+:\d+: (?:error|warning): code should be clang-formatted', line)
            if m and m.group(1) not in bad:
                bad.append(m.group(1))
    return bad


def main(root):
    clang_format, major = find_clang_format()
    if not clang_format:
        return skip('clang-format is not installed (apt-get install clang-format)')
    if major != MAJOR:
        return skip(f'{clang_format} is version {major}; the tree is formatted with clang-format {MAJOR}')
    files = tracked_sources(root)
    if files is None:
        return skip('not a git checkout: no list of tracked files')
    bad = unformatted(clang_format, root, files)
    return tap.report([(f'the {len(files)} tracked .c and .h files are clang-formatted', not bad,
                        f'not formatted (clang-format -i them): {" ".join(bad)}')])


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
