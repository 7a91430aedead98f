#!/usr/bin/python3
"""What `meson install` gives a head node besides the binaries: the systemd unit of mmc-metaserver, with the
hardening docs/operations.md promises, and the man pages mmc-metaserver(8) and mmc(3), installed where man finds them.
usage: install_units.py BUILD_DIR SOURCE_ROOT"""
import json
import os
import shutil
import subprocess
import sys

import tap


def main():
    build, root = sys.argv[1], sys.argv[2]
    installed = json.loads(subprocess.run(["meson", "introspect", "--installed", build], check=True,
                                          capture_output=True, text=True).stdout)
    dests = list(installed.values())
    unit_src = [k for k in installed if k.endswith("mmc-metaserver.service")]
    checks = [("the unit is installed under lib/systemd/system",
               any(d.endswith("lib/systemd/system/mmc-metaserver.service") for d in dests), dests),
              ("mmc-metaserver(8) is installed", any(d.endswith("man8/mmc-metaserver.8") for d in dests), dests),
              ("mmc(3) is installed", any(d.endswith("man3/mmc.3") for d in dests), dests)]
    unit = open(unit_src[0]).read() if unit_src else ""
    for line in ("Type=notify", "NotifyAccess=main", "DynamicUser=yes", "StateDirectory=mmc-metaserver",
                 "ProtectSystem=strict", "Restart=on-failure", "--data-dir ${STATE_DIRECTORY}"):
        checks.append((f"the unit has {line}", line in unit, ""))
    checks.append(("ExecStart names the installed binary",
                   any(l.startswith("ExecStart=/") and "/mmc-metaserver " in l for l in unit.splitlines()), ""))
    for page, section in (("mmc-metaserver.8", "8"), ("mmc.3", "3")):
        text = open(os.path.join(root, "man", page)).read()
        checks.append((f"{page} is a section {section} page with NAME and SEE ALSO",
                       f'.TH {page.split(".")[0].upper()} {section} ' in text and ".SH NAME" in text
                       and ".SH SEE ALSO" in text, ""))
    if shutil.which("systemd-analyze") and unit_src:
        r = subprocess.run(["systemd-analyze", "verify", "--man=no", unit_src[0]], capture_output=True, text=True)
        bad = [l for l in r.stderr.splitlines() if "mmc-metaserver.service" in l and "Command " not in l]
        checks.append(("systemd-analyze verify finds nothing wrong in the unit", not bad, bad))
    return tap.report(checks)


if __name__ == "__main__":
    sys.exit(main())
