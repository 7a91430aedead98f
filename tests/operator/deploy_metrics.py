"""deploy/'s Prometheus rules and Grafana dashboard name only metrics a real mmc-metaserver serves on /metrics, the
dashboard shows every mmc_ family, and the files load and have the shape their tools expect.
usage: deploy_metrics.py SOURCE_ROOT"""
import json
import os
import re
import sys
import urllib.request

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
from tap import report  # noqa: E402
from metaserver import Server  # noqa: E402

NAME = re.compile(r'\b(mmc_[a-z0-9_]+)\b')


def served_names(text):
    names = set()
    for line in text.splitlines():
        m = re.match(r'# TYPE (\S+) (\S+)', line)
        if m:
            names.add(m.group(1))
            if m.group(2) == 'histogram':
                names |= {m.group(1) + s for s in ('_bucket', '_sum', '_count')}
        elif line and not line.startswith('#'):
            names.add(re.match(r'[a-zA-Z_:][a-zA-Z0-9_:]*', line).group())
    return names


def main():
    root = sys.argv[1]
    checks = []
    with Server() as s:
        text = urllib.request.urlopen(f'http://127.0.0.1:{s.admin}/metrics', timeout=10).read().decode()
    served = served_names(text)

    rules = yaml.safe_load(open(os.path.join(root, 'deploy/prometheus/mmc-alerts.yml')))
    alerts = [r for g in rules['groups'] for r in g['rules']]
    shape = all({'alert', 'expr', 'labels', 'annotations'} <= set(r) and r['labels'].get('severity') for r in alerts)
    checks.append(('the rules file is Prometheus rule groups', shape and len(alerts) >= 8, f'{len(alerts)} rules'))
    used = {n for r in alerts for n in NAME.findall(r['expr'])}
    checks.append(('every metric an alert names is served', used and used <= served, f'missing: {used - served}'))

    dash = json.load(open(os.path.join(root, 'deploy/grafana/mmc-dashboard.json')))
    exprs = [t['expr'] for p in dash['panels'] for t in p.get('targets', [])]
    used = {n for e in exprs for n in NAME.findall(e)}
    checks.append(('every metric a dashboard panel names is served', used and used <= served,
                   f'missing: {used - served}'))
    # a family kept under its first name says "by another name" in its HELP: the dashboard shows the new one
    aliases = set(re.findall(r'^# HELP (mmc_\w+) .*by another name', text, re.M))
    families = {re.sub(r'_(bucket|sum|count)$', '', n) for n in served if n.startswith('mmc_')} - aliases
    shown = {re.sub(r'_(bucket|sum|count)$', '', n) for n in used}
    checks.append(('the dashboard shows every mmc_ family', families <= shown, f'not shown: {families - shown}'))
    ids = [p['id'] for p in dash['panels']]
    checks.append(('panel ids are unique', len(ids) == len(set(ids)), f'{ids}'))

    scrape = yaml.safe_load(open(os.path.join(root, 'deploy/prometheus/prometheus.yml')))
    job = scrape['scrape_configs'][0]
    checks.append(('the scrape example reads /metrics of job mmc-metaserver',
                   job['job_name'] == 'mmc-metaserver' and job['metrics_path'] == '/metrics', f'{job}'))
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
