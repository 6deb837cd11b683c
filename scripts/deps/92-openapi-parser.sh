#!/usr/bin/env bash
# The reference OpenAPI parser (@apidevtools/swagger-parser) the contract
# tests check toolhost's reading of split contracts against: it validates a
# contract spread over files and dereferences every $ref, and the test
# compares its routes, statuses and schemas with internal/contract's
# (internal/contract: TestSplitContractsAgainstSwaggerParser). Own prefix,
# .deps/openapi/. Pinned; safe to run twice.
set -euo pipefail
cd "$(dirname "$0")/../.."
prefix=.deps/openapi
version=12.1.0
if [ "$(node -p "require('./$prefix/node_modules/@apidevtools/swagger-parser/package.json').version" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  apt-get update
  apt-get install -y nodejs npm
fi
mkdir -p "$prefix"
[ -f "$prefix/package.json" ] || echo '{"private":true}' >"$prefix/package.json"
npm install --silent --no-audit --no-fund --save-exact --prefix "$prefix" "@apidevtools/swagger-parser@$version"
echo "@apidevtools/swagger-parser $version in $prefix"
