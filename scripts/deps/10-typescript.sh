#!/usr/bin/env bash
# TypeScript compiler for the contract_bridge test (tsc --noEmit --strict on
# the generated contract.gen.ts). Installed into the repo-local .deps/.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -x .deps/node_modules/.bin/tsc ] && .deps/node_modules/.bin/tsc --version | grep -q '^Version 5\.'; then
  exit 0
fi
npm install --silent --no-audit --no-fund --prefix .deps typescript@5
.deps/node_modules/.bin/tsc --version
