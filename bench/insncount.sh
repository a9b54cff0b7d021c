#!/usr/bin/env bash
# bench/insncount.sh - executed aarch64 instructions per invoke, arenad against TFLite + XNNPACK,
# under qemu-user on emulated Cortex-A72 (Raspberry Pi 4: NEON, no dot product) and Cortex-A76
# (Pi 5: NEON + sdot/udot), one thread, the same models in one run (issue 29's speed proxy; there
# is no arm64 hardware here - a real board is the final word).
#
#   bench/insncount.sh [--cpus "cortex-a72 cortex-a76"] [--models "m1 m2"] [--n N] [--k K] [--json FILE]
#
# `./dev insncount` runs it after the cross build (build-arm64/). For each model it counts the
# whole process at N and at N+K invokes and prints (count(N+K) - count(N)) / K: the start-up, the
# load and the plan cancel out. arenad runs `arenactl bench MODEL --runs R --warmup 0 --threads 1`
# (build-arm64, its run-time kernel choice from HWCAP/HWCAP2); the reference is
# ../shared/ref/native-arm64/tfl_count (LiteRT f6745779 + XNNPACK 8388bd78, `--xnnpack`, one
# thread; README.md beside it), with `-L fakeroot-<cpu>` so XNNPACK reads that board's
# /proc/cpuinfo. The counter is ../shared/tools/insncount/insncount.c, built here as a TCG plugin.
# Columns: instructions per invoke of each, their ratio (arenad / XNNPACK; < 1 is arenad ahead),
# the model's multiply-accumulates per invoke and arenad's instructions per MAC. The geometric mean
# of the ratios closes each (cpu, model set) block.
#
# Models: ../shared/models (float) and ../shared/models_q (quantized; skipped with a message when
# absent). Environment: AR_CROSS_DIR (default build-arm64), AR_QEMU (default qemu-aarch64).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARED="$(dirname "$ROOT")/shared"
CROSS_DIR="$ROOT/${AR_CROSS_DIR:-build-arm64}"
QEMU="${AR_QEMU:-qemu-aarch64}"
REF_DIR="$SHARED/ref/native-arm64"
CPUS="cortex-a72 cortex-a76"
N=2
K=3
MODELS=""
JSON=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cpus) CPUS="$2"; shift 2 ;;
    --models) MODELS="$2"; shift 2 ;;
    --n) N="$2"; shift 2 ;;
    --k) K="$2"; shift 2 ;;
    --json) JSON="$2"; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "insncount.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done

die() { echo "insncount.sh: $*" >&2; exit 1; }
[ -x "$CROSS_DIR/arenactl" ] || die "no $CROSS_DIR/arenactl: run ./dev cross-check (or ./dev insncount) first"
[ -x "$REF_DIR/tfl_count" ] || die "no reference runner $REF_DIR/tfl_count"
command -v "$QEMU" >/dev/null || die "no $QEMU (apt install qemu-user)"

PLUGIN="$CROSS_DIR/insncount.so"
if [ ! -f "$PLUGIN" ] || [ "$SHARED/tools/insncount/insncount.c" -nt "$PLUGIN" ]; then
  gcc -shared -fPIC -O2 -o "$PLUGIN" "$SHARED/tools/insncount/insncount.c" $(pkg-config --cflags glib-2.0 2>/dev/null) \
    || die "cannot build the insncount plugin"
fi

# The real aarch64 arenactl behind the libtool wrapper, with its library path.
ARENACTL="$CROSS_DIR/.libs/arenactl"
[ -x "$ARENACTL" ] || ARENACTL="$CROSS_DIR/arenactl"
export LD_LIBRARY_PATH="$CROSS_DIR/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# count CPU RUNS PROGRAM...: the plugin's "insns N" for one process.
count() {
  local cpu="$1" runs="$2" who="$3" model="$4" out
  if [ "$who" = arenad ]; then
    out="$("$QEMU" -cpu "$cpu" -plugin "$PLUGIN" "$ARENACTL" bench "$model" --runs "$runs" --warmup 0 \
      --threads 1 2>&1 >/dev/null)" || { echo "fail"; return; }
  else
    out="$("$QEMU" -L "$REF_DIR/fakeroot-${cpu#cortex-}" -cpu "$cpu" -plugin "$PLUGIN" "$REF_DIR/tfl_count" \
      "$model" --xnnpack --runs "$runs" --threads 1 2>&1 >/dev/null)" || { echo "fail"; return; }
  fi
  sed -n 's/^insns \([0-9][0-9]*\).*/\1/p' <<<"$out" | tail -n 1
}

per_invoke() {   # CPU WHO MODEL -> instructions per invoke, or "fail"
  local a b
  a="$(count "$1" "$N" "$2" "$3")"
  b="$(count "$1" "$((N + K))" "$2" "$3")"
  if [[ "$a" =~ ^[0-9]+$ && "$b" =~ ^[0-9]+$ ]]; then echo $(((b - a) / K)); else echo fail; fi
}

macs_of() {   # MACs per invoke, from the host build's arenactl (the same plan on both ISAs)
  local host="$ROOT/build/arenactl"
  [ -x "$host" ] || { echo 0; return; }
  "$host" bench "$1" --runs 1 --warmup 0 --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["macs"])' 2>/dev/null || echo 0
}

float_models=() quant_models=()
if [ -n "$MODELS" ]; then
  for m in $MODELS; do
    if [ -f "$SHARED/models/$m.tflite" ]; then float_models+=("$SHARED/models/$m.tflite")
    elif [ -f "$SHARED/models_q/$m.tflite" ]; then quant_models+=("$SHARED/models_q/$m.tflite")
    else die "no model $m in $SHARED/models or $SHARED/models_q"; fi
  done
else
  for f in "$SHARED"/models/*.tflite; do float_models+=("$f"); done
  if [ -d "$SHARED/models_q" ]; then
    for f in "$SHARED"/models_q/*.tflite; do quant_models+=("$f"); done
  else
    echo "insncount.sh: ../shared/models_q absent: quantized models skipped" >&2
  fi
fi

rows=()
block() {   # CPU SETNAME MODEL...
  local cpu="$1" set="$2"; shift 2
  [ $# -gt 0 ] || return 0
  printf '\n%s, %s models (instructions per invoke, one thread)\n' "$cpu" "$set"
  printf '%-40s %15s %15s %7s %13s %9s\n' model arenad xnnpack ratio macs insn/mac
  local logsum=0 nr=0 m name a x macs ratio ipm
  for m in "$@"; do
    name="$(basename "$m" .tflite)"
    a="$(per_invoke "$cpu" arenad "$m")"
    x="$(per_invoke "$cpu" xnnpack "$m")"
    macs="$(macs_of "$m")"
    ratio="-" ipm="-"
    if [[ "$a" =~ ^[0-9]+$ && "$x" =~ ^[0-9]+$ && "$x" -gt 0 ]]; then
      ratio="$(python3 -c "print(f'{$a/$x:.2f}')")"
      logsum="$(python3 -c "import math; print($logsum + math.log($a/$x))")"
      nr=$((nr + 1))
    fi
    if [[ "$a" =~ ^[0-9]+$ && "$macs" -gt 0 ]]; then ipm="$(python3 -c "print(f'{$a/$macs:.3f}')")"; fi
    printf '%-40s %15s %15s %7s %13s %9s\n' "$name" "$a" "$x" "$ratio" "$macs" "$ipm"
    rows+=("{\"cpu\":\"$cpu\",\"set\":\"$set\",\"model\":\"$name\",\"arenad\":\"$a\",\"xnnpack\":\"$x\",\"macs\":$macs}")
  done
  if [ "$nr" -gt 0 ]; then
    printf '%-40s %15s %15s %7s\n' "geometric mean ($nr models)" "" "" "$(python3 -c "import math; print(f'{math.exp($logsum/$nr):.2f}')")"
  fi
}

for cpu in $CPUS; do
  block "$cpu" float "${float_models[@]}"
  block "$cpu" quantized "${quant_models[@]}"
done
if [ -n "$JSON" ]; then
  (IFS=,; printf '[%s]\n' "${rows[*]}") >"$JSON"
fi
