"""deploy/prometheus through Prometheus's own tool: the rules and scrape configs check, and the rules behave as
docs/operations.md says (tests/operator/alerts_test.yml: a clean engine exit raises nothing, a lost engine one alert
that counts it and names the reason). Skips with the reason without promtool (Debian package prometheus).
usage: alert_rules.py SOURCE_ROOT"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
from tap import report  # noqa: E402


def promtool(*args, cwd=None):
    r = subprocess.run(['promtool', *args], capture_output=True, text=True, cwd=cwd, timeout=120)
    return r.returncode == 0, r.stdout + r.stderr


def scrape_configs(checks, prom):
    """Each scrape example as Prometheus loads it (the rules file beside it). tests/operator/local_agents.py runs a
    real Prometheus on them."""
    tmp = tempfile.mkdtemp(prefix='mmc-prom-')
    try:
        for f in glob.glob(os.path.join(prom, '*.yml')):
            shutil.copy(f, tmp)
        for cfg in sorted(glob.glob(os.path.join(prom, 'prometheus*.yml'))):
            ok, out = promtool('check', 'config', os.path.basename(cfg), cwd=tmp)
            checks.append((f'promtool check config {os.path.basename(cfg)}', ok, out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    root = sys.argv[1]
    if not shutil.which('promtool'):
        print('1..0 # SKIP promtool is not installed (Debian package prometheus)')
        return 0
    prom = os.path.join(root, 'deploy', 'prometheus')
    checks = []
    ok, out = promtool('check', 'rules', os.path.join(prom, 'mmc-alerts.yml'))
    checks.append(('promtool check rules mmc-alerts.yml', ok, out))
    ok, out = promtool('test', 'rules', os.path.join(os.path.dirname(os.path.abspath(__file__)), 'alerts_test.yml'))
    checks.append(('the alert rules pass their unit tests (alerts_test.yml)', ok, out))
    scrape_configs(checks, prom)
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
