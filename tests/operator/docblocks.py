"""docs/operations.md's shell blocks, run as an operator would type them, but under a root prefix: every absolute
path under /etc, /var, /run, /srv or /backup becomes ROOT/etc/..., so the blocks run (as root or not) without
touching the machine. Commands that act on the machine (systemctl, podman, kubectl) are stubs that log their
argument lists; mmc-metaserver is the real binary with --check-config added, unless a test puts its own first on
PATH."""
import os
import re
import shlex
import shutil
import subprocess

DOC = os.path.join(os.path.dirname(__file__), '..', '..', 'docs', 'operations.md')
# an absolute path that starts a word (or follows file://, a redirect, a quote, an =, a colon in PATH-like lists)
ABSOLUTE = re.compile(r'(^|[\s"\'=(<>]|file://)(/(?:etc|var|run|srv|backup)(?=/|\s|$|["\')]))', re.M)
STUB = '#!/bin/sh\nprintf "%s\\n" "$(basename "$0") $*" >> "$DOCBLOCKS_LOG"\n'
CHECK_ONLY = '#!/bin/sh\nprintf "%s\\n" "mmc-metaserver $*" >> "$DOCBLOCKS_LOG"\nexec "$MMC_METASERVER" "$@" ' \
             '--check-config\n'


def section(heading, doc=DOC):
    """The text under a Markdown heading (its exact title), up to the next heading of the same or a higher level."""
    lines = open(doc, encoding='utf-8').read().split('\n')
    out, level, in_code = None, 0, False
    for line in lines:
        if line.startswith('```'):
            in_code = not in_code
        m = None if in_code else re.match(r'(#+)\s+(.*)', line)
        if out is not None and m and len(m.group(1)) <= level:
            break
        if out is not None:
            out.append(line)
        elif m and m.group(2).strip() == heading:
            out, level = [], len(m.group(1))
    if out is None:
        raise KeyError(f'no heading "{heading}" in {doc}')
    return '\n'.join(out)


def sh_blocks_at(text):
    """(line of its first body line, body) for each ```sh block of text, in order."""
    return [(text.count('\n', 0, m.start(1)) + 1, m.group(1))
            for m in re.finditer(r'^```sh\n(.*?)^```', text, re.S | re.M)]


def sh_blocks(text):
    """The bodies of the ```sh blocks of text, in order."""
    return [body for _, body in sh_blocks_at(text)]


def rooted(text, root):
    """text with every absolute path under /etc, /var, /run, /srv and /backup moved under root."""
    return ABSOLUTE.sub(lambda m: m.group(1) + root + m.group(2), text)


def stubs(bindir, with_server=True):
    """Writes the stub commands into bindir; with_server adds mmc-metaserver as a --check-config run."""
    os.makedirs(bindir, exist_ok=True)
    tools = {n: STUB for n in ('systemctl', 'podman', 'kubectl')}
    if with_server:
        tools['mmc-metaserver'] = CHECK_ONLY
    for name, text in tools.items():
        path = os.path.join(bindir, name)
        with open(path, 'w') as f:
            f.write(text)
        os.chmod(path, 0o755)


# what a fresh Debian host has (and the doc's steps may take for granted); /etc/mmc and /etc/credstore it has not
SKELETON = ('etc/default', 'etc/systemd/system', 'var/lib', 'var/log', 'run', 'srv')


def run(blocks, root, cwd, bindir, env=None, timeout=120):
    """Runs the blocks, rooted, as one bash script with -eu -o pipefail in cwd, bindir first on PATH, on a root
    that has what SKELETON names. Returns (returncode, output, the stub log's lines)."""
    for d in SKELETON:
        os.makedirs(os.path.join(root, d), mode=0o755, exist_ok=True)
    log = os.path.join(root, 'docblocks.log')
    script = os.path.join(root, 'docblocks.sh')
    with open(script, 'w') as f:
        f.write('set -eu -o pipefail\n' + '\n'.join(rooted(b, root) for b in blocks))
    e = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get('PATH', ''), DOCBLOCKS_LOG=log, **(env or {}))
    p = subprocess.run(['bash', script], cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout)
    calls = open(log).read().splitlines() if os.path.exists(log) else []
    return p.returncode, p.stdout + p.stderr, calls


def certificate(cwd):
    """meta.pem and meta.key (self-signed, for 127.0.0.1) and ca.pem, as the doc's blocks expect them after
    Security's "TLS" recipe."""
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
                    '-keyout', 'meta.key', '-out', 'meta.pem', '-days', '2', '-subj', '/CN=meta', '-addext',
                    'subjectAltName=IP:127.0.0.1'], cwd=cwd, check=True, capture_output=True)
    shutil.copy(os.path.join(cwd, 'meta.pem'), os.path.join(cwd, 'ca.pem'))


def mode(path):
    return os.stat(path).st_mode & 0o7777


def words(line):
    return shlex.split(line)
