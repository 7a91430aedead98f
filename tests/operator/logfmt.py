"""A strict logfmt parser for mmc-metaserver's lines: `TIMESTAMP LEVEL key=value ...`, where a value is bare (no
space, `"`, `=` or `\\`) or quoted with `\\"`, `\\\\`, `\\n`, `\\r`, `\\t` and `\\xNN` escapes."""
import re

HEAD = re.compile(r'(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (debug|info|warn|error) +')
KEY = re.compile(r'[A-Za-z_][A-Za-z0-9_.]*')
ESCAPES = {'"': '"', '\\': '\\', 'n': '\n', 'r': '\r', 't': '\t'}


def parse_value(s, i):
    if s[i:i + 1] != '"':
        j = i
        while j < len(s) and s[j] not in ' "=\\':
            j += 1
        if j < len(s) and s[j] != ' ':
            raise ValueError(f'bad bare value at {i}: {s[i:j + 1]!r}')
        return s[i:j], j
    out, j = [], i + 1
    while j < len(s) and s[j] != '"':
        if s[j] == '\\':
            e = s[j + 1:j + 2]
            if e == 'x' and re.fullmatch(r'[0-9a-f]{2}', s[j + 2:j + 4]):
                out.append(chr(int(s[j + 2:j + 4], 16)))
                j += 4
                continue
            if e not in ESCAPES:
                raise ValueError(f'bad escape at {j}')
            out.append(ESCAPES[e])
            j += 2
            continue
        out.append(s[j])
        j += 1
    if j >= len(s):
        raise ValueError('unterminated quoted value')
    if j + 1 < len(s) and s[j + 1] != ' ':
        raise ValueError(f'text after a quoted value at {j + 1}')
    return ''.join(out), j + 1


def parse(line):
    """Returns (level, {key: value}); raises ValueError on anything that is not strict logfmt."""
    line = line.rstrip('\n')
    m = HEAD.match(line)
    if not m:
        raise ValueError('no timestamp and level')
    fields, i = {}, m.end()
    while i < len(line):
        k = KEY.match(line, i)
        if not k or line[k.end():k.end() + 1] != '=':
            raise ValueError(f'no key=value at {i}: {line[i:i + 40]!r}')
        fields[k.group()], i = parse_value(line, k.end() + 1)
        while i < len(line) and line[i] == ' ':
            i += 1
    return m.group(2), fields
