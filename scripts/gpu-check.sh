#!/usr/bin/env bash
# scripts/gpu-check.sh: the driver tier on a real NVIDIA machine (CI never needs it).
#
#   1. builds the library, the command and the helper (BUILD_DIR, default build-gpu);
#   2. prints what `ucxtls probe --save` records (each GPU's UUID as CUDA reports it, checked
#      against /proc/driver/nvidia/gpus/*/information), and the kernel tier's and the driver tier's
#      decisions (their UCXTLS_DEBUG=1 lines), CUDA_VISIBLE_DEVICES ordinals and GPU- prefixes
#      applied to the saved list;
#   3. proves that a process with the driver tier never mapped libcuda, and can still fork a child
#      that initialises CUDA (cuInit(0) == 0 in the child), which a process that had called cuInit
#      itself cannot (shown for contrast, not checked);
#   4. the data path (tests/ze/datapath.py): the NIXL-like consumer (tests/ze/nixl_like.c)
#      registers this GPU's real device memory (cuMemAlloc) the way NIXL's UCX backend does
#      (ucp_mem_map without a memory type, ucp_mem_query, refused when UCX says host), and two
#      Python trainer processes put and get it over loopback, every byte checked through the
#      driver (cuMemcpyDtoH), with the library's value, without it (prime-rl's setdefault list),
#      with sm,self,tcp,cuda_copy and with the other family's sm,self,tcp,ze_copy (host: refused;
#      forced on, the transfer fails), UCXTLS_TEMPLATE and UCXTLS_REPAIR; ucx_perftest -m cuda;
#      then the same table as the ze tests print for the fake Intel GPU. It needs:
#        - a UCX built with this GPU's support (Debian's has none): GPU_CHECK_UCX=<prefix> (HPC-X,
#          a site's build: <prefix>/lib/libucp.so and <prefix>/include/ucp), or else RAPIDS'
#          libucx-cu12 wheel (CUDA, headers included) from the venv scripts/test.sh installed
#          (tests/wheels/install_wheels.sh): GPU_CHECK_WHEELS=<venv>, else UCXTLSTEST_WHEELS, else
#          the cached venv if install_wheels.sh finds one. A lent machine reaches no registry:
#          carry the venv over (it is a plain directory; keep its path);
#        - the real driver (libcuda.so.1, checked in step 0), python3 and a C compiler.
#      What is absent is a SKIP line with the reason, not a failure;
#   5. the seed's mechanism through real NIXL (tests/nixl/test_nixl.py, its cells tagged `node`): NIXL
#      1.5.1 from the wheels' venv (GPU_CHECK_WHEELS, as for step 4) registers this GPU's memory as
#      VRAM and moves it between two trainer processes; a trainer hard-coding the Intel list is
#      refused by NIXL without the library and works with it, the CUDA trainer either way, a kept
#      list of the other family fails and is repaired by UCXTLS_REPAIR=1; the same table as the
#      nixl test prints. SKIP without the venv;
#   6. exits 0 when every check passed, 1 when one failed, 2 when this is no NVIDIA machine.
#
# GPU_CHECK_FAKE=1 runs the same steps on the test fakes and a fixture node (no GPU needed): it
# checks the script, not a driver. Step 5 then runs on the fake CUDA driver of tests/cuda and the
# dgx fixture, as the nixl test does. Step 4 then runs on the fake Intel GPU of tests/ze under
# Debian's Level Zero loader, replaying the iwarp fixture, with a UCX built with Level Zero
# (GPU_CHECK_UCX, or UCXTLSTEST_UCX_ZE: no registry serves one, so it is a SKIP without).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-gpu}
passed=0
failed=0
tally() {  # tally WHAT PREFIX STATUS OUTPUT: prints a script's output, adds its "PREFIX N passed, N failed"
  local what=$1 prefix=$2 rc=$3 out=$4 p f
  echo "$out"
  p=$(sed -n "s/^$prefix\([0-9]*\) passed.*/\1/p" <<<"$out")
  f=$(sed -n "s/^$prefix[0-9]* passed, \([0-9]*\) failed.*/\1/p" <<<"$out")
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-0}))
  # 77: every case skipped (the harness's SKIP status), its SKIP lines printed above
  [ "$rc" = 0 ] || [ "$rc" = 77 ] || [ "${f:-0}" != 0 ] || { failed=$((failed + 1)); echo "FAIL $what did not finish (exit $rc)"; }
}
check() {  # check NAME COMMAND...: runs the command, counts and prints the result
  local name=$1
  shift
  if "$@"; then
    passed=$((passed + 1)); echo "ok   $name"
  else
    failed=$((failed + 1)); echo "FAIL $name"
  fi
}

# --- 0. Is this an NVIDIA machine?
extra_env=()
fixture=""  # the replayed machine's root in the self-test; this machine's / otherwise
if [ "${GPU_CHECK_FAKE:-}" = 1 ]; then
  echo "gpu-check: SELF-TEST on the test fakes and the dgx fixture: no real driver is asked"
else
  if [ ! -e /dev/nvidiactl ] || ! /sbin/ldconfig -p 2>/dev/null | grep -q ' libcuda\.so\.1 '; then
    echo "gpu-check: not an NVIDIA machine (need /dev/nvidiactl and libcuda.so.1 in the ld.so cache); nothing checked" >&2
    exit 2
  fi
  command -v nvidia-smi >/dev/null && nvidia-smi -L
fi

# --- 1. Build.
echo "== build ($BUILD_DIR)"
with_tests=OFF
[ "${GPU_CHECK_FAKE:-}" = 1 ] && with_tests=ON  # the fakes are built by the tests
cmake -S . -B "$BUILD_DIR" -DUCXTLS_TESTS=$with_tests >/dev/null && cmake --build "$BUILD_DIR" -j "$(nproc)" >/dev/null ||
  { echo "gpu-check: build failed" >&2; exit 1; }
LIB=$(realpath "$BUILD_DIR/libucxtls.so")
HELPER=$(realpath "$BUILD_DIR/ucxtls-probe")
if [ "${GPU_CHECK_FAKE:-}" = 1 ]; then
  python3 tests/fixtures/machines.py "$BUILD_DIR/gpu-check-fixture" dgx >/dev/null
  fixture=$(realpath "$BUILD_DIR/gpu-check-fixture/dgx")
  uuids=$(sed -n 's/^GPU UUID:[[:space:]]*//p' "$fixture"/proc/driver/nvidia/gpus/*/information | head -2 | paste -sd,)
  extra_env=(LD_LIBRARY_PATH="$(realpath "$BUILD_DIR/tests/driver/fakes/cuda")" FAKE_CUDA_COUNT=2
             FAKE_CUDA_UUIDS="$uuids" UCXTLS_SYSROOT="$fixture")
fi
UCXTLS=$(realpath "$BUILD_DIR/ucxtls")
cache=$(realpath "$BUILD_DIR")/gpu-check-cache
rm -rf "$cache"
# A user template: the family is decided even without an RDMA device (the default template would
# leave UCX_TLS unset there, and no GPU probe would run).
base_env=(env -u UCX_TLS -u UCXTLS_DERIVED -u UCXTLS_DISABLE -u UCXTLS_ACCEL -u CUDA_VISIBLE_DEVICES
          "${extra_env[@]}" UCXTLS_TEMPLATE='tcp,{copy}' UCXTLS_DEBUG=1 UCXTLS_CACHE_DIR="$cache")

# --- 2. What each tier says.
echo "== ucxtls-probe (the helper, run by hand)"
report=$("${base_env[@]}" "$HELPER")
echo "$report"
cuda_line=$(grep '^cuda ' <<<"$report")
check "the CUDA driver API answers with at least one device ($cuda_line)" \
  grep -Eq '^cuda answer [1-9][0-9]* 0 ' <<<"$report"
echo "== ucxtls probe --save"
"${base_env[@]}" "$UCXTLS" probe --save
check "ucxtls probe --save saved the answer for this node" grep -q '^end$' "$cache/driver"
proc_uuids=$(sed -n 's/^GPU UUID:[[:space:]]*//p' "$fixture"/proc/driver/nvidia/gpus/*/information 2>/dev/null | sort)
saved_uuids=$(sed -n 's/^cuda-device [0-9]* \(GPU-[^ ]*\).*/\1/p' "$cache/driver" | sort)
echo "saved UUIDs: $(paste -sd' ' <<<"$saved_uuids"); /proc: $(paste -sd' ' <<<"$proc_uuids")"
check "every UUID CUDA reported is a GPU UUID of /proc/driver/nvidia/gpus (the GPU- prefixes apply)" \
  test -n "$saved_uuids" -a -z "$(comm -23 <(echo "$saved_uuids") <(echo "$proc_uuids"))"
first_uuid=$(head -1 <<<"$saved_uuids")

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
for tier in kernel driver; do
  echo "== UCXTLS_PROBE=$tier"
  t0=$(date +%s%N)
  line=$("${base_env[@]}" UCXTLS_PROBE=$tier LD_PRELOAD="$LIB" /bin/true 2>&1)
  echo "$line  [$(ms "$t0") ms for /bin/true]"
  check "$tier tier: UCX_TLS=tcp,cuda_copy" grep -q 'set UCX_TLS=tcp,cuda_copy' <<<"$line"
  line=$("${base_env[@]}" UCXTLS_PROBE=$tier CUDA_VISIBLE_DEVICES= LD_PRELOAD="$LIB" /bin/true 2>&1)
  echo "$line"
  check "$tier tier with CUDA_VISIBLE_DEVICES='': no cuda_copy" grep -q 'set UCX_TLS=tcp:' <<<"$line"
done
line=$("${base_env[@]}" UCXTLS_PROBE=driver LD_PRELOAD="$LIB" /bin/true 2>&1)
check "driver tier: the saved driver answer decided CUDA (not the kernel)" \
  grep -Eq 'cuda: driver API: [1-9][0-9]* device\(s\) \(CUDA_SUCCESS\)' <<<"$line"
for cvd in 0 "${first_uuid:0:12}" GPU-ffffffff 99; do
  line=$("${base_env[@]}" UCXTLS_PROBE=driver CUDA_VISIBLE_DEVICES="$cvd" LD_PRELOAD="$LIB" /bin/true 2>&1)
  echo "$line"
  case $cvd in
    0 | GPU-[0-9a-e]*) check "driver tier, CUDA_VISIBLE_DEVICES=$cvd: 1 visible, cuda_copy" grep -q 'set UCX_TLS=tcp,cuda_copy.*, 1 visible' <<<"$line" ;;
    *) check "driver tier, CUDA_VISIBLE_DEVICES=$cvd: none visible, no cuda_copy" grep -q 'set UCX_TLS=tcp:.*, 0 visible' <<<"$line" ;;
  esac
done

# --- 3. Fork safety.
echo "== fork after the driver tier"
cat >"$BUILD_DIR/gpu-fork-check.c" <<'EOF'
/* Run with libucxtls.so preloaded and UCXTLS_PROBE=driver: the constructor has read the driver's
   saved answer before main. Then: libcuda must not be mapped here, and a forked child must
   initialise CUDA. With --init-first, this process calls cuInit itself before fork (the contrast). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int cuda_init(int *count) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return -1;
  int (*init)(unsigned) = (int (*)(unsigned))dlsym(lib, "cuInit");
  int (*get_count)(int *) = (int (*)(int *))dlsym(lib, "cuDeviceGetCount");
  if (!init || !get_count) return -2;
  int rc = init(0);
  if (rc == 0 && count) rc = get_count(count);
  return rc;
}

int main(int argc, char **argv) {
  int init_first = argc > 1 && !strcmp(argv[1], "--init-first");
  char line[4096];
  int mapped = 0;
  FILE *maps = fopen("/proc/self/maps", "r");
  while (maps && fgets(line, sizeof line, maps)) mapped |= strstr(line, "libcuda") != NULL;
  if (maps) fclose(maps);
  const char *tls = getenv("UCX_TLS");
  printf("parent: UCX_TLS=%s, libcuda mapped before main: %s\n", tls ? tls : "(unset)", mapped ? "yes" : "no");
  if (init_first) printf("parent: cuInit(0) in this process first = %d\n", cuda_init(NULL));
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int n = -1, rc = cuda_init(&n);
    printf("child:  cuInit(0) + cuDeviceGetCount = %d, %d device(s)\n", rc, n);
    fflush(stdout);
    _exit(rc == 0 && n > 0 ? 0 : 1);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  int ok = !mapped && tls && strstr(tls, "cuda_copy") && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  return ok ? 0 : 1;
}
EOF
cc -O1 -o "$BUILD_DIR/gpu-fork-check" "$BUILD_DIR/gpu-fork-check.c" -ldl || { echo "gpu-check: cannot compile the fork check" >&2; exit 1; }
check "a process with the driver tier: libcuda never mapped, and its forked child initialises CUDA" \
  "${base_env[@]}" UCXTLS_DEBUG= UCXTLS_PROBE=driver LD_PRELOAD="$LIB" "$BUILD_DIR/gpu-fork-check"
echo "-- contrast (not a check): the parent calls cuInit itself before fork; CUDA says the child may not use it"
"${base_env[@]}" UCXTLS_DEBUG= UCXTLS_PROBE=kernel LD_PRELOAD="$LIB" "$BUILD_DIR/gpu-fork-check" --init-first || true

# --- 4. The data path: the NIXL-like consumer on real device memory.
echo "== the data path (NIXL's registration and transfers, tests/ze/datapath.py)"
skipped=0
skip() { skipped=$((skipped + 1)); echo "SKIP $1: $2"; }
datapath_env=()
if [ "${GPU_CHECK_FAKE:-}" = 1 ]; then
  gpu=ze
  ucx=${GPU_CHECK_UCX:-${UCXTLSTEST_UCX_ZE:-}}
  python3 tests/fixtures/machines.py "$BUILD_DIR/gpu-check-fixture" iwarp >/dev/null
  datapath_env=(ZE_ENABLE_ALT_DRIVERS="$(realpath "$BUILD_DIR/tests/ze/libze_fake_gpu.so")"
                UCXTLS_SYSROOT="$(realpath "$BUILD_DIR/gpu-check-fixture/iwarp")")
  [ -n "$ucx" ] || why="no UCX with Level Zero (no registry serves one): set GPU_CHECK_UCX or UCXTLSTEST_UCX_ZE to a site's build"
else
  gpu=cuda
  ucx=${GPU_CHECK_UCX:-}
  venv=${GPU_CHECK_WHEELS:-${UCXTLSTEST_WHEELS:-}}
  [ -n "$venv" ] || venv=$(UCXTLSTEST_WHEEL_PYTHON=/nonexistent tests/wheels/install_wheels.sh 2>/dev/null)  # cached only
  site=$(ls -d "$venv"/lib/python3*/site-packages 2>/dev/null | head -1)
  if [ -z "$ucx" ] && [ -n "$site" ] && [ -x "$site/libucx/bin/ucx_info" ]; then
    ucx=$site/libucx
  elif [ -z "$ucx" ]; then
    why="no UCX with CUDA support: set GPU_CHECK_UCX=<prefix>, or GPU_CHECK_WHEELS=<the venv tests/wheels/install_wheels.sh made> (RAPIDS' libucx-cu12)"
  fi
fi
if [ -z "$ucx" ]; then
  skip "the data path" "$why"
elif ! command -v python3 >/dev/null || ! command -v cc >/dev/null; then
  skip "the data path" "needs python3 and cc"
else
  echo "UCX: $ucx ($(LD_LIBRARY_PATH=$ucx/lib "$ucx/bin/ucx_info" -v 2>/dev/null | sed -n 's/^# Library version: //p'))"
  out=$(env "${datapath_env[@]}" python3 tests/ze/datapath.py gpu-check --ucx "$ucx" --lib "$LIB" --gpu "$gpu" 2>&1)
  tally "the data path" "datapath: " $? "$out"
fi

# --- 5. The seed's mechanism through real NIXL (the wheels' venv carried over: no registry here).
echo "== NIXL 1.5.1 on this GPU (tests/nixl/test_nixl.py --tag node)"
venv=${GPU_CHECK_WHEELS:-${UCXTLSTEST_WHEELS:-}}
[ -n "$venv" ] || venv=$(UCXTLSTEST_WHEEL_PYTHON=/nonexistent tests/wheels/install_wheels.sh 2>/dev/null)  # cached only
if [ -z "$venv" ] || [ ! -x "$venv/bin/python" ]; then
  skip "NIXL on this GPU" "no venv of the wheels: set GPU_CHECK_WHEELS=<the venv tests/wheels/install_wheels.sh made>"
else
  real=1
  [ "${GPU_CHECK_FAKE:-}" = 1 ] && real=0
  out=$(UCXTLSTEST_WHEELS=$venv UCXTLSTEST_NIXL_REAL=$real UCXTLSTEST_LIB=$(realpath "$LIB") \
        UCXTLSTEST_BUILD_DIR=$(realpath "$BUILD_DIR") UCXTLSTEST_CLI=$(realpath "$BUILD_DIR/ucxtls") \
        python3 tests/nixl/test_nixl.py --tag node 2>&1)
  tally "the NIXL cells" "[0-9]* cases; " $? "$out"
fi

echo "gpu-check: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
