#!/usr/bin/env bash
# mmc quick start.
#   ./quickstart.sh        install what the build needs (Debian 12), build, run mmc-metaserver plus the put/get demo
#   ./quickstart.sh test   install that and what the tests need, build, run the whole test suite; prints
#                          "N passed, N failed"
# MMC_PORT_BASE=N moves the demo's five ports to N..N+4 (libmmc, KVCM HTTP, admin, KVCM gRPC, admin gRPC; default
# 5000, 6382, 6492, 6381, 6491); the tests and the soak take free ports of their own and need none.
set -euo pipefail
cd "$(dirname "$0")"

# what building libmmc, mmc-metaserver and the examples needs
BUILD_PKGS=(meson ninja-build pkg-config gcc libc6-dev python3 libfabric-dev libnanopb-dev nanopb libprotobuf-c-dev
            protobuf-c-compiler liblmdb-dev libevent-dev libjansson-dev libssl-dev libhiredis-dev libnghttp2-dev)
# and what the tests need on top: Criterion, C++ (the header test), servers and tools they start, Python modules
TEST_PKGS=(g++ libcriterion-dev redis-server curl openssl python3-numpy python3-torch python3-grpcio python3-grpc-tools
           clang clang-format libfuzzer-14-dev lmdb-utils iproute2 python3-yaml prometheus
           python3-matplotlib)  # examples/python/prefix_demo.py --plot only

INSTALLED=0
install_missing() {
    local missing=() sudo=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    echo "== installing: ${missing[*]}"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    INSTALLED=1
}

# MMC_BUILD_DIR and MMC_MESON_OPTIONS pick another build (.ci/run's sanitizer build: build-san)
B=${MMC_BUILD_DIR:-build}

build() {
    # shellcheck disable=SC2086
    if [ ! -f "$B/build.ninja" ]; then
        meson setup "$B" --wrap-mode=nodownload ${MMC_MESON_OPTIONS:-} >/dev/null
    elif ((INSTALLED)); then  # what was just installed (Criterion, for the tests) must be found again
        meson setup --reconfigure "$B" >/dev/null
    fi
    # quiet when it builds; ninja prints a failure on stdout, so a failed build shows its errors
    if ! meson compile -C "$B" >"$B/compile.log" 2>&1; then
        grep -E -B2 -A6 'error|FAILED' "$B/compile.log" | head -60 >&2
        echo "== the build failed; its whole output is in $B/compile.log" >&2
        exit 1
    fi
    echo "== built: $B/lib/libmmc.so.0, $B/metaserver/mmc-metaserver, $B/examples/mmc-quickstart"
}

# The demo's ports: MMC_PORT_BASE..+4, or the server's defaults.
demo_ports() {
    local base=${MMC_PORT_BASE:-}
    if [ -z "$base" ]; then
        PORTS=(5000 6382 6492 6381 6491)
    elif [[ $base =~ ^[0-9]+$ ]] && ((base >= 1024 && base <= 65531)); then
        PORTS=("$base" $((base + 1)) $((base + 2)) $((base + 3)) $((base + 4)))
    else
        echo "MMC_PORT_BASE=$base: expected a port number from 1024 to 65531 (the demo takes it and the next four)" >&2
        exit 2
    fi
}

demo() {
    demo_ports
    DEMO_DIR=$(mktemp -d /tmp/mmc-demo-XXXXXX)
    local dir=$DEMO_DIR
    "$B/metaserver/mmc-metaserver" --data-dir "$dir/data" --env "ock.mmc.meta_service_url=tcp://127.0.0.1:${PORTS[0]}" \
        --env "kvcm.service.http_port=${PORTS[1]}" --env "kvcm.service.admin_http_port=${PORTS[2]}" \
        --env "kvcm.service.rpc_port=${PORTS[3]}" --env "kvcm.service.admin_rpc_port=${PORTS[4]}" \
        >"$dir/ready" 2>"$dir/metaserver.log" &
    META_PID=$!
    trap 'kill $META_PID 2>/dev/null; wait $META_PID 2>/dev/null; rm -rf "$DEMO_DIR"' EXIT
    # the ready line, or the server's exit (a failed start says why in one line)
    while ! grep -q ready "$dir/ready" 2>/dev/null && kill -0 $META_PID 2>/dev/null; do sleep 0.1; done
    if ! grep -q ready "$dir/ready"; then
        echo "== mmc-metaserver did not start: $(grep -o 'err=.*' "$dir/metaserver.log" | head -1)" >&2
        echo "== (the demo's ports are ${PORTS[*]}; MMC_PORT_BASE=N moves them to N..N+4)" >&2
        cat "$dir/metaserver.log" >&2
        exit 1
    fi
    echo "== $(cat "$dir/ready")"
    printf 'ock.mmc.meta_service_url = tcp://127.0.0.1:%s\n' "${PORTS[0]}" >"$dir/store.conf"
    export MMC_LOCAL_CONFIG_PATH=$dir/store.conf MMC_PROTOCOL=${MMC_PROTOCOL:-host_tcp}
    echo "== writer and reader are two processes; the block moves by one-sided RMA over $MMC_PROTOCOL"
    "$B/examples/mmc-quickstart" writer &
    local writer=$!
    "$B/examples/mmc-quickstart" reader
    wait $writer
    echo "== mmc-metaserver log:"
    sed 's/^/   /' "$dir/metaserver.log"
}

run_tests() {
    local rc=0
    # shellcheck disable=SC2086  # MMC_TEST_ARGS is a list of arguments
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

case "${1:-demo}" in
    demo) install_missing "${BUILD_PKGS[@]}"; build; demo ;;
    test) install_missing "${BUILD_PKGS[@]}" "${TEST_PKGS[@]}"; build; run_tests ;;
    *) echo "usage: $0 [demo|test]" >&2; exit 2 ;;
esac
