"""The docs stand on their own: in README.md, CHANGELOG.md, docs/ and deploy/, every relative link and every
`path/in/the/repo` in backticks names a file or directory of the repository (and a link's #anchor a heading of
its page), and nothing points at notes outside it (a shared reference folder, a seed file, an absolute path of the
development machine)."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
from tap import report  # noqa: E402

ROOT = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..'))
LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)\)')
CODE = re.compile(r'`([^`\s]+)`')
OUTSIDE = re.compile(r'(\.\./)+shared\b|\bshared/(reference|seeds)\b|/work/|\b\d{3}_[0-9a-f]{16}\b|\bseeds/')
TOP = ('bench/', 'common/', 'deploy/', 'docs/', 'examples/', 'include/', 'lib/', 'metaserver/', 'python/',
       'tests/', '.ci/')


def pages():
    out = [os.path.join(ROOT, n) for n in ('README.md', 'CHANGELOG.md')]
    for d in ('docs', 'deploy'):
        for base, _, files in os.walk(os.path.join(ROOT, d)):
            out += [os.path.join(base, f) for f in files if f.endswith('.md')]
    return sorted(p for p in out if os.path.exists(p))


def anchors(path):
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes."""
    out = set()
    in_code = False
    for line in open(path, encoding='utf-8'):
        if line.startswith('```'):
            in_code = not in_code
        m = re.match(r'#+\s+(.*)', line)
        if m and not in_code:
            out.add(re.sub(r'[^\w\- ]', '', m.group(1).strip().lower()).replace(' ', '-'))
    return out


def check_link(page, target):
    if re.match(r'[a-z]+:', target):
        return None
    path, _, anchor = target.partition('#')
    dest = os.path.realpath(os.path.join(os.path.dirname(page), path)) if path else page
    if not (dest == ROOT or dest.startswith(ROOT + os.sep)):
        return f'points outside the repository: {target}'
    if not os.path.exists(dest):
        return f'no such file: {target}'
    if anchor and dest.endswith('.md') and anchor not in anchors(dest):
        return f'no heading for #{anchor} in {os.path.relpath(dest, ROOT)}'
    return None


def check_code(token):
    token = token.rstrip('.,:;)')
    if not token.startswith(TOP) or any(c in token for c in '*<>{}$|') or '...' in token:
        return None
    path = token.split(':')[0]
    return None if os.path.exists(os.path.join(ROOT, path)) else f'names a path that does not exist: {token}'


def main():
    checks = []
    for page in pages():
        rel = os.path.relpath(page, ROOT)
        problems = []
        for n, line in enumerate(open(page, encoding='utf-8'), 1):
            for target in LINK.findall(line):
                err = check_link(page, target)
                if err:
                    problems.append(f'{rel}:{n}: {err}')
            for token in CODE.findall(line):
                err = check_code(token)
                if err:
                    problems.append(f'{rel}:{n}: {err}')
            if OUTSIDE.search(line):
                problems.append(f'{rel}:{n}: points at notes outside the repository: {line.strip()[:120]}')
        checks.append((f'{rel} stands on its own', not problems, '\n# '.join(problems)))
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
