#!/usr/bin/env python3
"""No two headers of the product share a file name.

Every folder is on some include path by name (`#include "log.h"`), so two headers called the same would be picked by
the order of the folders on a path: a silent change of meaning when a meson.build line moves. usage:
unique_headers.py SOURCE_ROOT
"""
import os
import sys


def main():
    root = sys.argv[1]
    seen = {}
    for top in ("include", "common", "lib", "metaserver"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith(".h"):
                    seen.setdefault(f, []).append(os.path.relpath(os.path.join(d, f), root))
    clashes = {k: v for k, v in seen.items() if len(v) > 1}
    print("1..1")
    if clashes:
        print("not ok 1 - header names are unique")
        for name, paths in sorted(clashes.items()):
            print(f"# {name}: {', '.join(sorted(paths))}")
        return 1
    print(f"ok 1 - {len(seen)} header names are unique")
    return 0


if __name__ == "__main__":
    sys.exit(main())
