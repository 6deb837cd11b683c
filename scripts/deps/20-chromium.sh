#!/usr/bin/env bash
# Installs Debian's chromium for the real-browser tests: the docs package's
# search (internal/tools/devloop/docs: TestBrowserSearch) and the dashboard
# (internal/dashboard: TestBrowser, driven over CDP by the Go module
# chromedp, which needs nothing else installed). Safe to run twice.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends chromium fonts-dejavu-core
