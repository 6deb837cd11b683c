#!/usr/bin/env bash
# MCP Inspector CLI, used by internal/httpserve tests to drive `toolhost serve
# --http` with a second, independent MCP client. Installed into the repo-local
# .deps/ (bin: .deps/node_modules/.bin/mcp-inspector). Safe to run twice.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -x .deps/node_modules/.bin/mcp-inspector ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  apt-get update
  apt-get install -y nodejs npm
fi
npm install --prefix .deps --no-audit --no-fund @modelcontextprotocol/inspector@0.15.0
