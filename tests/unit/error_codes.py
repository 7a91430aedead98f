#!/usr/bin/python3
"""The error codes are one list, MMC_ERRNO_MAP in include/mmc/mmc.h, and a tested one: a code the list marks
"reserved" is used by no code path of libmmc, common/ or mmc-metaserver; every other code is used by one; and
docs/api.md's "Errors you will see" documents each code with its value (the table) or names it as reserved or wire
only, and names no code the list lacks.
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


def documented(api_md):
    """docs/api.md's errors section: ({name: value} of its table, the names its reserved list gives, every MMC_ name
    the section mentions)."""
    text = open(api_md).read()
    section = re.search(r'^## Errors you will see\n(.*?)(?=^## )', text, re.S | re.M).group(1)
    rows = {n: int(v) for n, v in re.findall(r'^\| `(MMC_[A-Z_]+)` \((-?\d+)\) \|', section, re.M)}
    reserved = re.search(r'are \*reserved\*[^(]*\(([^)]*)\)', section)
    names = set(re.findall(r'`(MMC_[A-Z_]+)`', reserved.group(1))) if reserved else set()
    return rows, names, set(re.findall(r'\bMMC_[A-Z_]+\b', section)) - {'MMC_ERRNO_MAP'}


def doc_checks(table, api_md):
    rows, reserved_doc, mentioned = documented(api_md)
    values = {n: v for n, v, _, _ in table}
    reserved = {n for n, _, _, when in table if when.startswith('reserved')}
    checks = [
        ('docs/api.md has an error table', len(rows) > 10, sorted(rows)),
        ('docs/api.md lists exactly the reserved codes', reserved_doc == reserved, sorted(reserved_doc ^ reserved)),
        ('docs/api.md names no code the list lacks', mentioned <= set(values), sorted(mentioned - set(values))),
    ]
    for name, value in rows.items():
        checks.append((f'docs/api.md gives {name} its value', values.get(name) == value, f'{value} vs {values.get(name)}'))
    for name, _, _, when in table:
        if name in reserved or name == 'MMC_OK':
            continue
        # a wire-only code is never returned: named in the prose; every other one has its row
        ok = name in mentioned if when.startswith('wire only') else name in rows
        checks.append((f'docs/api.md documents {name}', ok, 'not in "Errors you will see"'))
    return checks


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
    checks += doc_checks(table, os.path.join(root, 'docs/api.md'))
    return tap.report(checks)


if __name__ == '__main__':
    sys.exit(main())
