#!/usr/bin/env bash
# Installs the programs the Bash guard's reality test runs commands with
# against a loopback HTTP sink (internal/bashguard: TestReality): curl, wget,
# jq and xxd (each is also the Debian package's name). Safe to run twice.
set -euo pipefail
missing=()
for p in curl wget jq xxd; do
  command -v "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"
