#!/usr/bin/env bash
# The OpenTelemetry Collector the tracing tests export to (internal/e2e
# otel_test.go): built from the collector's own Go modules — the OTLP
# receiver (gRPC and HTTP) and contrib's file exporter, all at one release
# (v0.161.0 / v1.67.0: the newest the file exporter builds at here) — in
# its own module, scripts/deps/otelcol/, into .deps/otelcol/otelcol. Needs
# Go and the Go module proxy only. Safe to run twice: a build whose inputs
# have not changed is kept.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=scripts/deps/otelcol
out=.deps/otelcol/otelcol
want=$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -d' ' -f1)
if [ -x "$out" ] && [ "$(cat "$out.sum" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
mkdir -p "$(dirname "$out")"
(cd "$src" && CGO_ENABLED=0 go build -o "../../../$out.tmp" .)
mv "$out.tmp" "$out"
echo "$want" > "$out.sum"
"$out" --version
