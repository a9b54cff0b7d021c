#!/usr/bin/env bash
# demo.sh BUILD_DIR MODELS_DIR IMAGE - the body of `./dev demo` (see ./dev).
#
# Starts arenad on a temporary socket with a config that co-hosts four MediaPipe models in one
# arena pool, in two share groups (a detector and the model that follows it never run at the same
# time, so they share one activation region): face_detection_short_range + selfie_segmentation in
# "people", palm_detection_lite + hand_landmark_lite in "hands". It then runs them over the socket
# on a real photograph, prints what they found, shows `arenactl stats` (the pool and the bytes the
# share groups save), and stops the daemon with SIGTERM, expecting a clean exit 0.
set -euo pipefail
BUILD="$(cd "$1" && pwd)"; MODELS="$(cd "$2" && pwd)"; IMAGE="$3"
ARENAD="$BUILD/arenad"; ARENACTL="$BUILD/arenactl"; DECODE="$BUILD/clients/demo_decode"
make -C "$BUILD" -s clients/demo_decode >/dev/null

work="$(mktemp -d /tmp/arenad-demo.XXXXXX)"
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
sock="$work/arenad.sock"
cat > "$work/arenad.json" <<EOF
{
  "socket": "$sock",
  "pool_bytes": "64M",
  "workers": 2,
  "models": [
    {"name": "face",   "path": "$MODELS/face_detection_short_range.tflite", "group": "people"},
    {"name": "selfie", "path": "$MODELS/selfie_segmentation.tflite",        "group": "people"},
    {"name": "palm",   "path": "$MODELS/palm_detection_lite.tflite",        "group": "hands"},
    {"name": "hand",   "path": "$MODELS/hand_landmark_lite.tflite",         "group": "hands"}
  ]
}
EOF

echo "== config: four models, one pool, two share groups ($work/arenad.json)"
"$ARENAD" --check-config "$work/arenad.json"

echo "== starting arenad on $sock"
"$ARENAD" --config "$work/arenad.json" --foreground 2>"$work/arenad.log" &
pid=$!
ctl() { "$ARENACTL" -s "$sock" "$@"; }
# Wait until it answers (the models load before READY); give up if it dies.
for _ in $(seq 1 600); do
  if ! kill -0 "$pid" 2>/dev/null; then cat "$work/arenad.log" >&2; echo "demo: arenad exited early" >&2; exit 1; fi
  if ctl ping >/dev/null 2>&1 && [ "$(ctl models 2>/dev/null | grep -cE '^ *(face|selfie|palm|hand) ')" -ge 4 ]; then break; fi
  sleep 0.1
done
ctl ping
ctl models

read -r W H < <("$DECODE" size "$IMAGE")
echo
echo "== photo: $IMAGE (${W}x${H})"

echo
echo "== face_detection_short_range (letterbox to 128x128, values in [-1,1])"
mkdir -p "$work/face"
ctl invoke face --image "$IMAGE" --fit letterbox --range -1,1 --output "$work/face" >/dev/null
"$DECODE" face "$work/face" "$W" "$H" | tee "$work/face.txt" | grep -v '^score='
face_score="$(sed -n 's/^score=//p' "$work/face.txt")"

echo
echo "== selfie_segmentation (stretch to 256x256, values in [0,1])"
mkdir -p "$work/selfie"
ctl invoke selfie --image "$IMAGE" --fit stretch --range 0,1 --output "$work/selfie" >/dev/null
"$DECODE" selfie "$work/selfie"

echo
echo "== palm_detection_lite (letterbox to 192x192, values in [0,1])"
mkdir -p "$work/palm"
ctl invoke palm --image "$IMAGE" --fit letterbox --range 0,1 --output "$work/palm" >/dev/null
"$DECODE" palm "$work/palm" "$W" "$H" | tee "$work/palm.txt" | grep -vE '^(score|crop)='
crop="$(sed -n 's/^crop=//p' "$work/palm.txt")"

echo
echo "== hand_landmark_lite on the palm's hand region $crop (letterbox to 224x224, values in [0,1])"
mkdir -p "$work/hand"
ctl invoke hand --image "$IMAGE" --crop "$crop" --fit letterbox --range 0,1 --output "$work/hand" >/dev/null
"$DECODE" hand "$work/hand"

echo
echo "== arenactl stats"
ctl stats

echo
echo "== stopping arenad (SIGTERM)"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=""
if [ "$rc" -ne 0 ]; then cat "$work/arenad.log" >&2; echo "demo: arenad exited with status $rc" >&2; exit 1; fi
echo "arenad exited with status 0"

# The acceptance figure: the face detector must find the astronaut's face.
if awk -v s="$face_score" 'BEGIN { exit !(s >= 0.8) }'; then
  echo "demo: OK (face score $face_score >= 0.8)"
else
  echo "demo: FAILED: face score $face_score < 0.8" >&2
  exit 1
fi
