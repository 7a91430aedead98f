"""The backup procedure of docs/operations.md ("Upgrades and backups"): mdb_copy of a running server's data dir
(objects and KVCM state in it), restored into a fresh directory that a new server then starts from. Skips with
the reason when mdb_copy (lmdb-utils) is not installed. usage: backup.py MMC_TEST_NODE"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
from tap import report  # noqa: E402
from metaserver import Server  # noqa: E402

KEYS = 200


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


def main():
    node_bin = sys.argv[1]
    if not shutil.which('mdb_copy'):
        print('1..0 # SKIP mdb_copy is not installed (Debian package lmdb-utils)')
        return 0
    checks = []
    tmp = tempfile.mkdtemp(prefix='mmc-backup-')
    backup = os.path.join(tmp, 'backup')
    os.mkdir(backup)
    with Server(workdir=tmp) as s:
        reg = kvcm(s, 'registerInstance', {'trace_id': 'b1', 'instance_group': 'default', 'instance_id': 'kept',
                                           'model_deployment': {'model_name': 'm', 'dtype': 'fp16', 'tp_size': 1},
                                           'block_size': 16, 'location_spec_infos': [{'name': 'tp0', 'size': 4096}]})
        node, cmd, replies = put_objects(s, node_bin)
        checks.append(('the running server holds objects and a KVCM instance',
                       reg['header']['status']['code'] == 'OK' and replies[1].split()[0] == '0', f'{reg} {replies}'))
        cp = subprocess.run(['mdb_copy', os.path.join(tmp, 'data'), backup], capture_output=True, text=True)
        checks.append(('mdb_copy copies the data dir while the server runs', cp.returncode == 0, cp.stderr))
        cmd('quit')
        node.wait(30)
    restored = os.path.join(tmp, 'restored')
    os.mkdir(restored, 0o700)
    shutil.copy(os.path.join(backup, 'data.mdb'), restored)
    with Server(['--data-dir', restored], workdir=tmp) as r:
        loaded = r.wait_log(r'op=load .*objects=')
        m = re.search(r'objects=(\d+)', loaded or '')
        checks.append((f'a server started on the restored copy loads the {KEYS} objects',
                       m is not None and int(m.group(1)) == KEYS, loaded))
        info = kvcm(r, 'getInstanceInfo', {'trace_id': 'b2', 'instance_id': 'kept'})
        checks.append(('and the KVCM instance', info['header']['status']['code'] == 'OK', f'{info}'))
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
