#!/usr/bin/env bash
# mmc quick start.
#   ./quickstart.sh        install what is missing (Debian 12), build, run mmc-metaserver plus the put/get demo
#   ./quickstart.sh test   install what is missing, build, run the whole test suite; prints "N passed, N failed"
set -euo pipefail
cd "$(dirname "$0")"

PKGS=(meson ninja-build pkg-config gcc g++ libc6-dev libfabric-dev libnanopb-dev nanopb libprotobuf-c-dev
      redis-server libhiredis-dev
      protobuf-c-compiler liblmdb-dev libevent-dev libjansson-dev libcriterion-dev curl python3
      libssl-dev openssl
      python3-numpy python3-torch libnghttp2-dev python3-grpcio python3-grpc-tools
      clang libfuzzer-14-dev lmdb-utils iproute2 python3-yaml
      python3-matplotlib)  # examples/python/prefix_demo.py --plot only

install_missing() {
    local missing=() sudo=()
    for p in "${PKGS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    echo "== installing: ${missing[*]}"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# MMC_BUILD_DIR and MMC_MESON_OPTIONS pick another build (.ci/run's sanitizer build: build-san)
B=${MMC_BUILD_DIR:-build}

build() {
    # shellcheck disable=SC2086
    [ -f "$B/build.ninja" ] || meson setup "$B" --wrap-mode=nodownload ${MMC_MESON_OPTIONS:-} >/dev/null
    meson compile -C "$B" >/dev/null
    echo "== built: $B/lib/libmmc.so.0, $B/metaserver/mmc-metaserver, $B/examples/mmc-quickstart"
}

demo() {
    DEMO_DIR=$(mktemp -d /tmp/mmc-demo-XXXXXX)
    local dir=$DEMO_DIR
    ./build/metaserver/mmc-metaserver --data-dir "$dir/data" >"$dir/ready" 2>"$dir/metaserver.log" &
    META_PID=$!
    trap 'kill $META_PID 2>/dev/null; wait $META_PID 2>/dev/null; rm -rf "$DEMO_DIR"' EXIT
    for _ in $(seq 50); do grep -q ready "$dir/ready" 2>/dev/null && break; sleep 0.1; done
    if ! grep -q ready "$dir/ready"; then
        echo "== mmc-metaserver did not start (is port 5000 taken?):" >&2
        cat "$dir/metaserver.log" >&2
        exit 1
    fi
    echo "== $(cat "$dir/ready")"
    export MMC_PROTOCOL=${MMC_PROTOCOL:-host_tcp}
    echo "== writer and reader are two processes; the block moves by one-sided RMA over $MMC_PROTOCOL"
    ./build/examples/mmc-quickstart writer &
    local writer=$!
    ./build/examples/mmc-quickstart reader
    wait $writer
    echo "== mmc-metaserver log:"
    sed 's/^/   /' "$dir/metaserver.log"
}

run_tests() {
    local rc=0
    meson test -C "$B" --print-errorlogs --num-processes 2 ${MMC_TEST_ARGS:-} || rc=$?
    /usr/bin/python3 - "$B/meson-logs/testlog.json" <<'PY'
import json, re, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
    t = json.loads(line)
    sub = re.findall(r'^(ok|not ok)\b(.*)$', t.get('stdout') or '', re.M)
    if sub and t['result'] in ('OK', 'FAIL'):
        for verdict, rest in sub:
            if verdict == 'not ok':
                failed += 1
            elif re.search(r'#\s*SKIP', rest, re.I):
                skipped += 1
            else:
                passed += 1
        if t['result'] == 'FAIL' and all(v != 'not ok' for v, _ in sub): failed += 1
    elif t['result'] in ('OK', 'EXPECTEDFAIL'):
        passed += 1
    elif t['result'] == 'SKIP':
        skipped += 1
    else:
        failed += 1
print(f"{passed} passed, {failed} failed")
if skipped:
    print(f"({skipped} skipped: not counted as passed; meson-logs/testlog.txt says why)")
PY
    return $rc
}

install_missing
build
case "${1:-demo}" in
    demo) demo ;;
    test) run_tests ;;
    *) echo "usage: $0 [demo|test]" >&2; exit 2 ;;
esac
