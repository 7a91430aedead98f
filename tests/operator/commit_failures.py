"""Metadata commits that fail on every batch (LMDB's map full) are logged once a second at most, with how many were
left out, not once per batch (1,837 lines a second were seen). The server's map is 1 MiB; a store puts 1 KiB objects
in batches until they fail, then keeps putting for 2.5 s. usage: commit_failures.py MMC_TEST_NODE"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
from tap import report  # noqa: E402
from metaserver import Node, Server  # noqa: E402

BACKUP_ERROR = -3105  # MMC_META_BACKUP_ERROR


def main():
    node_bin = sys.argv[1]
    checks = []
    with Server(['--env', 'ock.mmc.meta.lmdb.map_size=1048576']) as s:
        node = Node(s, node_bin, 256 << 20)
        failed, deadline, i, first = 0, time.monotonic() + 120, 0, None
        # failures for 2.5 s (so they span three clock seconds of the log) and at least 50 of them
        while (failed < 50 or not first or time.monotonic() - first < 2.5) and time.monotonic() < deadline:
            reply = node.cmd(f'bput full/{i}/ 64 1024 {i}').split()
            if reply and BACKUP_ERROR in [int(x) for x in reply[1:]]:
                failed += 1
                first = first or time.monotonic()
            i += 1
        node.quit()
        log = s.stderr()
    checks.append(('puts fail once the 1 MiB map is full', failed >= 50, f'{failed} failed batches of {i}'))
    lines = [ln for ln in log.splitlines() if 'op=lmdb_commit' in ln or 'op=lmdb_put' in ln]
    per_second = {}
    for ln in lines:
        per_second[ln[:19]] = per_second.get(ln[:19], 0) + 1  # the timestamp to the second
    worst = max(per_second.values(), default=0)
    checks.append(('the failures are logged', len(lines) >= 1, log[-2000:]))
    checks.append(('at most one line a second', worst <= 1, f'{worst} lines in one second: {lines[:5]}'))
    skipped = sum(int(m) for m in re.findall(r'failed_since_last_line=(\d+)', '\n'.join(lines)))
    checks.append(('a later line counts the failures left out before it', len(lines) >= 2 and skipped > 0,
                   f'{len(lines)} lines, {skipped} left out, {failed} failed batches'))
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
