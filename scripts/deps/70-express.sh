#!/usr/bin/env bash
# Express 5 for the tests that build a real Express app at test time and load
# it to read its router stack (diff_contract_vs_impl on modular apps, and the
# Node crash stderr of collect_stderr). Own prefix: .deps/express/. Safe to
# run twice.
set -euo pipefail
cd "$(dirname "$0")/../.."
prefix=.deps/express
if [ -f "$prefix/node_modules/express/package.json" ] &&
  node -p "require('./$prefix/node_modules/express/package.json').version" | grep -q '^5\.'; then
  exit 0
fi
mkdir -p "$prefix"
[ -f "$prefix/package.json" ] || echo '{"private":true}' >"$prefix/package.json"
npm install --silent --no-audit --no-fund --prefix "$prefix" express@5.1.0
node -p "'express ' + require('./$prefix/node_modules/express/package.json').version + ' in $prefix'"
