"""The backup procedure of docs/operations.md ("Upgrades and backups"), its blocks run as printed under a root
prefix (docblocks.py): mdb_copy of a running server's data dir (objects and KVCM state in it; the unit's state
directory, a link into /var/lib/private as DynamicUser lays it out) into a copy that only root may read, then the
restore (systemctl stop: the test's server stops) into a fresh directory that a new server then starts from. Skips
with the reason when mdb_copy (lmdb-utils) is not installed. usage: backup.py MMC_TEST_NODE"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
sys.path.insert(0, os.path.dirname(__file__))
import docblocks  # noqa: E402
from tap import report  # noqa: E402
from metaserver import Server  # noqa: E402

KEYS = 200
# systemctl for the restore: stop is SIGTERM to the test's server and waiting until it has exited (then a zombie of
# the test, which reaps it later); start leaves a mark, and the test starts the server
SYSTEMCTL = """#!/bin/sh
case "$1" in
stop) kill -TERM "$MMC_TEST_PID"
      while [ -e /proc/$MMC_TEST_PID ] && [ "$(cut -d' ' -f3 /proc/$MMC_TEST_PID/stat)" != Z ]; do sleep 0.05; done ;;
start) : > "$MMC_TEST_STARTED" ;;
esac
"""


def kvcm(s, api, body):
    req = urllib.request.Request(f'http://127.0.0.1:{s.http}/api/{api}', data=json.dumps(body).encode(),
                                 headers={'Content-Type': 'application/json'})
    return json.loads(urllib.request.urlopen(req, timeout=30).read())


def put_objects(s, node_bin):
    env = dict(os.environ, MMC_TEST_META=f'tcp://127.0.0.1:{s.rpc}', MMC_PROTOCOL='host_tcp')
    n = subprocess.Popen([node_bin], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def cmd(c):
        n.stdin.write(c + '\n')
        n.stdin.flush()
        return n.stdout.readline().strip()
    replies = [cmd('init 1 67108864'), cmd(f'bput backup/block- {KEYS} 4096 3')]
    return n, cmd, replies


def unit_layout(root):
    """/var/lib/mmc-metaserver as StateDirectory= with DynamicUser makes it: a link to /var/lib/private's."""
    private = os.path.join(root, 'var', 'lib', 'private')
    os.makedirs(os.path.join(private, 'mmc-metaserver'), mode=0o700)
    os.chmod(private, 0o700)
    os.symlink('private/mmc-metaserver', os.path.join(root, 'var', 'lib', 'mmc-metaserver'))
    return os.path.join(root, 'var', 'lib', 'mmc-metaserver')


def copies(root):
    """The backup's directories and files, each with its mode."""
    out = {}
    for base, dirs, files in os.walk(os.path.join(root, 'backup')):
        for name in dirs + files:
            path = os.path.join(base, name)
            out[os.path.relpath(path, root)] = docblocks.mode(path)
    return out


def main():
    node_bin = sys.argv[1]
    if not shutil.which('mdb_copy'):
        print('1..0 # SKIP mdb_copy is not installed (Debian package lmdb-utils)')
        return 0
    checks = []
    tmp = tempfile.mkdtemp(prefix='mmc-backup-')
    bindir, cwd = os.path.join(tmp, 'bin'), os.path.join(tmp, 'work')
    os.makedirs(cwd)
    docblocks.stubs(bindir, with_server=False)
    with open(os.path.join(bindir, 'systemctl'), 'w') as f:
        f.write(SYSTEMCTL)
    data = unit_layout(tmp)
    backup, restore = docblocks.sh_blocks(docblocks.section('Upgrades and backups'))
    started = os.path.join(tmp, 'started')
    with Server(['--data-dir', data], workdir=tmp) as s:
        reg = kvcm(s, 'registerInstance', {'trace_id': 'b1', 'instance_group': 'default', 'instance_id': 'kept',
                                           'model_deployment': {'model_name': 'm', 'dtype': 'fp16', 'tp_size': 1},
                                           'block_size': 16, 'location_spec_infos': [{'name': 'tp0', 'size': 4096}]})
        node, cmd, replies = put_objects(s, node_bin)
        checks.append(('the running server holds objects and a KVCM instance',
                       reg['header']['status']['code'] == 'OK' and replies[1].split()[0] == '0', f'{reg} {replies}'))
        rc, out, _ = docblocks.run([backup], tmp, cwd, bindir)
        checks.append(('the documented backup copies the data dir while the server runs', rc == 0, out))
        made = copies(tmp)
        checks.append(('the copy is readable by root alone: directories 0700, data.mdb 0600',
                       any(p.endswith('data.mdb') for p in made)
                       and all(m == (0o600 if p.endswith('.mdb') else 0o700) for p, m in made.items()
                               if p != 'backup'), {p: oct(m) for p, m in made.items()}))
        cmd('quit')
        node.wait(30)
        # the restore names the copy by the variable the backup block set
        assignments = '\n'.join(re.findall(r'^\w+=.*$', backup, re.M))
        rc, out, _ = docblocks.run([assignments, restore], tmp, cwd, bindir,
                                   env={'MMC_TEST_PID': str(s.proc.pid), 'MMC_TEST_STARTED': started})
        checks.append(('the documented restore stops the server and puts the copy in place',
                       rc == 0 and s.proc.poll() is not None and os.path.exists(started), out))
    with Server(['--data-dir', data], workdir=tmp) as r:
        loaded = r.wait_log(r'op=load .*objects=')
        m = re.search(r'objects=(\d+)', loaded or '')
        checks.append((f'a server started on the restored copy loads the {KEYS} objects',
                       m is not None and int(m.group(1)) == KEYS, loaded))
        info = kvcm(r, 'getInstanceInfo', {'trace_id': 'b2', 'instance_id': 'kept'})
        checks.append(('and the KVCM instance', info['header']['status']['code'] == 'OK', f'{info}'))
    shutil.rmtree(tmp, ignore_errors=True)
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
