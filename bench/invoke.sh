#!/usr/bin/env bash
# bench/invoke.sh - arenad vs LiteRT per model (see bench/invoke.c): sets up LiteRT's reference
# runner from bench/ref (a copy of the team's LiteRT runner) in a temporary directory (npm ci), then runs bench/invoke with --ref,
# which alternates the two engines on the same input and prints median ms, ratio and GFLOP/s.
#
#   bench/invoke.sh [bench/invoke options] [MODEL_STEM ...]
# Environment: AR_BUILD_DIR (build dir holding bench/invoke, default <repo>/build),
#              AR_REF (reference runner sources, default <repo>/bench/ref).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${AR_BUILD_DIR:-$ROOT/build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
REF_SRC="${AR_REF:-$ROOT/bench/ref}"
BIN="$BUILD/bench/invoke"
[ -x "$BIN" ] || { echo "bench/invoke.sh: $BIN not built (make bench/invoke in $BUILD)" >&2; exit 1; }
[ -f "$REF_SRC/run_ref.mjs" ] || { echo "bench/invoke.sh: no reference runner in $REF_SRC" >&2; exit 1; }
command -v node >/dev/null || { echo "bench/invoke.sh: node not found" >&2; exit 1; }
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
cp -r "$REF_SRC" "$SCRATCH/ref"
(cd "$SCRATCH/ref" && npm ci --no-audit --no-fund --silent >/dev/null)
export AR_MODELS_DIR="${AR_MODELS_DIR:-$ROOT/models}" AR_GOLDEN_DIR="${AR_GOLDEN_DIR:-$ROOT/tests/golden}"
"$BIN" --ref "$SCRATCH/ref" "$@"
