#!/usr/bin/env bash
# check_quickstart.sh - README.md's quickstart, as written: the lines of its ```sh block between
# <!-- quickstart ...--> and <!-- /quickstart --> are copied into a script and run (bash -e), so the
# README cannot drift from what works. The first line (./dev build && ./dev models) is the set-up
# `make check` has already done; the others run in a scratch folder whose build/, models/,
# clients/ and examples/ are this build's and this tree's (a fresh clone's layout), with the
# socket /tmp/arenad.sock moved into that folder. Checks what each step must show and that the
# daemon exits 0 after `kill %1`. Skips when models/ lacks the two models (./dev models).
set -u
SRC="${AR_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
BUILD="${AR_BUILDDIR:-$SRC/build}"
fail() { echo "FAIL: $*"; exit 1; }
for m in face_detection_short_range selfie_segmentation; do
  [ -f "$SRC/models/$m.tflite" ] || { echo "models/$m.tflite missing (./dev models): skip"; exit 77; }
done
[ -f /usr/lib/python3/dist-packages/imageio/resources/images/astronaut.png ] || { echo "python3-imageio missing: skip"; exit 77; }
t="$(mktemp -d /tmp/check_quickstart.XXXXXX)"
trap 'kill %1 2>/dev/null; rm -rf "$t"' EXIT
ln -s "$BUILD" "$t/build"
for d in models clients examples; do ln -s "$SRC/$d" "$t/$d"; done
# The block: from the marker to the closing one, without the fences, the set-up line dropped.
awk '/^<!-- quickstart/ { on = 1; next } /^<!-- \/quickstart -->/ { on = 0 } on && !/^```/' "$SRC/README.md" > "$t/block.sh"
[ "$(wc -l < "$t/block.sh")" -ge 5 ] || fail "no quickstart block between the markers in README.md"
head -n 1 "$t/block.sh" | grep -q '^\./dev build && \./dev models' || fail "the quickstart's first line is not the set-up: $(head -n 1 "$t/block.sh")"
{
  echo 'set -e'
  tail -n +2 "$t/block.sh" | sed "s|/tmp/arenad.sock|$t/arenad.sock|g"
  echo 'wait %1 && echo "quickstart: daemon exit 0"'
} > "$t/quickstart.sh"
echo "--- the quickstart as run:"; cat "$t/quickstart.sh"; echo "---"
(cd "$t" && timeout 600 bash "$t/quickstart.sh") > "$t/out" 2>&1
rc=$?
cat "$t/out"
[ $rc -eq 0 ] || fail "the quickstart exited $rc"
grep -q "quickstart: daemon exit 0" "$t/out" || fail "the daemon did not exit 0 after kill %1"
grep -q "detection 1: face score 0.9" "$t/out" || fail "the example found no face"
grep -q "detection 1: label: person" "$t/out" || fail "the example labelled no person"
grep -qE '^people +[0-9]+' "$t/out" || fail "stats showed no share group 'people'"
grep -q "^loaded \(face\|selfie\) from " "$t/out" && fail "the example loaded a model the quickstart had loaded"
echo "PASS: README.md's quickstart runs as written"
