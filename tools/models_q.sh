#!/usr/bin/env bash
# models_q.sh TSV OUT_DIR [SHARED_DIR] - the body of `./dev models --quant`: put every file of TSV
# (data/models_q.tsv: file, url, sha256, bytes, licence) in OUT_DIR, checked against its sha256.
#
# A file already in OUT_DIR with the right sha256 is kept; else it is copied from SHARED_DIR
# (../shared/models_q) when that folder holds it, else downloaded from its URL (curl, else wget;
# http(s) and file:// URLs). A file that cannot be had is reported once with the reason (the
# downloader's own message, e.g. "Could not resolve host"), and the script ends with a summary that
# says what to do instead; exit 0 when every file is in place, 1 otherwise (2: bad arguments).
# Nothing else reads this script's status: `./dev check`, `./dev demo` and the tests run without
# the quantized models (their parts skip with a message).
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: models_q.sh TSV OUT_DIR [SHARED_DIR]" >&2; exit 2; }
TSV="$1"; OUT="$2"; SHARED="${3:-}"
[ -f "$TSV" ] || { echo "models_q.sh: $TSV: no such file" >&2; exit 2; }
mkdir -p "$OUT" || exit 2

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

# fetch URL DEST : download into DEST; on failure print the downloader's reason on stdout.
fetch() {
  local url="$1" dest="$2" err
  if command -v curl >/dev/null; then
    err="$(curl -fsSL --connect-timeout "${AR_FETCH_CONNECT_TIMEOUT:-15}" --max-time 600 -o "$dest" "$url" 2>&1)" \
      && return 0
  elif command -v wget >/dev/null; then
    err="$(wget -q --timeout="${AR_FETCH_CONNECT_TIMEOUT:-15}" -O "$dest" "$url" 2>&1)" && return 0
    [ -n "$err" ] || err="wget failed (exit $?)"
  else
    err="neither curl nor wget is installed"
  fi
  rm -f "$dest"
  printf '%s' "${err:-download failed}" | tr '\n' ' '
  return 1
}

n=0 ok=0 copied=0 fetched=0 failed=()
first_reason=""
while IFS=$'\t' read -r file url sha bytes licence; do
  case "$file" in ''|'#'*) continue ;; esac
  n=$((n + 1))
  dest="$OUT/$file"
  if [ -f "$dest" ] && [ "$(sha_of "$dest")" = "$sha" ]; then ok=$((ok + 1)); continue; fi
  if [ -n "$SHARED" ] && [ -f "$SHARED/$file" ]; then
    cp -f "$SHARED/$file" "$dest.tmp" && chmod 0644 "$dest.tmp"
    if [ "$(sha_of "$dest.tmp")" = "$sha" ]; then
      mv -f "$dest.tmp" "$dest"; ok=$((ok + 1)); copied=$((copied + 1)); continue
    fi
    rm -f "$dest.tmp"
    echo "models_q.sh: $SHARED/$file: sha256 differs from $(basename "$TSV"); downloading it instead" >&2
  fi
  if reason="$(fetch "$url" "$dest.tmp")"; then
    got="$(sha_of "$dest.tmp")"
    if [ "$got" = "$sha" ]; then
      chmod 0644 "$dest.tmp"; mv -f "$dest.tmp" "$dest"
      printf '  %-60s %9s bytes  sha256 ok  (%s)\n' "$file" "$bytes" "$licence" >&2
      ok=$((ok + 1)); fetched=$((fetched + 1)); continue
    fi
    rm -f "$dest.tmp"
    reason="got sha256 $got, expected $sha"
  fi
  echo "models_q.sh: $file: cannot get $url: $reason" >&2
  [ -n "$first_reason" ] || first_reason="$reason"
  failed+=("$file")
done < "$TSV"

if [ ${#failed[@]} -eq 0 ]; then
  echo "models_q.sh: $ok of $n files of $(basename "$TSV") in $OUT, sha256 verified ($copied copied, $fetched downloaded)" >&2
  exit 0
fi
cat >&2 <<EOF
models_q.sh: ${#failed[@]} of $n files of $(basename "$TSV") could not be had (first reason: $first_reason).
  Their URLs could not be reached (or gave other bytes). Download them elsewhere (URL and sha256 of each in
  $TSV) and copy them into $OUT, or point AR_MODELS_Q_DIR at a folder holding them.
  Until then the quantized tests skip and ./dev demo runs without its quantized part;
  nothing else is affected.
EOF
exit 1
