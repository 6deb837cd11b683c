#!/usr/bin/env bash
# The Node web frameworks diff_contract_vs_impl is tested against: real apps
# are written, started and probed over HTTP at test time
# (internal/tools/devloop/triage: TestRoutersAgainstTheProbe), so what the
# tool says about a route is checked against what the framework serves.
# Fastify 5, Hono 4 (on @hono/node-server), Koa 2 with @koa/router, and
# NestJS (whose decorator routes the tool says it cannot read) in their own
# prefixes, .deps/routers/ and .deps/nest/, so no other test's resolution
# changes. Pinned; safe to run twice.
set -euo pipefail
cd "$(dirname "$0")/../.."
want_routers="fastify@5.12.8 hono@4.13.19 @hono/node-server@2.1.8 koa@2.16.4 @koa/router@15.7.0"
want_nest="@nestjs/core@12.5.1 @nestjs/common@12.5.1 @nestjs/platform-express@12.5.1 reflect-metadata@0.2.2 rxjs@7.8.2 @types/node@20.19.43"
if ! command -v npm >/dev/null 2>&1; then
  apt-get update
  apt-get install -y nodejs npm
fi
# have PREFIX PKG@VERSION…: every package is installed at exactly that version.
have() {
  local prefix=$1
  shift
  for spec in "$@"; do
    local name=${spec%@*} version=${spec##*@}
    [ "$(node -p "require('./$prefix/node_modules/$name/package.json').version" 2>/dev/null)" = "$version" ] || return 1
  done
}
install() {
  local prefix=$1
  shift
  have "$prefix" "$@" && return 0
  mkdir -p "$prefix"
  # An own package.json keeps npm from walking up to .deps/package.json.
  [ -f "$prefix/package.json" ] || echo '{"private":true}' >"$prefix/package.json"
  npm install --silent --no-audit --no-fund --save-exact --prefix "$prefix" "$@"
  echo "$* in $prefix"
}
# shellcheck disable=SC2086
install .deps/routers $want_routers
# shellcheck disable=SC2086
install .deps/nest $want_nest
