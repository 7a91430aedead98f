#!/usr/bin/python3
"""The configuration documentation, tested as code. Every key docs/configuration.md and docs/kvcm.md list is parsed
with its documented default through the real parsers (client keys from a config file into mmc_setup(), server and
kvcm keys through the server's config loader, and all of them at once through `mmc-metaserver --check-config`), and
must give the built-in default; every key the code knows must be documented. Fails on a key documented but unknown,
known but undocumented, or documented with a default that is not the code's. The server's one table (ock.mmc.* and
kvcm.* rows) is held to `mmc-metaserver --help` the same way (every row listed, with a default that parses to the
built-in one and its SIGHUP mark), and to the keys configuration.md says SIGHUP changes.
usage: documented_keys.py SOURCE_ROOT CONF_PROBE METASERVER"""
import os
import re
import subprocess
import sys
import tempfile

import tap


def sections(path):
    """{'## heading': text} of a markdown file."""
    out, name = {}, None
    for line in open(path).read().splitlines(keepends=True):
        if line.startswith('## '):
            name = line.strip()
            out[name] = ''
        elif name:
            out[name] += line
    return out


def section(path, prefix):
    found = [t for h, t in sections(path).items() if h.startswith(prefix)]
    if len(found) != 1:
        sys.exit(f'Bail out! {path}: no single section "{prefix}"')
    return found[0]


def default_value(cell):
    """The text to set a key to for its documented default: a literal (backticks optional), `empty` for the empty
    string, and a description in parentheses, a computed default the key stores as empty."""
    cell = cell.strip()
    if cell.startswith('`') and cell.endswith('`'):
        return cell[1:-1]
    if cell == 'empty' or (cell.startswith('(') and cell.endswith(')')):
        return ''
    return cell


def table_keys(text, prefix):
    """[(key, default or None)] from the rows of the markdown tables in text whose first cell names prefix keys. A
    row naming several keys, or with the default `–`, documents keys accepted without a default."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if not line.startswith('|') or len(cells) < 3 or not cells[0].startswith('`' + prefix):
            continue
        keys = re.findall(r'`(%s[^`]*)`' % re.escape(prefix), cells[0])
        default_cell = cells[2] if prefix == 'ock.mmc.' and len(cells) == 4 else cells[1]
        if len(keys) > 1 or default_cell in ('–', '-'):
            rows += [(k, None) for k in keys]
        else:
            rows.append((keys[0], default_value(default_cell)))
    return rows


def compat_keys(text):
    """The keys of the paragraph that starts "Accepted for compatibility" (patterns end in .*)."""
    m = re.search(r'^Accepted for compatibility.*?(?:\n\n|\Z)', text, re.S | re.M)
    return re.findall(r'`(ock\.mmc\.[^`]*)`', m.group(0)) if m else []


def covered(key, documented):
    return any(key == d or (d.endswith('.*') and key.startswith(d[:-1])) for d in documented)


def help_keys(server):
    """{key: (default as a file would write it, SIGHUP mark)} from the key lines of `mmc-metaserver --help`."""
    text = subprocess.run([server, '--help'], check=True, capture_output=True, text=True).stdout
    out = {}
    for line in text.split('\nKeys ', 1)[-1].splitlines()[1:]:
        m = re.match(r'  (\S+)  .*  default (.*?)(  SIGHUP)?$', line)
        if not m:
            sys.exit(f'Bail out! --help: not a key line: {line!r}')
        value = m.group(2)
        out[m.group(1)] = ('' if value == 'empty' else value, m.group(3) is not None)
    return out


def sighup_keys(text):
    """The keys of the paragraph that starts "`SIGHUP` re-reads" (those a reload applies)."""
    m = re.search(r'^`SIGHUP` re-reads.*?(?:\n\n|\Z)', text, re.S | re.M)
    if not m:
        sys.exit('Bail out! configuration.md: no paragraph starting "`SIGHUP` re-reads"')
    applies = m.group(0).split('applies', 1)[-1].split('. ', 1)[0]
    return set(re.findall(r'`((?:ock\.mmc|kvcm)\.[^`]*)`', applies))


def main():
    root, probe, server = sys.argv[1:4]
    conf_md, kvcm_md = os.path.join(root, 'docs/configuration.md'), os.path.join(root, 'docs/kvcm.md')
    client_text = section(conf_md, '## libmmc')
    server_text = section(conf_md, '## mmc-metaserver')
    docs = {
        'client': table_keys(client_text, 'ock.mmc.'),
        'server': table_keys(server_text, 'ock.mmc.') + table_keys(section(kvcm_md, '## Configuration keys'), 'kvcm.'),
    }
    compat = {'client': compat_keys(client_text), 'server': compat_keys(server_text)}

    def run(*args):
        return subprocess.run([probe, *args], check=True, capture_output=True, text=True).stdout

    known = {side: run('list', side).split() for side in ('client', 'server')}
    known_compat = {side: run('list', side + '-compat').split() for side in ('client', 'server')}
    reloadable = set(run('list', 'server-reloadable').split())
    listed = help_keys(server)
    # one probe run checks every key, each in its own child
    asks = [('server', key, value, 'help') for key, (value, _) in listed.items()]
    for side in ('client', 'server'):
        asks += [(side, key, value, 'default') for key, value in docs[side]]
        asks += [(side, key[:-1] + 'enable' if key.endswith('.*') else key, 'true', 'compat:' + key)
                 for key in compat[side]]
    answers = subprocess.run([probe, 'check'], check=True, capture_output=True, text=True,
                             input=''.join(f'{s}\t{k}\t{v if v is not None else "0"}\n' for s, k, v, _ in asks))
    answers = answers.stdout.splitlines()
    if len(answers) != len(asks):
        sys.exit(f'Bail out! conf-probe answered {len(answers)} of {len(asks)} checks')
    checks = []
    for (side, key, value, kind), out in zip(asks, answers):
        if kind == 'help':
            checks.append((f'--help shows {key} with its default "{value}"', out == 'ok', out))
        elif kind.startswith('compat:'):
            checks.append((f'{side} compatibility key {kind[7:]} is known', not out.startswith('unknown'), out))
        elif value is None:
            checks.append((f'{side} key {key} is known', not out.startswith('unknown'), out))
        else:
            checks.append((f'{side} key {key} = "{value}" is known and the default', out == 'ok', out))
    for side in ('client', 'server'):
        where = 'docs/kvcm.md or docs/configuration.md' if side == 'server' else 'docs/configuration.md'
        documented = [k for k, _ in docs[side]]
        checks.append((f'{side}: the docs list keys', len(documented) > 10, ''))
        for key in known[side]:
            checks.append((f'{side} key {key} is documented in {where}', key in documented, 'undocumented'))
        for key in known_compat[side]:
            checks.append((f'{side} compatibility key {key} is documented', covered(key, compat[side]),
                           'not in the "Accepted for compatibility" list'))
    for key in known['server']:
        checks.append((f'--help lists {key}', key in listed, 'missing from mmc-metaserver --help'))
        checks.append((f'--help marks {key} as SIGHUP exactly when a reload changes it',
                       key not in listed or listed[key][1] == (key in reloadable), f'{listed.get(key)}'))
    said = sighup_keys(server_text)
    checks.append(('configuration.md names the keys SIGHUP changes', len(said) > 5, ''))
    for key in sorted(reloadable | said):
        checks.append((f'configuration.md says SIGHUP changes {key} exactly when it does',
                       (key in reloadable) == (key in said), 'reloadable' if key in reloadable else 'not reloadable'))
    # every documented server key at its default, through the real binary's --config and --check-config
    with tempfile.NamedTemporaryFile('w', suffix='.conf') as f:
        f.write(''.join(f'{k} = {v}\n' for k, v in docs['server'] if v is not None))
        f.flush()
        r = subprocess.run([server, '--check-config', '--config', f.name], capture_output=True, text=True)
        checks.append(('mmc-metaserver --check-config accepts every documented default', r.returncode == 0,
                       r.stderr.strip()))
    r = subprocess.run([server, '--check-config', '--env', 'ock.mmc.no_such_key=1'], capture_output=True, text=True)
    checks.append(('mmc-metaserver --check-config refuses an unknown key', r.returncode == 2 and
                   'ock.mmc.no_such_key' in r.stderr, r.stderr.strip()))

    return tap.report(checks)


if __name__ == '__main__':
    sys.exit(main())
