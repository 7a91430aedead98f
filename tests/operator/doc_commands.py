"""Every shell block of docs/operations.md's sections on running the server, its secrets, systemd, containers and
Kubernetes runs as printed, in order, on a fresh host (a root prefix: docblocks.py), with systemctl, podman and
kubectl as stubs and every mmc-metaserver command line checked by --check-config. Then: the secrets those steps
made are readable by their owner only, every unit systemctl is asked about is one meson install gives, and every
file a podman or kubectl command names exists.
usage: doc_commands.py SOURCE_ROOT BUILD_ROOT"""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
sys.path.insert(0, os.path.dirname(__file__))
import docblocks  # noqa: E402
from tap import report  # noqa: E402

SECTIONS = ['Running the meta server', 'Security', 'Containers', 'Kubernetes']
SECRET = re.compile(r'(^|/)(credstore[^/]*/.*|[^/]*\.(token|password|pw|key))$')


def secrets_private(root):
    """Files the steps made that hold a secret, each with its mode when group or others may read it."""
    loose = []
    for base, dirs, files in os.walk(os.path.join(root, 'etc')):
        for name in files:
            path = os.path.join(base, name)
            rel = os.path.relpath(path, root)
            if SECRET.search(rel) and docblocks.mode(path) & 0o077:
                loose.append(f'{rel} {oct(docblocks.mode(path))}')
        for name in dirs:
            path = os.path.join(base, name)
            if name.startswith('credstore') and docblocks.mode(path) & 0o077:
                loose.append(f'{os.path.relpath(path, root)}/ {oct(docblocks.mode(path))}')
    return loose


def units_named(calls, build):
    """The units systemctl calls name that meson install does not give."""
    missing = []
    for call in calls:
        w = docblocks.words(call)
        if w[0] != 'systemctl':
            continue
        for unit in [a for a in w[1:] if a.startswith('mmc-')]:
            name = unit if unit.endswith('.service') else unit + '.service'
            template = re.sub(r'@[^.]+\.service$', '@.service', name)
            if not os.path.exists(os.path.join(build, template)):
                missing.append(name)
    return missing


def files_named(calls, cwd):
    """The files podman and kubectl calls name (-f, -k, --from-file, --cert, --key, secret create's file) that do
    not exist."""
    missing = []
    for call in calls:
        w = docblocks.words(call)
        if w[0] not in ('podman', 'kubectl'):
            continue
        for i, a in enumerate(w):
            path = None
            if a in ('-f', '-k') and i + 1 < len(w):
                path = w[i + 1]
            elif re.match(r'--(from-file|cert|key)=', a):
                path = a.split('=', 1)[1].split('=')[-1]
            elif w[1:3] == ['secret', 'create'] and i == 4:
                path = a
            if path and path != '-' and not os.path.exists(os.path.join(cwd, path)):
                missing.append(f'{w[0]}: {path}')
    return missing


def main():
    src, build = sys.argv[1], sys.argv[2]
    if not shutil.which('openssl'):
        print('1..0 # SKIP the blocks need openssl (Debian package openssl)')
        return 0
    root = tempfile.mkdtemp(prefix='mmc-doc-')
    cwd, bindir = os.path.join(root, 'work'), os.path.join(root, 'bin')
    os.makedirs(cwd)
    os.symlink(os.path.join(src, 'deploy'), os.path.join(cwd, 'deploy'))
    docblocks.stubs(bindir)
    docblocks.certificate(cwd)
    blocks = [b for s in SECTIONS for b in docblocks.sh_blocks(docblocks.section(s))]
    try:
        rc, out, calls = docblocks.run(blocks, root, cwd, bindir)
        checks = [(f'the {len(blocks)} shell blocks of {", ".join(SECTIONS)} run as printed on a fresh host',
                   rc == 0, out[-3000:]),
                  ('every server command line in them passes --check-config',
                   rc == 0 and any(c.startswith('mmc-metaserver ') for c in calls), calls),
                  ('the secrets they make are readable by their owner only', not secrets_private(root),
                   secrets_private(root)),
                  ('every unit systemctl is asked about is installed by meson', not units_named(calls, build),
                   units_named(calls, build)),
                  ('every file podman and kubectl are given exists', not files_named(calls, cwd),
                   files_named(calls, cwd))]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
