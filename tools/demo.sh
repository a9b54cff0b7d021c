#!/usr/bin/env bash
# demo.sh BUILD_DIR MODELS_DIR IMAGE [MODELS_Q_DIR] - the body of `./dev demo` (see ./dev).
#
# Starts arenad on a temporary socket with a config that co-hosts four MediaPipe models in one
# arena pool, in two share groups (a detector and the model that follows it never run at the same
# time, so they share one activation region): face_detection_short_range + selfie_segmentation in
# "people", palm_detection_lite + hand_landmark_lite in "hands". It then runs them over the socket
# on a real photograph, prints what they found, prints the daemon's resident memory by part next
# to the pool (the parts must add up to within 5 % of RSS), shows `arenactl stats` (the pool and the
# bytes the share groups save), and stops the daemon with SIGTERM, expecting a clean exit 0.
#
# When MODELS_Q_DIR (../shared/models_q) exists it also loads, at run time, two quantized models in
# a third share group "quant": the uint8 SSD MobileNet v1 (TFLite_Detection_PostProcess) and the
# uint8 MobileNet v2 classifier. The detector must find a person in astronaut.png and a cat in
# chelsea.png (python3-imageio's photographs), and the classifier must call the cat's box (cropped
# from chelsea.png) a cat. Without the folder that part is skipped with a message.
set -euo pipefail
BUILD="$(cd "$1" && pwd)"; MODELS="$(cd "$2" && pwd)"; IMAGE="$3"; MODELS_Q="${4:-}"
CHELSEA="$(dirname "$IMAGE")/chelsea.png"
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
# Runtime loads must lie in model_dirs: the float models' folder and, when present, models_q.
model_dirs="\"$MODELS\""
if [ -n "$MODELS_Q" ] && [ -d "$MODELS_Q" ]; then model_dirs="$model_dirs, \"$(cd "$MODELS_Q" && pwd)\""; fi
cat > "$work/arenad.json" <<EOF
{
  "socket": "$sock",
  "pool_bytes": "96M",
  "workers": 2,
  "model_dirs": [$model_dirs],
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

# Resident memory of the whole daemon with the four models loaded and run once, next to the pool:
# the parts arenactl stats accounts (pool pages, model file copies, OpenBLAS buffers, heap, code
# and stacks; daemon/ar_rss.h) must add up to within 5 % of the kernel's RSS.
echo
echo "== resident memory of arenad with the four models (arenactl stats: pool, then memory)"
ctl stats > "$work/stats4.txt"
sed -n '/^pool:/p; /^memory/,$p' "$work/stats4.txt"
mem_pct="$(sed -n 's/^  sum of the parts  *[0-9]*  \([0-9.]*\)% of RSS.*/\1/p' "$work/stats4.txt")"
mem_rss="$(awk '$1 == "RSS" { print $2 }' "$work/stats4.txt")"
mem_sum="$(awk '$1 == "sum" && $3 == "the" { print $5 }' "$work/stats4.txt")"
if [ -z "$mem_pct" ] || ! awk -v p="$mem_pct" 'BEGIN { exit !(p >= 95 && p <= 105) }'; then
  echo "demo: FAILED: the accounted parts are ${mem_pct:-?}% of RSS (want 95..105%)" >&2
  exit 1
fi
echo "RSS $mem_rss bytes, accounted parts $mem_sum bytes: $mem_pct% of RSS"

quant_status="skipped"
echo
if [ -z "$MODELS_Q" ] || [ ! -d "$MODELS_Q" ]; then
  echo "== quantized models: ${MODELS_Q:-(no folder given)} absent: quantized part skipped"
else
  SSD_Q="$MODELS_Q/ssd_mobilenet_v1_coco_quant_postprocess.tflite"
  MNV2_Q="$MODELS_Q/coral_mobilenet_v2_1.0_224_quant.tflite"
  echo "== quantized models from $MODELS_Q, loaded now in share group \"quant\""
  loaded=yes
  if ! ctl load ssd_q "$SSD_Q" --group quant 2>"$work/load.err" ||
     ! ctl load mnv2_q "$MNV2_Q" --group quant 2>>"$work/load.err"; then
    cat "$work/load.err" >&2
    # A build without the integer kernels refuses them as unsupported: say so and go on (the
    # float part still counts); any other load failure fails the demo.
    if grep -q '(EUNSUPPORTED)' "$work/load.err"; then
      quant_status="SKIPPED: this build cannot run the quantized models (unsupported operators)"
      echo "== $quant_status"
      loaded=no
    else
      echo "demo: FAILED: the quantized models do not load" >&2
      exit 1
    fi
  fi
fi
if [ "$quant_status" = skipped ] && [ -n "${loaded:-}" ] && [ "$loaded" = yes ]; then
  ctl models

  echo
  echo "== ssd_mobilenet_v1_coco_quant (uint8, stretch to 300x300, q = pixel) on $(basename "$IMAGE")"
  ctl invoke ssd_q --image "$IMAGE" --fit stretch --detections --min-score 0.5 \
    --labels "$MODELS_Q/ssd_mobilenet_v1_coco_labelmap.txt" | tee "$work/ssd_person.txt" | grep -E 'detection|det '
  echo
  echo "== ssd_mobilenet_v1_coco_quant on $(basename "$CHELSEA")"
  ctl invoke ssd_q --image "$CHELSEA" --fit stretch --detections --min-score 0.5 \
    --labels "$MODELS_Q/ssd_mobilenet_v1_coco_labelmap.txt" | tee "$work/ssd_cat.txt" | grep -E 'detection|det '
  person="$(grep -E '^  det [0-9]+: .* person$' "$work/ssd_person.txt" | head -1 || true)"
  cat_row="$(grep -E '^  det [0-9]+: .* cat$' "$work/ssd_cat.txt" | head -1 || true)"
  cat_crop="$(sed -n 's/.* crop \([0-9]*,[0-9]*,[0-9]*,[0-9]*\) .*/\1/p' <<<"$cat_row")"
  if [ -z "$person" ] || [ -z "$cat_row" ] || [ -z "$cat_crop" ]; then
    echo "demo: FAILED: the quantized SSD did not find the person and the cat (score >= 0.5)" >&2
    exit 1
  fi
  echo
  echo "== coral_mobilenet_v2_1.0_224_quant (uint8, stretch to 224x224) on the cat's box $cat_crop of $(basename "$CHELSEA")"
  ctl invoke mnv2_q --image "$CHELSEA" --crop "$cat_crop" --fit stretch --top 3 \
    --labels "$MODELS_Q/coral_imagenet_labels.txt" | tee "$work/mnv2.txt" | grep -E 'top '
  top1="$(sed -n 's/^  top 1: class [0-9]* (q [0-9]*) [0-9.]* //p' "$work/mnv2.txt")"
  case "$top1" in
    *cat*) ;;
    *) echo "demo: FAILED: the classifier called the cat crop '$top1'" >&2; exit 1 ;;
  esac
  quant_status="person found ($(sed 's/.*score \([0-9.]*\) .*/\1/' <<<"$person")), cat found ($(sed 's/.*score \([0-9.]*\) .*/\1/' <<<"$cat_row")), cat crop classified '$top1'"
fi

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
  echo "demo: quantized part: $quant_status"
  echo "demo: memory with the four models: RSS $mem_rss bytes, parts $mem_sum bytes ($mem_pct% of RSS)"
  echo "demo: OK (face score $face_score >= 0.8)"
else
  echo "demo: FAILED: face score $face_score < 0.8" >&2
  exit 1
fi
