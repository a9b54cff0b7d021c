#!/usr/bin/env bash
# demo.sh BUILD_DIR MODELS_DIR IMAGE - the body of `./dev demo` (see ./dev).
# Until the daemon serves requests this shows the offline view of the four demo models.
set -euo pipefail
BUILD="$1"; MODELS="$2"; IMAGE="$3"
for m in face_detection_short_range selfie_segmentation palm_detection_lite hand_landmark_lite; do
  echo "== $m"
  "$BUILD/arenactl" inspect "$MODELS/$m.tflite" || echo "(arenactl inspect not available yet)"
done
echo "photo: $IMAGE"
