"""README.md's C snippet is a whole program: extracted as it stands, compiled with -Wall -Wextra -Werror against
this build's libmmc, and run against a real mmc-metaserver on the default address it names (skipped, with the
reason, when 127.0.0.1:5000 is taken).
usage: readme_snippet.py README CC INCLUDE_DIR GENERATED_INCLUDE_DIR LIBMMC"""
import os
import re
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from metaserver import Server  # noqa: E402


def port_free(port):
    with socket.socket() as s:
        try:
            s.bind(('127.0.0.1', port))
            return True
        except OSError:
            return False


def main():
    readme, cc, inc, gen_inc, libmmc = sys.argv[1:6]
    blocks = re.findall(r'```c\n(.*?)```', open(readme).read(), re.S)
    print('1..2')
    if not blocks:
        print('not ok 1 - README.md has a C snippet\nnot ok 2 - it runs')
        return 1
    tmp = tempfile.mkdtemp(prefix='mmc-readme-')
    src, exe = os.path.join(tmp, 'app.c'), os.path.join(tmp, 'app')
    with open(src, 'w') as f:
        f.write(blocks[0])
    libdir = os.path.dirname(libmmc)
    p = subprocess.run(cc.split() + ['-std=c17', '-Wall', '-Wextra', '-Werror', '-I', inc, '-I', gen_inc, src, '-o',
                                     exe, '-L', libdir, '-l:' + os.path.basename(libmmc), f'-Wl,-rpath,{libdir}'],
                       capture_output=True, text=True)
    print(f'{"ok" if p.returncode == 0 else "not ok"} 1 - the snippet compiles and links as pasted')
    if p.returncode:
        print('# ' + p.stderr.replace('\n', '\n# '))
        print('not ok 2 - it runs # it did not compile')
        return 1
    if not port_free(5000):
        print('ok 2 # SKIP 127.0.0.1:5000 is taken; the snippet connects there')
        return 0
    with Server(['--env', 'ock.mmc.meta_service_url=tcp://127.0.0.1:5000', '--env', 'kvcm.service.http_port=0',
                 '--env', 'kvcm.service.admin_http_port=0'], ports=False) as s:
        r = subprocess.run([exe], capture_output=True, text=True, timeout=120)
    ok = r.returncode == 0 and 'put and get: MMC_OK' in r.stdout
    print(f'{"ok" if ok else "not ok"} 2 - it puts and gets a block against a real server')
    if not ok:
        print(f'# rc={r.returncode} out={r.stdout!r} err={r.stderr[-1500:]!r} server={s.stderr()[-1500:]!r}')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
