#!/usr/bin/env bash
# Installs what the tests need beyond Go (npm packages into .deps/, Debian
# packages with apt). Each area keeps its own script in scripts/deps/; this
# runs them all. Safe to run twice.
set -euo pipefail
cd "$(dirname "$0")/.."
for s in scripts/deps/*.sh; do
  [ -e "$s" ] || continue
  echo "== $s"
  bash "$s"
done
