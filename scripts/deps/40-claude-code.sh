#!/usr/bin/env bash
# The real Claude CLI (@anthropic-ai/claude-code), driven by the tests that use
# internal/testutil/claudecli against a scripted Messages API on 127.0.0.1.
# Installed into the repo-local .deps/ (bin: .deps/node_modules/.bin/claude).
# Safe to run twice.
#
# The npm package is a 500-byte placeholder plus one optional dependency per
# platform (@anthropic-ai/claude-code-linux-x64, …) that carries the ~400 MB
# native binary; its postinstall (install.cjs) links that binary over
# bin/claude.exe. Everything comes from the npm registry, nothing is downloaded
# from elsewhere. The package asks for node >= 22 but only its postinstall runs
# on node (the CLI itself is the native binary), so node 20's EBADENGINE
# warning is harmless. Pinned: tests record what this version sends (hook
# semantics, MCP revision); bump it on purpose and re-run internal/e2e.
set -euo pipefail
cd "$(dirname "$0")/../.."
version=2.1.332
pkg=.deps/node_modules/@anthropic-ai/claude-code
bin=.deps/node_modules/.bin/claude
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "^$version "; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  apt-get update
  apt-get install -y nodejs npm
fi
npm install --prefix .deps --no-audit --no-fund --save-exact "@anthropic-ai/claude-code@$version"
# npm may skip the postinstall (--ignore-scripts, or a config that does not
# allow install scripts); then the placeholder is still in place: run it.
if ! "$bin" --version 2>/dev/null | grep -q "^$version "; then
  (cd "$pkg" && node install.cjs)
fi
"$bin" --version
