#!/usr/bin/env bash
# Installs Debian's bubblewrap (bwrap), the sandbox Codex and Claude Code's
# sandbox runtime confine commands with on Linux, for the side-by-side
# benchmark BenchmarkCommandSandboxes (internal/e2e): what bwrap adds to a
# command next to what toolhost's confinement adds. Any bwrap on PATH will
# do. Safe to run twice.
set -euo pipefail
if command -v bwrap >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends bubblewrap
bwrap --version
