"""The container and Kubernetes recipes in deploy/ start mmc-metaserver as written, checked without a container
runtime: the Containerfile's stages (Debian 12; the build stage's packages and meson options exist, the runtime
stage has no -dev package and every shared library the server loads), its user, volume and credentials directory;
the Kubernetes manifests' command line (the image's entrypoint and the StatefulSet's args, $(VAR)s filled in),
config file, Secrets, volume, ports, probes and leader election. Each command line runs through
mmc-metaserver --check-config with the files the recipe mounts created under a root prefix.
usage: deploy_recipes.py SOURCE_ROOT"""
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'unit'))
sys.path.insert(0, os.path.dirname(__file__))
import docblocks  # noqa: E402
from metaserver import BINARY  # noqa: E402
from tap import report  # noqa: E402

SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..')
MESON_BUILTINS = {'buildtype', 'prefix', 'wrap-mode', 'libdir', 'bindir', 'optimization', 'b_lto'}
FILE_KEY = re.compile(r'(_file|^ock\.mmc\.tls\.(ca|ca\.crl|cert|key|key\.pass)\.path)$')


def stages(path):
    """The Containerfile's stages: [{'from': image, 'lines': [instruction, ...]}], continuations joined."""
    text = re.sub(r'\\\n', ' ', open(path).read())
    out = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith('#'):
            continue
        if line.startswith('FROM '):
            out.append({'from': line.split()[1], 'lines': []})
        out[-1]['lines'].append(line)
    return out


def instruction(stage, name):
    return [line[len(name) + 1:].strip() for line in stage['lines'] if line.startswith(name + ' ')]


def packages(stage):
    """The packages of the stage's apt-get install."""
    out = []
    for run in instruction(stage, 'RUN'):
        for cmd in run.split('&&'):
            w = cmd.split()
            if 'apt-get' in w and 'install' in w:
                out += [p for p in w[w.index('install') + 1:] if not p.startswith('-')]
    return out


def debian_closure(pkgs):
    """The packages pkgs pull in, by the Depends of those installed on this (Debian) host."""
    seen, todo = set(), list(pkgs)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        r = subprocess.run(['dpkg-query', '-W', '-f=${Depends},${Pre-Depends}', p], capture_output=True, text=True)
        todo += [re.split(r'[\s:(]', d.strip())[0] for d in re.split(r'[,|]', r.stdout) if d.strip()]
    return seen


def loaded_packages():
    """The Debian package of every shared library the server loads (ldd), or None off Debian or for a sanitizer
    build (its runtime and what that loads are not the image's)."""
    libs = re.findall(r'=> (\S+)', subprocess.run(['ldd', BINARY], capture_output=True, text=True).stdout)
    if not shutil.which('dpkg') or any(re.search(r'/lib(a|ub|l|t)san\.', p) for p in libs):
        return None
    out = {}
    for path in libs:
        real = os.path.realpath(path)
        # dpkg knows a file by the path its package ships, /lib or /usr/lib (merged /usr makes them one)
        names = {path, real} | {re.sub(r'^/usr/lib/', '/lib/', p) for p in (path, real)} | \
            {re.sub(r'^/lib/', '/usr/lib/', p) for p in (path, real)}
        r = subprocess.run(['dpkg', '-S'] + sorted(names), capture_output=True, text=True)
        owner = re.match(r'([\w.+-]+)', r.stdout)
        out[os.path.basename(path)] = owner.group(1) if owner else None  # None: none of Debian's
    return out


def package_known(p):
    if subprocess.run(['dpkg-query', '-W', p], capture_output=True).returncode == 0:
        return True
    return shutil.which('apt-cache') and subprocess.run(['apt-cache', 'show', p], capture_output=True).returncode == 0


def meson_options(build_stage):
    opts = set(re.findall(r'^option\(\'([\w-]+)\'', open(os.path.join(SRC, 'meson_options.txt')).read(), re.M))
    used = set()
    for run in instruction(build_stage, 'RUN'):
        used |= set(re.findall(r'(?:-D|--)([\w-]+)=', run)) if 'meson setup' in run else set()
    return used - opts - MESON_BUILTINS


def conf_lines(text):
    """key = value pairs of a config file."""
    return [tuple(p.strip() for p in line.split('#')[0].split('=', 1)) for line in text.splitlines()
            if '=' in line.split('#')[0]]


def credential_names(conf):
    """The bare names of the config's file keys: the files $CREDENTIALS_DIRECTORY must hold."""
    return sorted(v for k, v in conf_lines(conf) if FILE_KEY.search(k) and '/' not in v)


def check_config(argv, env, root):
    """mmc-metaserver --check-config of an argv written for the container, its paths moved under root."""
    argv = [docblocks.rooted(a, root) for a in argv]
    env = dict(os.environ, **{k: docblocks.rooted(v, root) for k, v in env.items()})
    r = subprocess.run([BINARY] + argv[1:] + ['--check-config'], capture_output=True, text=True, env=env)
    return r.returncode == 0, f'{argv}: {r.stdout} {r.stderr}'


_PEM = {}


def secret(path):
    """What a secret file holds: a real certificate or key for a TLS file (--check-config loads them as the start
    does), a token for anything else."""
    base = os.path.basename(path)
    if not re.search(r'\.(crt|pem|key)$', base):
        return 'x' * 64 + '\n'
    if not _PEM:
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'kvcm'))
        import tls_certs
        for name, p in zip(('ca', 'crt', 'key'), tls_certs.make(tempfile.mkdtemp(prefix='mmc-deploy-pem-'))):
            _PEM[name] = open(p).read()
    if base.endswith('.key'):
        return _PEM['key']
    return _PEM['ca'] if base.split('.')[0].endswith('ca') else _PEM['crt']


def put(root, path, text, mode=0o600):
    path = docblocks.rooted(path, root)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)
    os.chmod(path, mode)


def container_checks(root):
    st = stages(os.path.join(SRC, 'deploy', 'container', 'Containerfile'))
    build, runtime = st[0], st[-1]
    entry = json.loads(instruction(runtime, 'ENTRYPOINT')[0])
    cmd = json.loads(instruction(runtime, 'CMD')[0])
    user = instruction(runtime, 'USER')[0].split(':')[0]
    env = dict(shlex.split(e)[0].split('=', 1) for e in instruction(runtime, 'ENV'))
    data_dir = entry[entry.index('--data-dir') + 1]
    checks = [('both stages are Debian 12', all(re.match(r'debian:12(\b|-)', s['from']) for s in st),
               [s['from'] for s in st]),
              ('the build stage\'s packages exist in Debian', all(package_known(p) for p in packages(build)),
               [p for p in packages(build) if not package_known(p)]),
              ('its meson options are mmc\'s', not meson_options(build), meson_options(build)),
              ('the runtime stage has no -dev package', not [p for p in packages(runtime) if p.endswith('-dev')],
               packages(runtime)),
              ('it runs as a numeric user that is not root', user.isdigit() and user != '0', user),
              ('its data dir is a volume', instruction(runtime, 'VOLUME') == [data_dir],
               (instruction(runtime, 'VOLUME'), data_dir)),
              ('it reads secrets from a credentials directory', 'CREDENTIALS_DIRECTORY' in env, env)]
    loaded = loaded_packages()
    if loaded is None:
        print('# the runtime stage\'s libraries are not checked: no dpkg, or a sanitizer build of the server')
    else:
        have = debian_closure(packages(runtime))
        missing = {lib: p for lib, p in loaded.items() if p and p not in have}
        checks.append(('the runtime stage has every library mmc-metaserver loads', not missing, missing))
    conf = open(os.path.join(SRC, 'deploy', 'container', 'metaserver.conf')).read()
    put(root, cmd[cmd.index('--config') + 1], docblocks.rooted(conf, root), 0o644)
    names = credential_names(conf)
    for name in names:
        put(root, os.path.join(env['CREDENTIALS_DIRECTORY'], name), secret(name), 0o400)
    checks.append(('deploy/container/metaserver.conf with the image\'s command line passes --check-config',
                   *check_config(entry + cmd, env, root)))
    secrets = set(re.findall(r'--secret[ =]([\w.-]+)', docblocks.section('Containers')))
    checks.append(('the documented podman run gives the container every secret its config names',
                   set(names) <= secrets, (names, secrets)))
    return checks, entry, user, packages(runtime)


def manifests():
    out = {}
    for path in sorted(glob.glob(os.path.join(SRC, 'deploy', 'kubernetes', '*.yaml'))):
        for doc in yaml.safe_load_all(open(path)):
            out.setdefault(doc['kind'], []).append(doc)
            doc['_file'] = os.path.basename(path)
    return out


def expand(value, env):
    """Kubernetes' $(VAR) in args."""
    return re.sub(r'\$\((\w+)\)', lambda m: env.get(m.group(1), m.group(0)), value)


def mounted_files(pod, kinds, root):
    """Creates, under root, every file the pod's volumes put in its container; returns the config map's text and
    the secret files' paths."""
    c = pod['containers'][0]
    conf, secrets = '', []
    volumes = {v['name']: v for v in pod['volumes']}
    for m in c['volumeMounts']:
        v = volumes[m['name']]
        if 'configMap' in v:
            data = next(cm for cm in kinds['ConfigMap'] if cm['metadata']['name'] == v['configMap']['name'])['data']
            for item in v['configMap'].get('items') or [{'key': k, 'path': k} for k in data]:
                conf = data[item['key']]
                put(root, os.path.join(m['mountPath'], item['path']), docblocks.rooted(conf, root), 0o644)
        for src in v.get('projected', {}).get('sources', []) + ([{'secret': v['secret']}] if 'secret' in v else []):
            for item in src['secret']['items']:
                secrets.append(os.path.join(m['mountPath'], item['path']))
                put(root, secrets[-1], secret(secrets[-1]), 0o400)
    return conf, secrets


def kubernetes_checks(root, entry, image_user, image_packages):
    kinds = manifests()
    kust = kinds['Kustomization'][0]
    files = {os.path.basename(p) for p in glob.glob(os.path.join(SRC, 'deploy', 'kubernetes', '*.yaml'))}
    sts = kinds['StatefulSet'][0]
    pod = sts['spec']['template']['spec']
    c = pod['containers'][0]
    env = {e['name']: e.get('value', {'metadata.name': 'mmc-metaserver-0', 'metadata.namespace': 'mmc'}.get(
        e.get('valueFrom', {}).get('fieldRef', {}).get('fieldPath'), '')) for e in c['env']}
    argv = entry + [expand(a, env) for a in c.get('args', [])]
    conf, secrets = mounted_files(pod, kinds, root)
    settings = dict(conf_lines(conf))
    for a in [a for a in argv if '=' in a and not a.startswith('-')]:
        settings[a.split('=', 1)[0]] = a.split('=', 1)[1]
    mounts = {m['name']: m['mountPath'] for m in c['volumeMounts']}
    volumes = {v['name']: v for v in pod['volumes']}
    claims = {p['metadata']['name'] for p in kinds['PersistentVolumeClaim']}
    data_vol = [n for n, v in volumes.items() if v.get('persistentVolumeClaim', {}).get('claimName') in claims]
    data_dir = argv[argv.index('--data-dir') + 1]
    lock = settings.get('kvcm.distributed_lock.uri', '')
    admin = settings.get('kvcm.service.admin_http_port', '6492')
    scheme = 'https' if settings.get('kvcm.service.tls.cert_file') else 'http'
    probes = [c.get(p, {}).get('exec', {}).get('command', []) for p in ('readinessProbe', 'livenessProbe')]
    ports = {p['name']: p['containerPort'] for p in c['ports']}
    want_ports = {int(settings['ock.mmc.meta_service_url'].rsplit(':', 1)[1]), 6382, int(admin)}
    headless = [s for s in kinds['Service'] if s['spec'].get('clusterIP') == 'None']
    services_ok = all(p['targetPort'] in ports for s in kinds['Service'] for p in s['spec']['ports'])
    sc = pod.get('securityContext', {})
    affinity = pod.get('affinity', {}).get('podAffinity', {}).get('requiredDuringSchedulingIgnoredDuringExecution', [])
    return [
        ('kustomization.yaml names every manifest', set(kust['resources']) == files - {'kustomization.yaml'},
         kust['resources']),
        ('the StatefulSet runs a leader and a standby', sts['spec']['replicas'] == 2, sts['spec']['replicas']),
        ('they elect a leader through kvcm.distributed_lock.uri', bool(lock), settings),
        ('a file:// lock and the data dir are on the one persistent volume both pods mount',
         bool(data_vol) and mounts.get(data_vol[0]) == data_dir
         and (not lock.startswith('file://') or lock[7:].startswith(data_dir + '/')), (data_vol, data_dir, lock)),
        ('with a file:// lock both pods must share a node (podAffinity on the host name)',
         not lock.startswith('file://') or any(a.get('topologyKey') == 'kubernetes.io/hostname' for a in affinity),
         affinity),
        ('each pod advertises the name the headless service gives it',
         bool(headless) and sts['spec']['serviceName'] == headless[0]['metadata']['name']
         and f'.{headless[0]["metadata"]["name"]}.' in settings.get('kvcm.service.advertised_host', ''),
         settings.get('kvcm.service.advertised_host')),
        ('its container ports are the ports its config listens on', set(ports.values()) == want_ports,
         (ports, want_ports)),
        ('the Services target those ports', services_ok, [s['spec']['ports'] for s in kinds['Service']]),
        ('readiness and liveness probe /api/healthy on the admin port, over TLS when the port has it',
         len(probes) == 2 and all(p and p[0] in image_packages and f'{scheme}://127.0.0.1:{admin}/api/healthy' in p
                                  for p in probes), (probes, image_packages)),
        ('it runs as the image\'s non-root user', sc.get('runAsNonRoot') and str(sc.get('runAsUser')) == image_user,
         sc),
        ('the Secrets are mounted read-only and not world-readable',
         all(m.get('readOnly') for m in c['volumeMounts'] if m['mountPath'] == env.get('CREDENTIALS_DIRECTORY'))
         and all(not (v.get('projected', v.get('secret', {})).get('defaultMode', 0o644) & 0o007)
                 for v in volumes.values() if 'projected' in v or 'secret' in v), volumes),
        ('they hold every file its config names in $CREDENTIALS_DIRECTORY',
         {os.path.join(env.get('CREDENTIALS_DIRECTORY', ''), n) for n in credential_names(conf)} <= set(secrets),
         (credential_names(conf), secrets)),
        ('the image\'s entrypoint with the StatefulSet\'s args and config passes --check-config',
         *check_config(argv, {k: v for k, v in env.items() if k == 'CREDENTIALS_DIRECTORY'}, root)),
    ]


def main():
    global yaml
    try:
        import yaml
    except ImportError:
        print('1..0 # SKIP reading the manifests needs PyYAML (Debian package python3-yaml)')
        return 0
    root = tempfile.mkdtemp(prefix='mmc-deploy-')
    try:
        checks, entry, user, image_packages = container_checks(os.path.join(root, 'container'))
        checks += kubernetes_checks(os.path.join(root, 'kubernetes'), entry, user, image_packages)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return report(checks)


if __name__ == '__main__':
    sys.exit(main())
