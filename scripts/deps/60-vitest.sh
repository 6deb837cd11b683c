#!/usr/bin/env bash
# Vitest, three major versions, for the tests that run a real Vitest suite at
# test time (internal/vitest/vitesttest): the JSON report's shape changed
# between 1.x, 3.x and 4.x, and the Tester's and Triager's tools read them
# all. Each version gets its own prefix, .deps/vitest<major>/ (bin:
# .deps/vitest<major>/node_modules/.bin/vitest). Node 20 runs all three;
# Vitest 5 needs Node 22. Safe to run twice.
set -euo pipefail
cd "$(dirname "$0")/../.."
for v in 1.6.1 3.2.7 4.1.12; do
  prefix=".deps/vitest${v%%.*}"
  if [ -x "$prefix/node_modules/.bin/vitest" ] &&
    [ "$(node -p "require('./$prefix/node_modules/vitest/package.json').version")" = "$v" ]; then
    continue
  fi
  mkdir -p "$prefix"
  # An own package.json keeps npm from walking up to .deps/package.json.
  [ -f "$prefix/package.json" ] || echo '{"private":true}' >"$prefix/package.json"
  npm install --silent --no-audit --no-fund --prefix "$prefix" "vitest@$v"
  echo "vitest $(node -p "require('./$prefix/node_modules/vitest/package.json').version") in $prefix"
done
