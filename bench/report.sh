#!/usr/bin/env bash
# Runs every benchmark behind docs/performance.md and keeps the raw output.
#   bench/report.sh [BUILD_DIR] [OUT_DIR]     (defaults: build, bench-results)
# Takes about 15 minutes on 2 vCPUs. Build with -Dbuildtype=release first.
set -euo pipefail
B=${1:-build}/bench/mmc-bench
OUT=${2:-bench-results}
mkdir -p "$OUT"
run() { local name=$1; shift; echo "== $name: mmc-bench $*"; "$B" "$@" >"$OUT/$name.txt" 2>&1 || echo "   FAILED (see $OUT/$name.txt)"; }
uname -a >"$OUT/machine.txt"; lscpu >>"$OUT/machine.txt"; pkg-config --modversion libfabric >>"$OUT/machine.txt"
# issue 2 and the goals: 64 KiB and 1 MiB, batch 16, sync on and off, three runs for the spread
for i in 1 2 3; do run "headline-$i" data --sizes 64K,1M --batch 16 --sync both --seconds 1; done
# issue 3: DeepSeek-R1 shape, batch 8/16/32, and the same bytes as one buffer per key
run dsr1 data --shape dsr1 --batch 8,16,32 --seconds 1
# how cost grows with block size and batch size
run sizes data --sizes 4K,16K,64K,256K,1M,4M --batch 16 --no-redis --seconds 1
run batches data --sizes 1M --batch 1,4,16,64 --no-redis --seconds 1
# local services (targets) and client threads
for n in 1 2 4; do run "targets-$n" data --sizes 1M --batch 16 --targets "$n" --no-redis --no-raw --seconds 1; done
run threads-2 data --sizes 1M --batch 16 --threads 2 --no-raw --seconds 1
run procs-2 data --sizes 1M --batch 16 --procs 2 --no-raw --no-redis --seconds 1
# meta server: keys/s as the index grows (issue 3: batch_is_exist of 1024 keys)
run meta meta --keys 1K,10K,100K,1M --sync both --seconds 1
# issue 4: layer-wise GVA copies vs the layer calls
run gva gva --sync both --seconds 1
# issue 12: verify_checksum on against off, rounds alternated in each run
for i in 1 2 3; do run "checksum-$i" data --sizes 64K,1M --batch 16 --checksum both --no-redis --no-raw --seconds 2; done
