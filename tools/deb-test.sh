#!/usr/bin/env bash
# deb-test.sh DEBDIR - check the built Debian packages without a chroot (body of `./dev deb`).
#
#   1. dpkg -x of each package into one scratch tree: the file list (binaries, units, sysusers
#      and tmpfiles entries, conffile, man pages, header arenad/client.h, library and its links,
#      pkg-config file) and the control data (conffiles, maintainer scripts);
#   2. systemd-analyze verify of the extracted units, with ExecStart= pointing into the tree;
#   3. the extracted programs run: arenad --check-config on the packaged conffile, arenad serving
#      a temporary socket, arenactl (on the extracted libarenaclient) pinging it, loading a real
#      model and invoking it on its golden input (outputs within check_interp's tolerance of the
#      LiteRT golden), and a program compiled against the extracted -dev package (pkg-config with
#      a sysroot) pinging it too;
#   4. dpkg --root into a second scratch tree with the maintainer scripts run chrootless
#      (DPKG_ROOT): packages installed, conffile registered, the arenad user created by
#      systemd-sysusers --root, /var/lib/arenad/models made, the socket enabled and the service
#      not; then purge.
# Prints one line per check; exits 1 on the first failure. Needs no root for 1-3; step 4 runs
# as root only (dpkg --root with scripts), else it says it skipped.
#
# Packages of another architecture than this machine's (`./dev deb --arch arm64`): the extracted
# programs of step 3 run under qemu-user (qemu-aarch64, no binfmt_misc: the host root with the
# :arm64 run-time libraries of `./dev cross-deps` is the guest's sysroot), the -dev test program is
# built with the cross gcc, and the dpkg database of step 4 gets the architecture added.
# Environment: AR_QEMU (default qemu-<cpu of the packages>), AR_DEB_TEST_MODELS (the folder holding
# face_detection_short_range.tflite, default ../shared/models, else models/; the load + invoke
# check is skipped with a message when neither holds it).
set -euo pipefail
# No 'grep -q' at the end of a pipe here: it exits at the first match, the writer dies of SIGPIPE
# and pipefail turns that into a failure (seen: ldd | grep -q).
DEBDIR="$(cd "${1:?usage: deb-test.sh DEBDIR}" && pwd)"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d)"
daemon_pid=""
cleanup() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

n=0
ok() { n=$((n + 1)); printf 'ok %2d  %s\n' "$n" "$*"; }
fail() { printf 'FAIL    %s\n' "$*" >&2; exit 1; }

deb_of() {
  local f
  f="$(ls "$DEBDIR/$1"_*_*.deb 2>/dev/null | grep -v dbgsym | head -n 1)"
  [ -n "$f" ] || fail "no $1_*.deb in $DEBDIR"
  printf '%s\n' "$f"
}

PKGS=(arenad arenactl libarenaclient0 libarenaclient-dev python3-arenad)
declare -A DEB=()
for p in "${PKGS[@]}"; do DEB[$p]="$(deb_of "$p")"; done

# The packages' architecture, and how its programs run here: directly, or under qemu-user.
ARCH="$(dpkg-deb -f "${DEB[arenad]}" Architecture)"
BUILD_ARCH="$(dpkg-architecture -qDEB_BUILD_ARCH)"
MA="$(dpkg-architecture -a "$ARCH" -qDEB_HOST_MULTIARCH 2>/dev/null)"
RUN=()
CC=cc
if [ "$ARCH" != "$BUILD_ARCH" ]; then
  RUN=("${AR_QEMU:-qemu-$(dpkg-architecture -a "$ARCH" -qDEB_HOST_GNU_CPU 2>/dev/null)}")
  command -v "${RUN[0]}" >/dev/null || fail "$ARCH packages: no ${RUN[0]} to run them (apt-get install qemu-user)"
  CC="$(dpkg-architecture -a "$ARCH" -qDEB_HOST_GNU_TYPE 2>/dev/null)-gcc"
  command -v "$CC" >/dev/null || fail "$ARCH packages: no $CC for the -dev test program (./dev cross-deps)"
  echo "        $ARCH packages on $BUILD_ARCH: programs run under ${RUN[0]}, the -dev test program built with $CC"
fi

# ------------------------------------------------------------------------------------------
# 1. Extracted file list and control data
# ------------------------------------------------------------------------------------------
R="$tmp/root"
mkdir -p "$R"
for p in "${PKGS[@]}"; do
  dpkg-deb -x "${DEB[$p]}" "$R"
  mkdir -p "$tmp/ctrl/$p"
  dpkg-deb -e "${DEB[$p]}" "$tmp/ctrl/$p"
done

# expect PKG PATH TEST : PATH (in the scratch root) passes `test TEST` and belongs to PKG's .deb.
expect() {
  local pkg="$1" path="$2" t="$3"
  test "$t" "$R$path" || fail "$pkg: $path missing (test $t)"
  dpkg-deb -c "${DEB[$pkg]}" | awk '{print $6}' | grep -x ".$path" >/dev/null || fail "$path is not in $pkg"
}
expect arenad /usr/sbin/arenad -x
expect arenad /lib/systemd/system/arenad.service -f
expect arenad /lib/systemd/system/arenad.socket -f
expect arenad /usr/lib/sysusers.d/arenad.conf -f
expect arenad /usr/lib/tmpfiles.d/arenad.conf -f
grep -x 'd /var/lib/arenad/models 0750 arenad arenad -' "$R/usr/lib/tmpfiles.d/arenad.conf" >/dev/null \
  || fail "arenad: tmpfiles.d/arenad.conf does not make /var/lib/arenad/models"
expect arenad /etc/arenad/arenad.json -f
expect arenad /usr/share/man/man8/arenad.8.gz -f
expect arenad /usr/share/man/man5/arenad.json.5.gz -f
expect arenad /usr/share/doc/arenad/examples/arenad.json.example -f
expect arenad /usr/share/doc/arenad/copyright -f
expect arenactl /usr/bin/arenactl -x
expect arenactl /usr/share/man/man1/arenactl.1.gz -f
expect libarenaclient0 "/usr/lib/$MA/libarenaclient.so.0" -L
expect libarenaclient0 "/usr/lib/$MA/libarenaclient.so.0" -f
expect libarenaclient-dev /usr/include/arenad/client.h -f
[ ! -e "$R/usr/include/ar_client.h" ] || fail "libarenaclient-dev still installs /usr/include/ar_client.h"
expect libarenaclient-dev "/usr/lib/$MA/libarenaclient.so" -L
expect libarenaclient-dev "/usr/lib/$MA/pkgconfig/arenaclient.pc" -f
expect arenad /lib/systemd/system/arenad-metrics.service -f
expect arenad /lib/systemd/system/arenad-metrics.timer -f
expect arenad /lib/systemd/system-generators/arenad-generator -x
PYDIR=/usr/lib/python3/dist-packages
expect python3-arenad "$PYDIR/arenad/__init__.py" -f
expect python3-arenad "$PYDIR/arenad/client.py" -f
expect python3-arenad "$PYDIR/arenad/arenad_pb2.py" -f
expect python3-arenad /usr/share/doc/python3-arenad/examples/detect_and_classify.py -f
ok "file list: arenad, units (+ metrics service/timer), sysusers and tmpfiles entries, conffile, man pages (1, 5, 8), header arenad/client.h, .so links, arenaclient.pc, Python package arenad + example"

grep -qx /etc/arenad/arenad.json "$tmp/ctrl/arenad/conffiles" || fail "arenad: /etc/arenad/arenad.json is not a conffile"
ok "conffiles: $(tr '\n' ' ' < "$tmp/ctrl/arenad/conffiles")"
grep -q 'systemd-sysusers.*arenad.conf' "$tmp/ctrl/arenad/postinst" || fail "arenad postinst does not run systemd-sysusers"
grep -q "deb-systemd-helper enable 'arenad.socket'" "$tmp/ctrl/arenad/postinst" || fail "arenad postinst does not enable arenad.socket"
grep -q "deb-systemd-invoke start 'arenad.socket'" "$tmp/ctrl/arenad/postinst" || fail "arenad postinst does not start arenad.socket"
grep -q "deb-systemd-helper debian-installed 'arenad.service'" "$tmp/ctrl/arenad/postinst" \
  || fail "arenad postinst enables arenad.service (socket activation starts it)"
! grep -q "deb-systemd-invoke start 'arenad.service'" "$tmp/ctrl/arenad/postinst" \
  || fail "arenad postinst starts arenad.service (socket activation starts it)"
grep -q "upgrade.*" "$tmp/ctrl/arenad/preinst" && grep -q "deb-systemd-invoke stop 'arenad.socket'" "$tmp/ctrl/arenad/preinst" \
  || fail "arenad preinst does not stop arenad.socket before an upgrade"
grep -q "deb-systemd-invoke stop 'arenad.socket'" "$tmp/ctrl/arenad/prerm" || fail "arenad prerm does not stop arenad.socket"
grep -q 'systemd-tmpfiles.*--create.*arenad.conf' "$tmp/ctrl/arenad/postinst" || fail "arenad postinst does not run systemd-tmpfiles --create"
ok "maintainer scripts: systemd-sysusers arenad.conf; systemd-tmpfiles --create arenad.conf; arenad.socket enabled, started, stopped on upgrade (preinst) and remove (prerm); arenad.service left to the socket"
grep -q "^ ar_client_connect@Base" "$tmp/ctrl/libarenaclient0/symbols" || fail "libarenaclient0 has no symbols file"
# Every exported function of the library is in the symbols file, and nothing else.
nm -D --defined-only "$R/usr/lib/$MA/libarenaclient.so.0" | awk '$2 == "T" {print $3}' | sort > "$tmp/exported"
awk '/^ / {sub(/@.*/, "", $1); print $1}' "$tmp/ctrl/libarenaclient0/symbols" | sort > "$tmp/listed"
diff -u "$tmp/listed" "$tmp/exported" >&2 || fail "libarenaclient0: symbols file differs from the library's exports"
grep -q 'triggers\|ldconfig' "$tmp/ctrl/libarenaclient0/triggers" || fail "libarenaclient0: no ldconfig trigger"
ok "libarenaclient0: symbols file ($(grep -c '^ ' "$tmp/ctrl/libarenaclient0/symbols") symbols), ldconfig trigger"

# ------------------------------------------------------------------------------------------
# 2. Units: systemd-analyze verify against the extracted tree
# ------------------------------------------------------------------------------------------
if command -v systemd-analyze >/dev/null; then
  u="$tmp/units"
  mkdir -p "$u"
  sed "s|^ExecStart=/usr/sbin/arenad|ExecStart=$R/usr/sbin/arenad|" "$R/lib/systemd/system/arenad.service" > "$u/arenad.service"
  sed "s|^ExecStart=/usr/bin/arenactl|ExecStart=$R/usr/bin/arenactl|" "$R/lib/systemd/system/arenad-metrics.service" > "$u/arenad-metrics.service"
  cp "$R/lib/systemd/system/arenad.socket" "$R/lib/systemd/system/arenad-metrics.timer" "$u/"
  grep -q '^ExecStart=/usr/bin/arenactl stats --prometheus' "$R/lib/systemd/system/arenad-metrics.service" \
    || fail "arenad-metrics.service: ExecStart does not run /usr/bin/arenactl stats --prometheus"
  grep -q '^ExecStart=/usr/sbin/arenad --foreground --config /etc/arenad/arenad.json' \
    "$R/lib/systemd/system/arenad.service" || fail "arenad.service: ExecStart does not run /usr/sbin/arenad on /etc/arenad/arenad.json"
  out="$(cd "$u" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "$u/arenad.socket" "$u/arenad.service" \
    "$u/arenad-metrics.service" "$u/arenad-metrics.timer" 2>&1)" || fail "systemd-analyze verify: $out"
  [ -z "$out" ] || fail "systemd-analyze verify: $out"
  ok "systemd-analyze verify: arenad.socket arenad.service arenad-metrics.service arenad-metrics.timer (ExecStart= of the package's programs)"
else
  echo "skip    systemd-analyze not installed"
fi

# ------------------------------------------------------------------------------------------
# 3. The extracted programs run
# ------------------------------------------------------------------------------------------
export LD_LIBRARY_PATH="$R/usr/lib/$MA"
if [ ${#RUN[@]} -eq 0 ]; then
  ldd "$R/usr/bin/arenactl" > "$tmp/ldd.out"
else
  # ldd runs the host's loader; the guest's (PT_INTERP, from libc6:<arch>) lists under qemu.
  interp="$(readelf -l "$R/usr/bin/arenactl" | sed -n 's/.*interpreter: \(.*\)]$/\1/p')"
  "${RUN[@]}" "$interp" --list "$R/usr/bin/arenactl" > "$tmp/ldd.out"
  ok "$(file -b "$R/usr/sbin/arenad" | cut -d, -f1,2): /usr/sbin/arenad; arenactl's libraries (listed by $interp under ${RUN[0]}): $(awk '$2 == "=>" {print $1}' "$tmp/ldd.out" | tr '\n' ' ')"
fi
grep "libarenaclient.so.0 => $R/usr/lib/$MA/" "$tmp/ldd.out" >/dev/null \
  || { cat "$tmp/ldd.out"; fail "arenactl does not resolve libarenaclient.so.0 from the package"; }
ver="$("${RUN[@]}" "$R/usr/sbin/arenad" --version)"
"${RUN[@]}" "$R/usr/sbin/arenad" --check-config "$R/etc/arenad/arenad.json" > "$tmp/check-config.out" 2>&1 \
  || { cat "$tmp/check-config.out"; fail "arenad --check-config on the packaged conffile"; }
ok "arenad --version: $ver; --check-config /etc/arenad/arenad.json: $(tail -n 1 "$tmp/check-config.out" | sed "s|$R||")"

# The packaged config names group arenad for the socket, which this host may lack: serve a copy
# of it without the socket keys, on a socket of our own.
sock="$tmp/arenad.sock"
grep -v '"socket' "$R/etc/arenad/arenad.json" > "$tmp/test.json"
# The real model of the load + invoke check, with its LiteRT golden (tests/golden).
MODEL=face_detection_short_range
mdir=""
for d in ${AR_DEB_TEST_MODELS:-} "$(dirname "$ROOT")/shared/models" "$ROOT/models"; do
  [ -f "$d/$MODEL.tflite" ] && { mdir="$(cd "$d" && pwd)"; break; }
done
"${RUN[@]}" "$R/usr/sbin/arenad" --foreground --config "$tmp/test.json" --socket "$sock" \
  ${mdir:+--model-dir "$mdir"} > "$tmp/arenad.log" 2>&1 &
daemon_pid=$!
# Under qemu-user the daemon takes a few seconds to come up.
for _ in $(seq 1 600); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { cat "$tmp/arenad.log"; fail "arenad did not create $sock"; }
ping_out="$("${RUN[@]}" "$R/usr/bin/arenactl" -s "$sock" ping 2>&1)" || fail "arenactl ping: $ping_out"
ok "arenactl ping (extracted arenactl + libarenaclient0 -> extracted arenad${RUN:+, both under ${RUN[0]}}): $ping_out"

if [ -z "$mdir" ]; then
  echo "skip    load + invoke of $MODEL.tflite: in none of ${AR_DEB_TEST_MODELS:-} ../shared/models models/ (./dev models)"
else
  out="$("${RUN[@]}" "$R/usr/bin/arenactl" -s "$sock" load "$MODEL" "$mdir/$MODEL.tflite" 2>&1)" \
    || { cat "$tmp/arenad.log"; fail "arenactl load $MODEL: $out"; }
  g="$ROOT/tests/golden/$MODEL/photo"
  out="$("${RUN[@]}" "$R/usr/bin/arenactl" -s "$sock" invoke "$MODEL" --input "$g/input_0.bin" \
    --output "$tmp/invoke" 2>&1)" || { cat "$tmp/arenad.log"; fail "arenactl invoke $MODEL: $out"; }
  # check_interp's rule: each element within 1e-4 max|golden| + 1e-5 of LiteRT's output.
  cmp_out="$(/usr/bin/python3 - "$g" "$tmp/invoke" <<'EOF'
import os, sys
import numpy as np
g, o = sys.argv[1:3]
worst = []
j = 0
while os.path.exists(f"{g}/output_{j}.bin"):
    want = np.fromfile(f"{g}/output_{j}.bin", dtype=np.float32)
    got = np.fromfile(f"{o}/output_{j}.bin", dtype=np.float32)
    if got.shape != want.shape:
        sys.exit(f"output {j}: {got.size} floats, golden {want.size}")
    err = np.abs(got - want)
    tol = 1e-4 * np.abs(want).max() + 1e-5
    if (err > tol).any():
        sys.exit(f"output {j}: {(err > tol).sum()} of {want.size} out of tolerance, worst |err| {err.max():.3g}")
    worst.append(f"output {j} ({want.size} floats) max |err| {err.max():.3g}")
    j += 1
if j == 0:
    sys.exit("no golden outputs in " + g)
print("; ".join(worst))
EOF
)" || fail "arenactl invoke $MODEL against the LiteRT golden: $cmp_out"
  ok "arenactl load + invoke $MODEL (real model, golden photo input) vs LiteRT golden: $cmp_out"
fi

cat > "$tmp/client.c" <<'EOF'
#include <arenad/client.h>
#include <stdio.h>
int main(int argc, char **argv) {
  ar_client_t *c = NULL;
  char msg[256], version[64];
  if (argc != 2 || ar_client_connect(argv[1], &c, msg, sizeof(msg)) != 0) return 1;
  int rc = ar_client_ping(c, version, sizeof(version), msg, sizeof(msg));
  ar_client_close(c);
  if (rc != 0) return 1;
  printf("%s\n", version);
  return 0;
}
EOF
pc=(env PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR="$R/usr/lib/$MA/pkgconfig:/usr/lib/$MA/pkgconfig:/usr/share/pkgconfig"
    PKG_CONFIG_SYSROOT_DIR="$R" pkg-config)
flags="$("${pc[@]}" --cflags --libs arenaclient)" || fail "pkg-config arenaclient"
# shellcheck disable=SC2086
"$CC" -std=gnu11 -Wall -Wextra -Werror -o "$tmp/client" "$tmp/client.c" $flags || fail "compiling against libarenaclient-dev"
cver="$("${RUN[@]}" "$tmp/client" "$sock")" || fail "the client built against libarenaclient-dev could not ping"
ok "$CC \$(pkg-config --cflags --libs arenaclient) [$flags] -> ping: $cver"

prom="$("${RUN[@]}" "$R/usr/bin/arenactl" -s "$sock" stats --prometheus 2>&1)" || fail "arenactl stats --prometheus: $prom"
printf '%s\n' "$prom" | grep '^# TYPE arenad_pool_bytes gauge' >/dev/null || fail "arenactl stats --prometheus: no arenad_pool_bytes gauge"
ok "arenactl stats --prometheus: $(printf '%s\n' "$prom" | grep -c '^# TYPE') metrics, e.g. $(printf '%s\n' "$prom" | grep -m1 '^arenad_pool_bytes')"

pyout="$(PYTHONPATH="$R$PYDIR" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c '
import sys, arenad
assert arenad.__file__.startswith(sys.argv[2]), arenad.__file__
with arenad.Client(sys.argv[1]) as c:
    p = c.ping()
    print(p.version, sorted(c.stats())[:3])
' "$sock" "$R")" || fail "python3-arenad against the extracted arenad: $pyout"
ok "python3 -c 'import arenad' (extracted python3-arenad) ping + stats: $pyout"

kill -TERM "$daemon_pid"
rc=0; wait "$daemon_pid" || rc=$?
daemon_pid=""
[ "$rc" -eq 0 ] || { cat "$tmp/arenad.log"; fail "arenad exited $rc on SIGTERM"; }
ok "arenad SIGTERM: exit 0"
unset LD_LIBRARY_PATH

# ------------------------------------------------------------------------------------------
# 4. dpkg --root, maintainer scripts chrootless
# ------------------------------------------------------------------------------------------
if [ "$(id -u)" -ne 0 ]; then
  echo "skip    dpkg --root with maintainer scripts (needs root)"
  printf 'deb-test: %d checks passed\n' "$n"
  exit 0
fi
D="$tmp/dpkgroot"
mkdir -p "$D/var/lib/dpkg/info" "$D/var/lib/dpkg/updates" "$D/var/lib/dpkg/triggers" "$D/etc"
touch "$D/var/lib/dpkg/status" "$D/var/lib/dpkg/available"
[ "$ARCH" = "$BUILD_ARCH" ] || dpkg --root="$D" --add-architecture "$ARCH"
# The scripts run on this host with DPKG_ROOT set. Debhelper guards its systemctl calls with
# [ -z "$DPKG_ROOT" ] or /run/systemd/system; stubs in front of PATH make sure nothing reaches a
# running systemd here anyway, and log what would have been called. py3compile/py3clean
# (python3-arenad's byte-compilation) know nothing of DPKG_ROOT and would work on the host's
# /usr/lib/python3: stubbed too.
mkdir -p "$tmp/stubs"
for s in systemctl deb-systemd-invoke py3compile py3clean; do
  printf '#!/bin/sh\necho "%s $*" >> "%s/stub-calls"\n' "$s" "$tmp" > "$tmp/stubs/$s"
  chmod +x "$tmp/stubs/$s"
done
debs=()
for p in "${PKGS[@]}"; do debs+=("${DEB[$p]}"); done
dpkg_root() {
  PATH="$tmp/stubs:$PATH" dpkg --root="$D" --log=/dev/null --force-script-chrootless \
    --force-depends --force-not-root "$@"
}
dpkg_root --install "${debs[@]}" > "$tmp/dpkg-install.out" 2>&1 \
  || { cat "$tmp/dpkg-install.out"; fail "dpkg --root --install"; }
for p in "${PKGS[@]}"; do
  st="$(dpkg-query --root="$D" -W -f='${db:Status-Abbrev}' "$p")"
  [ "${st% }" = ii ] || fail "dpkg --root: $p is '$st', not installed"
done
ok "dpkg --root --force-script-chrootless --install: ${PKGS[*]} all 'ii'"
dpkg-query --root="$D" -W -f='${Conffiles}\n' arenad | grep '/etc/arenad/arenad.json [0-9a-f]\{32\}' >/dev/null \
  || fail "dpkg --root: /etc/arenad/arenad.json not registered as a conffile"
grep -q '^arenad:x:[0-9]*:[0-9]*:arenad inference daemon:/var/lib/arenad:' "$D/etc/passwd" \
  || fail "systemd-sysusers --root did not create the arenad user ($(cat "$D/etc/passwd" 2>/dev/null))"
grep -q '^arenad:x:' "$D/etc/group" || fail "no arenad group"
[ -L "$D/etc/systemd/system/sockets.target.wants/arenad.socket" ] || fail "arenad.socket not enabled"
[ ! -e "$D/etc/systemd/system/multi-user.target.wants/arenad.service" ] || fail "arenad.service enabled"
[ ! -e "$D/etc/systemd/system/timers.target.wants/arenad-metrics.timer" ] || fail "arenad-metrics.timer enabled"
au="$(grep '^arenad:' "$D/etc/passwd" | cut -d: -f3,4)"
[ -d "$D/var/lib/arenad/models" ] || fail "/var/lib/arenad/models not made at install (systemd-tmpfiles in postinst)"
[ "$(stat -c '%u:%g %a' "$D/var/lib/arenad/models")" = "$au 750" ] \
  || fail "/var/lib/arenad/models is $(stat -c '%u:%g %a' "$D/var/lib/arenad/models"), not arenad:arenad ($au) 750"
ok "after configure: /var/lib/arenad/models $(stat -c '%u:%g %a' "$D/var/lib/arenad/models") (arenad:arenad)"
ok "after configure: conffile registered, user $(grep '^arenad:' "$D/etc/passwd" | cut -d: -f1,3,4,6,7), sockets.target.wants/arenad.socket -> $(readlink "$D/etc/systemd/system/sockets.target.wants/arenad.socket"), arenad.service and arenad-metrics.timer not enabled"

dpkg_root --purge "${PKGS[@]}" > "$tmp/dpkg-purge.out" 2>&1 || { cat "$tmp/dpkg-purge.out"; fail "dpkg --root --purge"; }
[ ! -e "$D/etc/arenad/arenad.json" ] || fail "purge left /etc/arenad/arenad.json"
[ ! -e "$D/etc/systemd/system/sockets.target.wants/arenad.socket" ] || fail "purge left the socket enabled"
[ ! -e "$D/usr/sbin/arenad" ] || fail "purge left /usr/sbin/arenad"
ok "dpkg --root --purge: files, conffile and unit links gone"
[ -f "$tmp/stub-calls" ] && echo "        (calls the scripts made to stubbed commands: $(tr '\n' ';' < "$tmp/stub-calls"))"
printf 'deb-test: %d checks passed\n' "$n"
