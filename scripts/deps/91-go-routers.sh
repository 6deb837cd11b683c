#!/usr/bin/env bash
# The Go web frameworks diff_contract_vs_impl is tested against — gin, echo
# 4, chi 5 and fiber 2 — from the Go module proxy, into the module cache.
# They belong to the test apps' own module
# (internal/tools/devloop/triage/testdata/routers/go, pinned by its go.mod
# and go.sum), never to toolhost's go.mod; the tests build and start those
# apps and probe them over HTTP (TestRoutersAgainstTheProbe). Safe to run
# twice: go mod download keeps what the cache has.
set -euo pipefail
cd "$(dirname "$0")/../../internal/tools/devloop/triage/testdata/routers/go"
GOFLAGS=-mod=readonly GOWORK=off go mod download
