#!/usr/bin/env bash
# scripts/bench.sh: what libucxtls.so costs a process start, measured against the floor.
#
# Builds libucxtls.so (BUILD_DIR, default build-bench; or set BENCH_LIB to measure a given file),
# an empty preload library (tests/perf/empty_preload.c, built libc-only the same way) and the spawn
# harness (scripts/bench_spawn.c), then runs /bin/true under each configuration below and prints
# one markdown table:
#   - wall time: median of ROUNDS interleaved spawns (A B C ... A B C ...), posix_spawn + wait4;
#   - user-space instructions: valgrind --tool=callgrind total for the process (deterministic);
#   - syscalls: strace -f -c total for the process tree; "added" = this config minus the empty
#     library, i.e. exactly what the constructor issues (the loader's work is the same);
#   - minor page faults (median, from wait4) and heap allocations (valgrind --tool=memcheck);
#   - the .so size, and the machine it ran on.
# Every configuration runs in the same fixed, job-like environment (about 40 variables), from an
# empty working directory whose $HOME has no ucx.conf.
#
# Environment: ROUNDS (default 1000 rounds; each round spawns every configuration once),
# BUILD_DIR, BENCH_LIB, CC, BENCH_OUT (also write the table to this file), BENCH_BEFORE (another
# libucxtls.so, such as a build of an older commit: every configuration of the library runs with it
# too, in the same interleaved rounds, on the row below, marked "before").
# Needs: cmake, a C/C++ compiler, python3; valgrind and strace for their columns ("-" without).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
ROUNDS=${ROUNDS:-1000}
BUILD_DIR=${BUILD_DIR:-build-bench}
CC=${CC:-cc}

if [ -z "${BENCH_LIB:-}" ]; then
  cmake -S . -B "$BUILD_DIR" -DUCXTLS_TESTS=OFF >&2
  # Everything, not just the library: the driver tier needs its helper executable beside it.
  cmake --build "$BUILD_DIR" -j "$(nproc 2>/dev/null || echo 2)" >&2
  BENCH_LIB=$top/$BUILD_DIR/libucxtls.so
fi
lib=$(cd "$(dirname "$BENCH_LIB")" && pwd)/$(basename "$BENCH_LIB")

work=$(mktemp -d "${TMPDIR:-/tmp}/ucxtls-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
empty=$work/libempty.so
# The floor: the same link rules as libucxtls.so (CMakeLists.txt), NEEDED libc.so.6 included.
$CC -O2 -fPIC -shared -fvisibility=hidden -fno-asynchronous-unwind-tables -nodefaultlibs \
  -Wl,-z,defs -Wl,-z,now -Wl,-z,relro -Wl,--version-script="$top/shim/libucxtls.map" \
  -o "$empty" tests/perf/empty_preload.c -Wl,--no-as-needed -lc
$CC -O2 -o "$work/bench_spawn" scripts/bench_spawn.c
python3 tests/fixtures/machines.py "$work/m" dgx mi300x intel-busy intel-xe no-rdma no-gpu aws-p5 roce-down \
  container-one-of-eight >/dev/null
# A RoCE node, where the fixtures have one: NVIDIA GPUs, a ConnectX on RoCE with GIDs UCX can use.
roce=
python3 tests/fixtures/machines.py "$work/m" roce-connectx >/dev/null 2>&1 && roce=roce-connectx
# The driver tier reads what `ucxtls probe --save` stored for the node: saved here through the real
# command and helper, asking a fake libcuda.so.1 (tests/driver/fake_cuda.c) that reports 8 GPUs.
mkdir -p "$work/fakes"
$CC -O2 -fPIC -shared -fvisibility=hidden -Wl,-soname,libcuda.so.1 -o "$work/fakes/libcuda.so.1" tests/driver/fake_cuda.c
env -i PATH="$PATH" LD_LIBRARY_PATH="$work/fakes" FAKE_CUDA_COUNT=8 UCXTLS_SYSROOT="$work/m/dgx" \
  UCXTLS_CACHE_DIR="$work/cache" "$(dirname "$lib")/ucxtls" probe --save >&2
mkdir -p "$work/home"
prog=/bin/true
ldso=$(readelf -l "$prog" | sed -n 's/.*interpreter: \(.*\)\]/\1/p')

# A job-like environment: what a launcher, a scheduler and a Python stack leave behind.
BASE_ENV=(PATH=/usr/local/bin:/usr/bin:/bin HOME="$work/home" LANG=C.UTF-8 USER=bench LOGNAME=bench
  SHELL=/bin/bash TERM=xterm PWD="$work/home" HOSTNAME=node0001 LD_LIBRARY_PATH=/opt/ucx/lib:/usr/local/cuda/lib64
  SLURM_JOB_ID=4242 SLURM_JOB_NAME=train SLURM_NODELIST=node[0001-0016] SLURM_NTASKS=128 SLURM_PROCID=7
  SLURM_LOCALID=7 SLURM_CPUS_PER_TASK=8 SLURM_GPUS_ON_NODE=8 OMPI_COMM_WORLD_RANK=7 OMPI_COMM_WORLD_SIZE=128
  OMPI_COMM_WORLD_LOCAL_RANK=7 OMPI_MCA_pml=ucx PMIX_RANK=7 PMIX_NAMESPACE=slurm.pmix.4242.0
  MASTER_ADDR=node0001 MASTER_PORT=29500 RANK=7 WORLD_SIZE=128 LOCAL_RANK=7 OMP_NUM_THREADS=8
  NCCL_IB_HCA=mlx5 NCCL_DEBUG=WARN CUDA_HOME=/usr/local/cuda CUDA_DEVICE_ORDER=PCI_BUS_ID
  CONDA_PREFIX=/opt/conda CONDA_DEFAULT_ENV=base PYTHONPATH=/work/src PYTHONUNBUFFERED=1
  UCX_NET_DEVICES=mlx5_0:1 UCX_LOG_LEVEL=warn HF_HOME=/scratch/hf TORCH_HOME=/scratch/torch
  XDG_RUNTIME_DIR=/run/user/1000 MANPATH=/usr/share/man)

# label | what it measures | variables (LD_PRELOAD first when there is one)
configs=(
  "none|no preload|"
  "empty|empty preload library (the floor)|LD_PRELOAD=$empty"
  "busy|libucxtls.so, fixture dgx (8 NVIDIA GPUs, 8 HCAs), UCXTLS_WRITE=always: derives and sets UCX_TLS|LD_PRELOAD=$lib UCXTLS_SYSROOT=$work/m/dgx UCXTLS_WRITE=always"
  "busy-amd|libucxtls.so, fixture mi300x (8 AMD GPUs, 8 HCAs), UCXTLS_WRITE=always: derives and sets UCX_TLS|LD_PRELOAD=$lib UCXTLS_SYSROOT=$work/m/mi300x UCXTLS_WRITE=always"
  "busy-intel|libucxtls.so, fixture intel-busy (8 Intel GPUs, 8 HCAs), UCXTLS_WRITE=always: derives and sets UCX_TLS|LD_PRELOAD=$lib UCXTLS_SYSROOT=$work/m/intel-busy UCXTLS_WRITE=always"
  "default-dgx|libucxtls.so, fixture dgx, the default: leaves UCX_TLS unset (the CUDA list fits)|LD_PRELOAD=$lib UCXTLS_SYSROOT=$work/m/dgx"
  "default-amd|libucxtls.so, fixture mi300x, the default: writes UCX_TLS=all (no RDMA probe)|LD_PRELOAD=$lib UCXTLS_SYSROOT=$work/m/mi300x"
  "default-intel|libucxtls.so, fixture intel-busy, the default: writes UCX_TLS=all (no RDMA probe)|LD_PRELOAD=$lib UCXTLS_SYSROOT=$work/m/intel-busy"
  "user-set|libucxtls.so, UCX_TLS already set by the user|LD_PRELOAD=$lib UCXTLS_SYSROOT=$work/m/dgx UCX_TLS=rc_x,rc,dc_x,dc,cuda_copy"
  "no-rdma|libucxtls.so, fixture no-rdma (4 GPUs, no HCA): writes UCX_TLS=all|LD_PRELOAD=$lib UCXTLS_SYSROOT=$work/m/no-rdma"
  "aws-p5|libucxtls.so, fixture aws-p5 (8 GPUs, 32 EFA): writes UCX_TLS=all|LD_PRELOAD=$lib UCXTLS_SYSROOT=$work/m/aws-p5"
  "roce-down|libucxtls.so, fixture roce-down (8 GPUs, 64 RoCE functions, ports DOWN): writes UCX_TLS=all|LD_PRELOAD=$lib UCXTLS_SYSROOT=$work/m/roce-down"
  "no-gpu|libucxtls.so, fixture no-gpu (a CPU node, 1 HCA): leaves UCX_TLS unset|LD_PRELOAD=$lib UCXTLS_SYSROOT=$work/m/no-gpu"
  "this-node|libucxtls.so on this machine's own /dev, /sys, /proc|LD_PRELOAD=$lib"
  "driver|libucxtls.so, UCXTLS_PROBE=driver on fixture dgx, UCXTLS_WRITE=always: the answer ucxtls probe --save stored (8 CUDA GPUs)|LD_PRELOAD=$lib UCXTLS_SYSROOT=$work/m/dgx UCXTLS_PROBE=driver UCXTLS_CACHE_DIR=$work/cache UCXTLS_WRITE=always"

  "default-intel-xe|libucxtls.so, fixture intel-xe (2 Intel GPUs on xe, 2 HCAs), the default: writes UCX_TLS=all|LD_PRELOAD=$lib UCXTLS_SYSROOT=$work/m/intel-xe"
  "container|libucxtls.so, fixture container-one-of-eight (one GPU and one HCA of eight), the default: unset|LD_PRELOAD=$lib UCXTLS_SYSROOT=$work/m/container-one-of-eight")

[ -n "$roce" ] && configs+=("default-roce|libucxtls.so, fixture $roce (4 NVIDIA GPUs, a ConnectX on RoCE), the default: unset|LD_PRELOAD=$lib UCXTLS_SYSROOT=$work/m/$roce")
# The same configurations with the library of BENCH_BEFORE, each after its own.
if [ -n "${BENCH_BEFORE:-}" ]; then
  before=$(cd "$(dirname "$BENCH_BEFORE")" && pwd)/$(basename "$BENCH_BEFORE")
  all=()
  for c in "${configs[@]}"; do
    all+=("$c")
    case $c in *"LD_PRELOAD=$lib"*) IFS='|' read -r label what vars <<<"$c"
      all+=("$label@before|$what (before)|${vars/"LD_PRELOAD=$lib"/LD_PRELOAD=$before}") ;; esac
  done
  configs=("${all[@]}")
fi
echo "bench.sh: $ROUNDS interleaved rounds of ${#configs[@]} configurations, then callgrind and strace" >&2
spawn_args=()
for c in "${configs[@]}"; do
  IFS='|' read -r label what vars <<<"$c"
  read -r -a v <<<"$vars"
  spawn_args+=(-c "$label" "${v[@]}")
done
(cd "$work/home" && env -i "${BASE_ENV[@]}" "$work/bench_spawn" -n "$ROUNDS" "${spawn_args[@]}" -- "$prog") >"$work/wall.tsv"

: >"$work/counts.tsv"
for c in "${configs[@]}"; do
  IFS='|' read -r label what vars <<<"$c"
  read -r -a v <<<"$vars"
  other=() preload=() strace_env=()
  for kv in "${v[@]}"; do
    case $kv in
      LD_PRELOAD=*) preload=(--preload "${kv#LD_PRELOAD=}") ;;
      *) other+=("$kv") ;;
    esac
    strace_env+=(-E "$kv")
  done
  ir=- calls=- procs=- heap=-
  if command -v valgrind >/dev/null; then
    # Read the first process's lines (a library that created a process would show more).
    heap=$(cd "$work/home" && env -i "${BASE_ENV[@]}" "${other[@]}" valgrind --tool=memcheck "$ldso" "${preload[@]}" "$prog" 2>&1 >/dev/null |
      awk 'NR == 1 {pid = $1} $1 == pid && /total heap usage/ {gsub(/,/, "", $5); gsub(/,/, "", $9); print $5 " (" $9 " B)"}') || heap=-
    # The loader run as a program with --preload: valgrind's own launcher never sees LD_PRELOAD
    # (it would run the constructor there and hand UCX_TLS down to the measured process).
    rm -f "$work"/cg.*.out
    pid=$(cd "$work/home" && env -i "${BASE_ENV[@]}" "${other[@]}" valgrind --tool=callgrind \
      --callgrind-out-file="$work/cg.%p.out" "$ldso" "${preload[@]}" "$prog" 2>&1 >/dev/null | sed -n '1s/^==\([0-9]*\)==.*/\1/p') &&
      [ -f "$work/cg.$pid.out" ] &&
      ir=$(sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$work/cg.$pid.out" | head -1)
  fi
  if command -v strace >/dev/null; then
    if (cd "$work/home" && env -i "${BASE_ENV[@]}" strace -f -c -o "$work/st.out" "${strace_env[@]}" "$prog" 2>/dev/null); then
      calls=$(awk '$NF == "total" {print $4}' "$work/st.out")
      procs=$(awk '$NF ~ /^(clone|clone3|fork|vfork)$/ {n += $4} END {print n + 1}' "$work/st.out")
    fi
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$what" "$ir" "$calls" "$procs" "${heap:--}" >>"$work/counts.tsv"
done

size_built=$(stat -c %s "$lib")
strip -o "$work/stripped.so" "$lib" 2>/dev/null && size_stripped=$(stat -c %s "$work/stripped.so") || size_stripped=-
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
machine="${cpu:-$(uname -m)}, $(nproc) cores online, Linux $(uname -r), $(getconf GNU_LIBC_VERSION 2>/dev/null || echo 'libc ?'), $($CC --version | head -1)"
tools="$(valgrind --version 2>/dev/null || echo 'no valgrind'), $(strace -V 2>/dev/null | head -1 || echo 'no strace')"

python3 - "$work/wall.tsv" "$work/counts.tsv" "$ROUNDS" "$size_built" "$size_stripped" "$machine" "$tools" \
  "$(date -u +%Y-%m-%d)" <<'EOF' | tee ${BENCH_OUT:+"$BENCH_OUT"}
import sys
wall_f, counts_f, rounds, size_built, size_stripped, machine, tools, day = sys.argv[1:]
wall = {l.split("\t")[0]: l.rstrip("\n").split("\t") for l in open(wall_f) if l.strip()}
rows = [l.rstrip("\n").split("\t") for l in open(counts_f) if l.strip()]
num = lambda s: None if s in ("-", "") else float(s)
med = {k: float(v[2]) for k, v in wall.items()}
ir = {r[0]: num(r[2]) for r in rows}
calls = {r[0]: num(r[3]) for r in rows}
ratio = lambda a, b: "%.3f" % (a / b) if a is not None and b else "-"
fmt = lambda x: "-" if x is None else "{:,}".format(int(x))

print("| config | what | median µs (IQR) | ÷ none | ÷ empty | instructions (callgrind) | ÷ empty | syscalls (strace -f) | added by the constructor | minor faults | heap allocations |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for label, what, _, _, procs, heap in rows:
    w = wall[label]
    added = "-" if calls[label] is None or calls.get("empty") is None or label in ("none", "empty") \
        else "%+d" % (calls[label] - calls["empty"])
    if label == "driver" and procs != "-":
        what += "; no process created" if procs == "1" else "; %s processes (one created!)" % procs
    print("| %s | %s | %s (%s–%s) | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        label, what, w[2], w[3], w[4], ratio(med[label], med["none"]), ratio(med[label], med["empty"]),
        fmt(ir[label]), ratio(ir[label], ir["empty"]), fmt(calls[label]), added, w[6], heap))
print()
print("Machine: %s; %s. %s rounds, %s. libucxtls.so: %s bytes as built, %s stripped." % (
    machine, tools, rounds, day, "{:,}".format(int(size_built)),
    "-" if size_stripped == "-" else "{:,}".format(int(size_stripped))))
print()
def verdict(name, value, limit, unit=""):
    if value is None:
        print("- %s: not measured" % name)
    else:
        print("- %s: %s%s (budget ≤ %s%s) %s" % (name, value, unit, limit, unit, "ok" if float(value) <= limit else "OVER BUDGET"))
have = lambda *k: all(calls.get(x) is not None for x in k)
# The goals (docs/performance.md): the default on each node shape within 16 system calls and
# 1.05 x the empty library's instructions and start time; UCX_TLS set at most one call.
shapes = [l for l in ("default-dgx", "default-roce", "default-amd", "default-intel", "default-intel-xe", "no-gpu",
                      "container") if l in calls]
for label in shapes + [l + "@before" for l in shapes if l + "@before" in calls]:
    verdict("syscalls added, %s" % label, int(calls[label] - calls["empty"]) if have(label, "empty") else None, 16)
for label in ("user-set", "user-set@before"):
    if label in calls:
        verdict("syscalls added, %s (UCX_TLS set)" % label, int(calls[label] - calls["empty"]) if have(label, "empty") else None, 1)
if "driver" in calls:
    verdict("syscalls, driver tier - kernel tier (fixture dgx)", int(calls["driver"] - calls["busy"]) if have("driver", "busy") else None, 6)
for label in shapes + ["user-set"] + [l + "@before" for l in shapes + ["user-set"] if l + "@before" in calls]:
    verdict("instructions, %s ÷ empty" % label, ratio(ir[label], ir["empty"]) if ir.get(label) and ir["empty"] else None, 1.05)
for label in ("default-dgx", "default-dgx@before", "user-set", "user-set@before"):
    if label in med:
        verdict("wall time, %s ÷ empty (median)" % label, ratio(med[label], med["empty"]), 1.05)
EOF
