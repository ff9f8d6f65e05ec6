#!/usr/bin/env bash
# The end-to-end demo: builds Wooly, starts wooly-serve on the embedded CPU
# backend (on a temporary ipc:// path, with a tenants file and a metrics
# endpoint on a free local port), runs two UNMODIFIED CUDA programs AT THE
# SAME TIME through capture (LD_LIBRARY_PATH=build/capture: Wooly's
# libcudart.so.13 sends their kernels to the server), checks that each
# passes its own checks, prints an excerpt of /metrics, and stops the server
# (SIGTERM: it drains and exits 0). Exits non-zero if anything fails.
#
# The programs are test/apps/cuda's, built with nvcc -cudart shared where the
# CUDA toolkit is installed; elsewhere the prebuilt copies in
# test/apps/cuda/prebuilt (vector_add, reduce) are used.
# Usage: bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BUILD_DIR=${BUILD_DIR:-build}
bash scripts/build.sh
bin="$BUILD_DIR/bin"

work=$(mktemp -d /tmp/wooly-demo-XXXXXX)
server_pid=
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/tenants.yaml" <<'YAML'
tenants:
  - name: inference
    token: "demo-token-1"
    class: latency-critical
    weight: 2
    sla_ms: 5
    memory: 256MiB
  - name: training
    token: "demo-token-2"
    class: best-effort
    memory: 1GiB
YAML

export WOOLY_SERVER="ipc://$work/wooly.sock"
echo "demo: starting wooly-serve (cpu backend) on $WOOLY_SERVER"
"$bin/wooly-serve" --listen="$WOOLY_SERVER" --tenants="$work/tenants.yaml" \
  --metrics=127.0.0.1:0 2>"$work/serve.log" &
server_pid=$!

# Wait for the metrics endpoint's line (the server is then serving).
for _ in $(seq 1 100); do
  grep -q "metrics at" "$work/serve.log" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log"; exit 1; }
  sleep 0.1
done
metrics=$(grep -o 'http://[0-9.]*:[0-9]*/metrics' "$work/serve.log" | head -1)

apps="$BUILD_DIR/apps/cuda"
if [[ -x "$apps/graph_capture" && -x "$apps/reduce" ]]; then
  # SGD training of a small network with cuBLAS (Wooly's drop-in
  # libcublas.so.13 in $BUILD_DIR/capture) where the toolkit has cuBLAS,
  # else a CUDA graph replayed 100 times; against reductions.
  training=("$apps/graph_capture")
  [[ -x "$apps/sample_mlp" ]] && training=("$apps/sample_mlp")
  inference=("$apps/reduce")
  echo "demo: CUDA programs built by nvcc here ($apps)"
else
  training=(test/apps/cuda/prebuilt/vector_add)
  inference=(test/apps/cuda/prebuilt/reduce)
  echo "demo: no nvcc-built programs; using the prebuilt copies (test/apps/cuda/prebuilt)"
fi
echo "demo: two unmodified CUDA programs at once through $BUILD_DIR/capture:" \
  "'training' runs $(basename "${training[0]}"), 'inference' runs $(basename "${inference[0]}")"
export LD_LIBRARY_PATH="$PWD/$BUILD_DIR/capture${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
WOOLY_TENANT=training WOOLY_TOKEN=demo-token-2 "${training[@]}" \
  >"$work/training.out" 2>&1 &
training_pid=$!
WOOLY_TENANT=inference WOOLY_TOKEN=demo-token-1 "${inference[@]}" \
  >"$work/inference.out" 2>&1 &
inference_pid=$!
status=0
wait "$training_pid" || status=1
wait "$inference_pid" || status=1
unset LD_LIBRARY_PATH
sed 's/^/  [training]  /' "$work/training.out"
sed 's/^/  [inference] /' "$work/inference.out"

echo "demo: the server's log"
sed 's/^/  /' "$work/serve.log"

echo "demo: excerpt of $metrics"
exec 3<>"/dev/tcp/$(echo "$metrics" | sed -E 's#http://([0-9.]+):([0-9]+)/metrics#\1/\2#')"
printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3
grep -E '^wooly_(device_busy|tenant_(launches|kernel_seconds|memory_quota|copy_bytes))' <&3 |
  sed 's/^/  /' || true
exec 3<&-

kill -TERM "$server_pid"
if ! wait "$server_pid"; then
  echo "demo: wooly-serve did not exit cleanly" >&2
  status=1
fi
server_pid=
tail -2 "$work/serve.log" | sed 's/^/  /'
if ((status != 0)); then
  echo "demo: FAILED" >&2
  exit 1
fi
echo "demo: both unmodified CUDA programs passed their own checks on the shared device; the server drained and stopped"
