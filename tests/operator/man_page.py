"""The man pages say what the programs do: mmc-metaserver(8)'s options, exit codes, signals, ports and the keys of
its refusal to expose a port are those of `mmc-metaserver --help`, its ready line has the fields a real server's
has, and mmc(3) says how libmmc's default log handler (lib/lg.c) writes to standard error.
usage: man_page.py SOURCE_ROOT"""
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
sys.path.insert(0, os.path.dirname(__file__))
from metaserver import BINARY, Server  # noqa: E402
from tap import report  # noqa: E402

ALTERNATING = ('.BR', '.BI', '.IR', '.RB', '.RI', '.IB')


def render(troff):
    """The page's text by section: {NAME: text}, each .TP item on its own line as '* TAG :: body'."""
    sections, name, tag = {}, '', False
    for line in troff.splitlines():
        if line.startswith('.\\"'):
            continue
        if line.startswith('.SH'):
            name = line[3:].strip().strip('"')
            sections[name] = ''
            continue
        macro, _, rest = line.partition(' ') if line.startswith('.') else ('', '', line)
        if macro in ALTERNATING:
            text = ''.join(shlex.split(rest.replace('\\', '\\\\')))
        elif macro in ('.B', '.I'):
            text = ' '.join(shlex.split(rest.replace('\\', '\\\\')))
        elif macro == '.TP':
            text = '\n* '
        elif macro:
            text = '\n'
        else:
            text = rest
        if tag and macro != '.TP':
            text, tag = text + ' ::', False
        tag = tag or macro == '.TP'
        sections[name] = sections.get(name, '') + ' ' + text
    for k, v in sections.items():
        v = re.sub(r'\\f[BIRP]', '', v).replace('\\-', '-').replace('\\\\', '\\')
        sections[k] = re.sub(r'[ \t]+', ' ', v)
    return sections


def items(text):
    """The .TP items of a section as (tag, body)."""
    out = []
    for i in text.split('\n* ')[1:]:
        head, _, body = ' '.join(i.split()).partition(' ::')
        out.append((head, body.strip()))
    return out


def help_facts(text):
    """What --help promises: options, exit codes with their words, signals, ports, the keys of the refusal (in its
    fixed text: the key list after it is generated from the configuration table, which documented-keys checks)."""
    text = text.split('\nKeys (', 1)[0]
    reload_ = re.search(r'SIGHUP reloads (.*?), all or nothing', text, re.S).group(1)
    return {
        'options': re.findall(r'^\s+(-\w), (--[\w-]+)', text, re.M),
        'exits': dict(re.findall(r'(\d) \(([^)]+)\)', text[text.index('A failed start exits'):])),
        'signals': set(re.findall(r'\bSIG[A-Z0-9]+', text)),
        'reloads': [re.sub(r'^the ', '', p) for p in re.split(r',\s*|\s+and\s+', ' '.join(reload_.split()))],
        'ports': set(re.findall(r':(\d{4})\b', text[text.index('With no options'):])),
        'keys': set(re.findall(r'\b(?:ock\.mmc|kvcm)\.[\w.]*\w', text[text.index('A non-loopback'):])),
    }


def option_checks(facts, man):
    opts = man.get('OPTIONS', '')
    listed = set(re.findall(r'(?<![\w-])(--?[a-zA-Z][\w-]*)', ' '.join(t for t, _ in items(opts))))
    promised = {o for pair in facts['options'] for o in pair}
    return [('every option of --help is in OPTIONS, with its short form', not promised - listed,
             promised - listed),
            ('OPTIONS lists no option --help does not have', not listed - promised, listed - promised)]


def exit_checks(facts, man):
    got = {t: b for t, b in items(man.get('EXIT STATUS', ''))}
    wrong = [f'{code} ({word}): {got.get(code)}' for code, word in facts['exits'].items()
             if word.lower() not in (got.get(code) or '').lower()]
    return [('EXIT STATUS gives every exit code of --help with its meaning', not wrong, wrong),
            ('and no code --help does not know but 0', set(got) <= set(facts['exits']) | {'0'}, sorted(got))]


def signal_checks(facts, man):
    sig = {s: body for tag, body in items(man.get('SIGNALS', '')) for s in re.findall(r'SIG[A-Z0-9]+', tag)}
    hup = sig.get('SIGHUP', '')
    return [('SIGNALS has every signal of --help', facts['signals'] <= set(sig), facts['signals'] - set(sig)),
            ('and none it lacks but SIGKILL', set(sig) <= facts['signals'] | {'SIGKILL'}, set(sig)),
            ('SIGHUP reloads what --help says', all(r in hup for r in facts['reloads']), (facts['reloads'], hup)),
            ('SIGUSR1 reopens the log file', 'log file' in sig.get('SIGUSR1', ''), sig.get('SIGUSR1'))]


def port_checks(facts, man):
    desc = man.get('DESCRIPTION', '')
    ports = set(re.findall(r':(\d{4})\b', desc))
    keys = set(re.findall(r'\b(?:ock\.mmc|kvcm)\.[\w.]*\w', desc))
    return [('DESCRIPTION names the ports --help names', ports == facts['ports'], (ports, facts['ports'])),
            ('and the keys of the refusal of an exposed port', facts['keys'] <= keys, facts['keys'] - keys)]


def ready_check(man):
    m = re.search(r'mmc-metaserver ready (.*?)(\[role=standby\]|\n)', man.get('DESCRIPTION', ''), re.S)
    said = re.findall(r'(\w+)=', m.group(1)) if m else []
    with Server() as s:
        real = re.findall(r'(\w+)=', s.ready)
    return ('the ready line in DESCRIPTION has the fields of a real server\'s', said == real, (said, real))


def libmmc_check(root):
    log_c = open(os.path.join(root, 'lib', 'lg.c')).read()
    fmt = re.search(r'fprintf\(stderr, "(\w+) %s: %s', log_c)
    floor = re.search(r'if \(level >= MMC_LOG_(\w+)\)\s*fprintf\(stderr', log_c)
    page = ' '.join(render(open(os.path.join(root, 'man', 'mmc.3')).read()).get('LOGGING', '').split())
    levels = ['warn', 'error'] if floor and floor.group(1) == 'WARN' else []
    ok = fmt and levels and 'never writes' not in page and 'standard error' in page and all(
        f'{fmt.group(1)} {lv}:' in page for lv in levels)
    return ('mmc(3) says the default handler writes warnings and errors to standard error as lib/lg.c does',
            bool(ok), page)


def main():
    root = sys.argv[1]
    text = subprocess.run([BINARY, '--help'], capture_output=True, text=True, check=True).stdout
    facts = help_facts(text)
    man = render(open(os.path.join(root, 'man', 'mmc-metaserver.8')).read())
    checks = option_checks(facts, man) + exit_checks(facts, man) + signal_checks(facts, man) + \
        port_checks(facts, man) + [ready_check(man), libmmc_check(root)]
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
