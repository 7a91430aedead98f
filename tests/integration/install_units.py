#!/usr/bin/python3
"""What `meson install` gives a head node besides the binaries: the systemd units of mmc-metaserver (one cluster, and
the template for one per cluster), with the hardening, credentials and directories docs/operations.md promises, and
the man pages mmc-metaserver(8) and mmc(3), installed where man finds them.
usage: install_units.py BUILD_DIR SOURCE_ROOT"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import tap


COMMON = ["Type=notify", "NotifyAccess=main", "DynamicUser=yes", "ProtectSystem=strict", "PrivateTmp=yes",
          "Restart=on-failure", "RestartPreventExitStatus=2 5 6", "--data-dir ${STATE_DIRECTORY}",
          "#ReadWritePaths=/srv/kvcache"]
CREDENTIALS = ["cluster.token", "admin.password", "redis.password", "tls.key", "tls.key.pass"]
UNITS = {"mmc-metaserver.service": ["StateDirectory=mmc-metaserver", "LogsDirectory=mmc",
                                    "EnvironmentFile=-/etc/default/mmc-metaserver"]
         + [f"LoadCredential={c}:mmc-metaserver.{c}" for c in CREDENTIALS],
         "mmc-metaserver@.service": ["StateDirectory=mmc-metaserver-%i", "LogsDirectory=mmc-%i",
                                     "EnvironmentFile=-/etc/default/mmc-metaserver-%i",
                                     "Environment=MMC_META_CONFIG_PATH=/etc/mmc/metaserver-%i.conf"]
         + [f"LoadCredential={c}:mmc-metaserver@%i.{c}" for c in CREDENTIALS]}


def verify(path, name):
    """systemd-analyze verify's complaints about the unit (a template as an instance of it), but for the binary
    that is not installed here."""
    tmp = tempfile.mkdtemp()
    unit = os.path.join(tmp, name.replace("@.", "@check."))
    shutil.copy(path, unit)
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", unit], capture_output=True, text=True)
    shutil.rmtree(tmp)
    return [l for l in r.stderr.splitlines() if "mmc-metaserver" in l and "Command " not in l]


def main():
    build, root = sys.argv[1], sys.argv[2]
    installed = json.loads(subprocess.run(["meson", "introspect", "--installed", build], check=True,
                                          capture_output=True, text=True).stdout)
    dests = list(installed.values())
    checks = [("mmc-metaserver(8) is installed", any(d.endswith("man8/mmc-metaserver.8") for d in dests), dests),
              ("mmc(3) is installed", any(d.endswith("man3/mmc.3") for d in dests), dests)]
    for name, lines in UNITS.items():
        src = [k for k in installed if k.endswith("/" + name)]
        checks.append((f"{name} is installed under lib/systemd/system",
                       any(d.endswith("lib/systemd/system/" + name) for d in dests), dests))
        unit = open(src[0]).read() if src else ""
        for line in COMMON + lines:
            checks.append((f"{name} has {line}", line in unit, ""))
        checks.append((f"{name}: ExecStart names the installed binary",
                       any(l.startswith("ExecStart=/") and "/mmc-metaserver " in l for l in unit.splitlines()), ""))
        if shutil.which("systemd-analyze") and src:
            bad = verify(src[0], name)
            checks.append((f"systemd-analyze verify finds nothing wrong in {name}", not bad, bad))
    for page, section in (("mmc-metaserver.8", "8"), ("mmc.3", "3")):
        text = open(os.path.join(root, "man", page)).read()
        checks.append((f"{page} is a section {section} page with NAME and SEE ALSO",
                       f'.TH {page.split(".")[0].upper()} {section} ' in text and ".SH NAME" in text
                       and ".SH SEE ALSO" in text, ""))
    return tap.report(checks)


if __name__ == "__main__":
    sys.exit(main())
