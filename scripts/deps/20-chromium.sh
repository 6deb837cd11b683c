#!/usr/bin/env bash
# Installs Debian's chromium for the docs package's real-browser check
# (internal/tools/devloop/docs: TestBrowserSearch). Safe to run twice.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends chromium fonts-dejavu-core
