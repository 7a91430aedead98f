#!/usr/bin/python3
"""The exported surface is a tested list: the functions include/mmc/mmc.h declares MMC_API, the version script's
global list and the dynamic symbols libmmc.so.0 defines must be the same three sets.
usage: exported_symbols.py HEADER MAPFILE LIBRARY"""
import re
import subprocess
import sys

import tap


def declared(header):
    text = open(header).read()
    return set(re.findall(r'MMC_API[^;(]*?\b(mmc_\w+)\s*\(', text))


def listed(mapfile):
    text = re.sub(r'/\*.*?\*/', '', open(mapfile).read(), flags=re.S)
    glob = re.search(r'global:(.*?)local:', text, re.S)
    names = set(re.findall(r'([A-Za-z_]\w*)\s*;', glob.group(1))) if glob else set()
    if any('*' in n for n in re.findall(r'(\S+)\s*;', glob.group(1) if glob else '')):
        names.add('<wildcard>')
    return names


def exported(library):
    out = subprocess.run(['nm', '-D', '--defined-only', library], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'TtWwDdBbRr':
            names.add(parts[2].split('@')[0])
    names.discard('MMC_0')
    return names


def main():
    header, mapfile, library = sys.argv[1:4]
    d, m, e = declared(header), listed(mapfile), exported(library)
    checks = [
        ('the header declares functions', len(d) > 0, sorted(d)),
        ('the version script lists exactly the header\'s functions', m == d, sorted(m ^ d)),
        ('the library exports exactly the header\'s functions', e == d, sorted(e ^ d)),
        ('every export is mmc_*', all(n.startswith('mmc_') for n in e), sorted(n for n in e if not n.startswith('mmc_'))),
    ]
    return tap.report(checks)


if __name__ == '__main__':
    sys.exit(main())
