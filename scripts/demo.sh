#!/usr/bin/env bash
# The end-to-end demo: builds Wooly, starts wooly-serve on the embedded CPU
# backend (on a temporary ipc:// path, with a tenants file and a metrics
# endpoint on a free local port), runs two tenant programs AT THE SAME TIME
# (each loads nvcc's PTX from test/corpus through the client library,
# launches its kernels on the shared device and checks every result bit for
# bit), prints an excerpt of /metrics, and stops the server (SIGTERM: it
# drains and exits 0). Exits non-zero if anything fails.
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

echo "demo: two tenants at once: 'training' runs saxpy rounds on two streams," \
  "'inference' runs block reductions (barriers, warp shuffles)"
WOOLY_TENANT=training WOOLY_TOKEN=demo-token-2 "$bin/wooly-app-saxpy" \
  --ptx=test/corpus/elementwise.sm_90.ptx --n=1048576 --rounds=4 \
  >"$work/saxpy.out" 2>&1 &
saxpy_pid=$!
WOOLY_TENANT=inference WOOLY_TOKEN=demo-token-1 "$bin/wooly-app-reduce" \
  --ptx=test/corpus/reduction.sm_90.ptx --n=65536 --rounds=3 \
  >"$work/reduce.out" 2>&1 &
reduce_pid=$!
status=0
wait "$saxpy_pid" || status=1
wait "$reduce_pid" || status=1
sed 's/^/  [training]  /' "$work/saxpy.out"
sed 's/^/  [inference] /' "$work/reduce.out"

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
echo "demo: both tenants' results were bit-identical to the host; the server drained and stopped"
