#!/usr/bin/env python3
"""The KVCM layers (json < store < model < http < api < grpc) call only downward (docs/architecture.md, "KVCM
layers").

usage: check_layers.py KVCM_SOURCE_DIR LIB...   (the layers' static libraries, the lowest first)

metaserver/kvcm/meson.build compiles each layer with only its own headers and the lower layers' on the include
path, so that `#include "http.h"` in the model does not compile. This checks the two ways past that:
- an include by path ("kvcm/http/http.h", "../http/http.h"): metaserver/ is on every layer's path;
- a call into a layer above through a hand-written declaration: the layers link as one group, which would
  resolve it silently. Every symbol a layer's library uses from another layer must come from one below it.
"""
import os
import re
import subprocess
import sys


def headers(root):
    names = set()
    for _, _, files in os.walk(root):
        names.update(f for f in files if f.endswith(".h"))
    return names


def path_includes(root, names):
    bad = []
    for d, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(d, f)
            with open(path, encoding="utf-8") as src:
                for n, line in enumerate(src, 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if m and "/" in m.group(1) and os.path.basename(m.group(1)) in names:
                        bad.append(f"{os.path.relpath(path, root)}:{n}: includes {m.group(1)} by path")
    return bad


def symbols(lib):
    out = subprocess.run(["nm", "-g", "-P", lib], check=True, capture_output=True, text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2 or parts[0].endswith(":"):
            continue  # "member.o:" headers of the archive
        (used if parts[1] == "U" else defined).add(parts[0])
    return defined, used


def upward_calls(libs):
    layer_of, used_by = {}, []
    for i, lib in enumerate(libs):
        defined, used = symbols(lib)
        for s in defined:
            layer_of.setdefault(s, i)
        used_by.append(used)
    bad = []
    for i, used in enumerate(used_by):
        for s in sorted(used):
            if layer_of.get(s, -1) > i:
                bad.append(f"{os.path.basename(libs[i])} calls {s} of {os.path.basename(libs[layer_of[s]])}")
    return bad


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    root, libs = sys.argv[1], sys.argv[2:]
    bad = path_includes(root, headers(root)) + upward_calls(libs)
    for b in bad:
        print(b)
    print(f"{len(bad)} upward reference(s)" if bad else "the KVCM layers reference only downward")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
