#!/usr/bin/env bash
# The official TypeScript MCP client SDKs of both eras, driven by
# internal/e2e against the built binary: @modelcontextprotocol/client 2.x
# (2026-07-28) and @modelcontextprotocol/sdk 1.32.x (2025). Installed into
# their own prefix, .deps/mcp-clients/, so they never change the versions
# the Inspector (30-inspector.sh) resolves. Safe to run twice.
set -euo pipefail
cd "$(dirname "$0")/../.."
prefix=.deps/mcp-clients
want_v2=2.4.0
want_v1=1.32.2
have() { node -p "require('./$prefix/node_modules/$1/package.json').version" 2>/dev/null || true; }
if [ "$(have @modelcontextprotocol/client)" = "$want_v2" ] && [ "$(have @modelcontextprotocol/sdk)" = "$want_v1" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  apt-get update
  apt-get install -y nodejs npm
fi
mkdir -p "$prefix"
npm install --prefix "$prefix" --no-audit --no-fund \
  "@modelcontextprotocol/client@$want_v2" "@modelcontextprotocol/sdk@$want_v1"
