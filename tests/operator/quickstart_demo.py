"""./quickstart.sh's demo on ports of its own (MMC_PORT_BASE): it runs there, and when one of its ports is taken
it says which, in the server's words, instead of blaming port 5000. Runs the script against this build
(MMC_BUILD_DIR; building is a no-op then). usage: quickstart_demo.py SOURCE_ROOT BUILD_ROOT"""
import os
import random
import re
import socket
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
from tap import report  # noqa: E402


def free_base():
    """A port with the next four free on loopback too."""
    for _ in range(200):
        base = random.randrange(20000, 60000)
        socks = []
        try:
            for p in range(base, base + 5):
                s = socket.socket()
                socks.append(s)
                s.bind(('127.0.0.1', p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError('no five free ports in a row')


def demo(src, build, base):
    env = {k: v for k, v in os.environ.items() if not k.startswith(('MMC_', 'FI_'))}
    env.update(MMC_BUILD_DIR=os.path.abspath(build), MMC_PORT_BASE=str(base))
    return subprocess.run(['bash', os.path.join(src, 'quickstart.sh'), 'demo'], capture_output=True, text=True,
                          env=env, timeout=300)


def main():
    src, build = sys.argv[1], sys.argv[2]
    checks = []
    base = free_base()
    r = demo(src, build, base)
    ready = next((ln for ln in r.stdout.splitlines() if 'mmc-metaserver ready' in ln), '')
    want = f'rpc=tcp://127.0.0.1:{base} http={base + 1} admin={base + 2} meta_rpc_port={base + 3} ' \
           f'admin_rpc_port={base + 4}'
    checks.append((f'MMC_PORT_BASE={base} moves all five ports of the demo', want in ready, r.stdout[-2000:]))
    checks.append(('the demo\'s reader reads the block', r.returncode == 0 and 'bytes match' in r.stdout,
                   r.stdout[-2000:] + r.stderr[-2000:]))
    base = free_base()
    with socket.socket() as taken:  # its KVCM gRPC port, as an old instance or another program would hold it
        taken.bind(('127.0.0.1', base + 3))
        taken.listen()
        r = demo(src, build, base)
    said = next((ln for ln in r.stderr.splitlines() if 'did not start' in ln), '')
    checks.append(('with a port taken, the demo fails and says which one, in the server\'s words',
                   r.returncode != 0 and str(base + 3) in said and not re.search(r'\b5000\b', said),
                   said or r.stderr[-2000:]))
    checks.append(('a bad MMC_PORT_BASE is refused with the range',
                   re.search(r'1024 to 65531', demo(src, build, 'x').stderr) is not None, ''))
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
