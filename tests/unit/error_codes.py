#!/usr/bin/python3
"""The error codes of include/mmc/mmc.h are a tested list: a code the header marks "reserved" is used by no code
path of libmmc, common/ or mmc-metaserver; every other code is used by one; every code has a name in
mmc_strerror()'s table (common/errors.c).
usage: error_codes.py SOURCE_ROOT"""
import os
import re
import sys

import tap


def codes(header):
    out = {}
    for m in re.finditer(r'^#define\s+(MMC_[A-Z_]+)\s+(\(?-?\d+\)?)\s*(?:/\*\*<(.*?)\*/)?', open(header).read(), re.M):
        name, comment = m.group(1), m.group(3) or ''
        if name.startswith(('MMC_COPY_', 'MMC_MEDIA_', 'MMC_VERSION')) or not re.fullmatch(r'\(?-?\d+\)?', m.group(2)):
            continue
        value = int(m.group(2).strip('()'))
        if name != 'MMC_OK' and not -4000 < value < 0:
            continue  # a limit or a size, not a code
        out[name] = 'reserved' in comment.split(':')[0].split('(')[0]
    return out


def sources(root):
    for top in ('lib', 'common', 'metaserver'):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith(('.c', '.h')) and not (top == 'common' and f == 'errors.c'):
                    path = os.path.join(d, f)
                    yield path, re.sub(r'/\*.*?\*/|//[^\n]*', '', open(path).read(), flags=re.S)


def main():
    root = sys.argv[1]
    table = codes(os.path.join(root, 'include/mmc/mmc.h'))
    text = list(sources(root))
    names = open(os.path.join(root, 'common/errors.c')).read()
    checks = [('the header defines error codes', len(table) > 20, sorted(table))]
    for name, reserved in sorted(table.items()):
        users = [p for p, t in text if re.search(r'\b%s\b' % name, t)]
        if name == 'MMC_OK':
            pass
        elif reserved:
            checks.append((f'{name} is reserved: no code path uses it', not users, users))
        else:
            checks.append((f'{name} is returned somewhere', bool(users), 'no use in lib/, common/, metaserver/'))
        checks.append((f'{name} has a name in mmc_strerror', re.search(r'\{%s,' % name, names) is not None, ''))
    return tap.report(checks)


if __name__ == '__main__':
    sys.exit(main())
