"""deploy/'s Prometheus rules and Grafana dashboard name only metrics a real mmc-metaserver serves on /metrics, and
only label values it serves (in queries and in the prose of descriptions, after a store put, read and left), the
dashboard shows every mmc_ family, and the files load and have the shape their tools expect.
usage: deploy_metrics.py SOURCE_ROOT MMC_TEST_NODE"""
import json
import os
import re
import sys
import time
import urllib.request

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
from tap import report  # noqa: E402
from metaserver import Node, Server  # noqa: E402

NAME = re.compile(r'\b(mmc_[a-z0-9_]+)\b')
SELECTOR = re.compile(r'\b(mmc_[a-z0-9_]+)\{([^}]*)\}')
MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"')
TARGET_LABELS = {'instance', 'job'}  # Prometheus's, not the server's


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


def served_label_values(text):
    """{(metric, label): {values}} of every sample line."""
    values = {}
    for m in re.finditer(r'^(mmc_\w+)\{([^}]*)\}', text, re.M):
        for label, value in re.findall(r'(\w+)="([^"]*)"', m.group(2)):
            values.setdefault((m.group(1), label), set()).add(value)
    return values


def selected_label_values(texts):
    """Every (metric, label, value) a selector in texts matches on, alternatives of =~ split."""
    out = set()
    for t in texts:
        for name, inner in SELECTOR.findall(t):
            for label, op, value in MATCHER.findall(inner):
                if label in TARGET_LABELS or '$' in value:
                    continue
                for v in (value.split('|') if op in ('=~', '!~') else [value]):
                    out.add((name, label, v))
    return out


def scrape(s):
    return urllib.request.urlopen(f'http://127.0.0.1:{s.admin}/metrics', timeout=10).read().decode()


def selected_sum(text, selector):
    """The sum of the samples in text that selector (name{label op "value", ...}) selects."""
    name, inner = SELECTOR.match(selector).groups()
    total = 0.0
    for m in re.finditer(r'^' + name + r'\{([^}]*)\} (\S+)$', text, re.M):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        ok = True
        for label, op, value in MATCHER.findall(inner):
            if label in TARGET_LABELS or '$' in value:
                continue
            v = labels.get(label, '')
            hit = re.fullmatch(value, v) is not None if op in ('=~', '!~') else v == value
            ok &= hit if op in ('=', '=~') else not hit
        total += float(m.group(2)) if ok else 0
    return total


def metrics_after_a_store(s, store):
    """/metrics once a store has put a small and a large object, read one and left, and a KVCM call succeeded: the
    label values a dashboard selects."""
    body = {'trace_id': 'd1', 'instance_group': 'default', 'instance_id': 'dash',
            'model_deployment': {'model_name': 'm', 'dtype': 'fp16', 'tp_size': 1}, 'block_size': 16,
            'location_spec_infos': [{'name': 'tp0', 'size': 4096}]}
    urllib.request.urlopen(urllib.request.Request(f'http://127.0.0.1:{s.http}/api/registerInstance',
                                                  data=json.dumps(body).encode(),
                                                  headers={'Content-Type': 'application/json'}), timeout=30).read()
    store.cmd('get small 4096 1')
    store.quit()
    text = ''
    for _ in range(200):  # the release of the get is sent after it returns, and the unmount follows the quit
        text = scrape(s)
        if 'mmc_rpc_requests_total{op="release"}' in text and 'mmc_unmounts_total{reason="unregister"} 1' in text:
            break
        time.sleep(0.05)
    return text


def unmounts_by_reason(checks, s, node_bin, text):
    """A store that quits is unmounted as reason="unregister" (the alert leaves it alone), one killed as "eof"."""
    clean = re.search(r'^mmc_unmounts_total\{reason="unregister"\} (\d+)$', text, re.M)
    killed = Node(s, node_bin, 64 << 20)
    killed.p.kill()
    killed.p.wait(30)
    after = ''
    for _ in range(200):  # the server reads the close after the kill
        after = scrape(s)
        if re.search(r'^mmc_unmounts_total\{reason="eof"\} 1$', after, re.M):
            break
        time.sleep(0.05)
    eof = re.search(r'^mmc_unmounts_total\{reason="eof"\} (\d+)$', after, re.M)
    checks.append(('a store that leaves cleanly counts as unmounts{reason="unregister"}, one killed as "eof"',
                   clean and clean.group(1) == '1' and eof and eof.group(1) == '1',
                   re.findall(r'^mmc_unmounts_total.*$', text + after, re.M)))


def put_selectors(rules, dash):
    """The put rate as the shipped files spell it: the alert's prose and the dashboard's "puts" series."""
    found = []
    for r in rules:
        found += re.findall(r'put rate: sum\(rate\((mmc_rpc_requests_total\{[^}]*\})', r['annotations'].get(
            'description', ''))
    for p in dash['panels']:
        found += [SELECTOR.search(t['expr']).group(0) for t in p.get('targets', [])
                  if t.get('legendFormat', '').startswith('puts')]
    return found


def puts_counted(checks, s, store, rules, dash):
    """Each put rate a rule or panel names grows with a 4 KiB put (the extent path) and a 5 MiB one (alloc +
    commit): "alloc + commit are puts" counted none of the first kind."""
    sels = put_selectors(rules, dash)
    before = scrape(s)
    store.cmd('put small 4096 1')
    small = scrape(s)
    store.cmd(f'put large {5 << 20} 2')
    large = scrape(s)
    grew = [(sel, selected_sum(small, sel) - selected_sum(before, sel), selected_sum(large, sel) -
             selected_sum(small, sel)) for sel in sels]
    checks.append(('the put rates of the rules and the dashboard count small and large puts',
                   len(sels) >= 2 and all(a >= 1 and b >= 1 for _, a, b in grew), f'{grew}'))


def main():
    root, node_bin = sys.argv[1], sys.argv[2]
    checks = []
    rules = yaml.safe_load(open(os.path.join(root, 'deploy/prometheus/mmc-alerts.yml')))
    alerts = [r for g in rules['groups'] for r in g['rules']]
    dash = json.load(open(os.path.join(root, 'deploy/grafana/mmc-dashboard.json')))
    with Server() as s:
        store = Node(s, node_bin, 64 << 20)
        puts_counted(checks, s, store, alerts, dash)
        text = metrics_after_a_store(s, store)
        unmounts_by_reason(checks, s, node_bin, text)
    served = served_names(text)
    values = served_label_values(text)

    shape = all({'alert', 'expr', 'labels', 'annotations'} <= set(r) and r['labels'].get('severity') for r in alerts)
    checks.append(('the rules file is Prometheus rule groups', shape and len(alerts) >= 8, f'{len(alerts)} rules'))
    used = {n for r in alerts for n in NAME.findall(r['expr'])}
    checks.append(('every metric an alert names is served', used and used <= served, f'missing: {used - served}'))
    texts = [r['expr'] for r in alerts] + [v for r in alerts for v in r['annotations'].values()]

    exprs = [t['expr'] for p in dash['panels'] for t in p.get('targets', [])]
    texts += exprs + [p.get('description', '') for p in dash['panels']]
    unserved = sorted(f'{n}{{{k}="{v}"}}' for n, k, v in selected_label_values(texts) if v not in values.get((n, k), ()))
    checks.append(('every label value a rule or panel selects is served', not unserved, f'not served: {unserved}'))
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
