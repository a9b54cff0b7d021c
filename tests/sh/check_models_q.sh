#!/usr/bin/env bash
# check_models_q.sh - tools/models_q.sh (the body of `./dev models --quant`) on a TSV of its own:
# a file:// URL is downloaded and checked against its sha256, a file already in place is kept, an
# unreachable URL and a wrong sha256 are reported with the reason and the summary names the TSV and
# what to do, and the script exits 1 - leaving the files it could get in place. Also: every row of
# data/models_q.tsv has a https URL, a 64-hex sha256, a byte count and a licence, and the quantized
# models the C tests list (tests/ar_test_util.c) are all in it.
set -u
SRC="${AR_SRCDIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
fail() { echo "FAIL: $*"; exit 1; }
t="$(mktemp -d /tmp/check_models_q.XXXXXX)"
trap 'rm -rf "$t"' EXIT

# data/models_q.tsv is well formed and complete.
rows=0
while IFS=$'\t' read -r file url sha bytes licence extra; do
  case "$file" in ''|'#'*) continue ;; esac
  rows=$((rows + 1))
  [ -z "${extra:-}" ] || fail "$file: more than 5 columns"
  case "$url" in https://*) ;; *) fail "$file: url '$url' is not https" ;; esac
  [[ "$sha" =~ ^[0-9a-f]{64}$ ]] || fail "$file: sha256 '$sha'"
  [[ "$bytes" =~ ^[0-9]+$ ]] || fail "$file: bytes '$bytes'"
  [ -n "$licence" ] || fail "$file: no licence"
done < "$SRC/data/models_q.tsv"
[ "$rows" -eq 16 ] || fail "data/models_q.tsv: $rows rows, expected 12 models + 4 label files"
for stem in $(sed -n '/ar_test_qmodels\[\] = {/,/};/p' "$SRC/tests/ar_test_util.c" | grep -o '"[^"]*"' | tr -d '"'); do
  grep -q "^$stem.tflite"$'\t' "$SRC/data/models_q.tsv" || fail "$stem.tflite (tests/ar_test_util.c) is not in data/models_q.tsv"
done
echo "data/models_q.tsv: $rows rows well formed, every model of the C tests listed"

# A TSV of three rows: reachable (file://), unreachable (a closed port), wrong sha256.
printf 'real model bytes\n' > "$t/good.bin"
printf 'other bytes\n' > "$t/bad.bin"
good_sha="$(sha256sum "$t/good.bin" | cut -d' ' -f1)"
{
  printf '# file\turl\tsha256\tbytes\tlicence\n'
  printf 'good.tflite\tfile://%s\t%s\t17\tApache-2.0\n' "$t/good.bin" "$good_sha"
  printf 'gone.tflite\thttp://127.0.0.1:1/gone.tflite\t%s\t17\tApache-2.0\n' "$good_sha"
  printf 'bad.tflite\tfile://%s\t%s\t17\tApache-2.0\n' "$t/bad.bin" "$good_sha"
} > "$t/q.tsv"
AR_FETCH_CONNECT_TIMEOUT=5 "$SRC/tools/models_q.sh" "$t/q.tsv" "$t/out" 2>"$t/err"
rc=$?
cat "$t/err"
[ $rc -eq 1 ] || fail "exit $rc with two files missing, expected 1"
cmp -s "$t/good.bin" "$t/out/good.tflite" || fail "good.tflite not downloaded"
[ ! -e "$t/out/gone.tflite" ] && [ ! -e "$t/out/bad.tflite" ] && [ ! -e "$t/out/gone.tflite.tmp" ] \
  || fail "a file that failed was left in $t/out"
grep -q "gone.tflite: cannot get http://127.0.0.1:1/gone.tflite: curl: (7)\|gone.tflite: cannot get http://127.0.0.1:1/gone.tflite: .*refused" "$t/err" \
  || fail "no reason for the unreachable URL"
grep -q "bad.tflite: cannot get .*: got sha256 .*, expected $good_sha" "$t/err" || fail "no sha256 reason"
grep -q "2 of 3 files of q.tsv could not be had" "$t/err" || fail "no summary"
grep -q "copy them into $t/out, or point AR_MODELS_Q_DIR" "$t/err" || fail "the summary says nothing to do"

# Run again with the missing rows removed: the file in place is kept, exit 0.
grep -v 'gone\|bad' "$t/q.tsv" > "$t/q1.tsv"
"$SRC/tools/models_q.sh" "$t/q1.tsv" "$t/out" 2>"$t/err1" || { cat "$t/err1"; fail "exit $? with every file in place"; }
grep -q "1 of 1 files of q1.tsv in $t/out, sha256 verified (0 copied, 0 downloaded)" "$t/err1" \
  || { cat "$t/err1"; fail "the kept file was not counted"; }
echo "PASS: models_q.sh downloads, verifies, reports what it cannot get"
