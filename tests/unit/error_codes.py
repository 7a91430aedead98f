#!/usr/bin/python3
"""The error codes are one list, MMC_ERRNO_MAP in include/mmc/mmc.h, and a tested one: a code the list marks
"reserved" is used by no code path of libmmc, common/ or mmc-metaserver; every other code is used by one.
usage: error_codes.py SOURCE_ROOT"""
import os
import re
import sys

import tap


def error_map(header):
    """MMC_ERRNO_MAP as [(name, value, text, when)], in its order."""
    text = open(header).read()
    block = re.search(r'#define MMC_ERRNO_MAP\(XX\)((?:[^\n]*\\\n)*[^\n]*\n)', text).group(1)
    entry = r'XX\((MMC_[A-Z_]+),\s*(-?\d+),\s*"((?:[^"\\]|\\.)*)",\s*"((?:[^"\\]|\\.)*)"\)'
    return [(n, int(v), t, w) for n, v, t, w in re.findall(entry, block.replace('\\\n', ' '))]


def sources(root):
    for top in ('lib', 'common', 'metaserver'):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith(('.c', '.h')):
                    path = os.path.join(d, f)
                    yield path, re.sub(r'/\*.*?\*/|//[^\n]*', '', open(path).read(), flags=re.S)


def main():
    root = sys.argv[1]
    table = error_map(os.path.join(root, 'include/mmc/mmc.h'))
    text = list(sources(root))
    checks = [('MMC_ERRNO_MAP lists the error codes', len(table) > 20, table)]
    for name, _, _, when in table:
        users = [p for p, t in text if re.search(r'\b%s\b' % name, t)]
        if name == 'MMC_OK':
            continue
        if when.startswith('reserved'):
            checks.append((f'{name} is reserved: no code path uses it', not users, users))
        else:
            checks.append((f'{name} is returned somewhere', bool(users), 'no use in lib/, common/, metaserver/'))
    return tap.report(checks)


if __name__ == '__main__':
    sys.exit(main())
