#!/usr/bin/env bash
# A Rust compiler for the crash tests that compile a Rust program and read
# its panic from stderr (internal/testutil/crash: RustPanic, used by
# collect_stderr's and category_classifier's tests). Any rustc on PATH will
# do (rustup's included); else Debian's rustc. Safe to run twice.
set -euo pipefail
if command -v rustc >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends rustc
rustc --version
