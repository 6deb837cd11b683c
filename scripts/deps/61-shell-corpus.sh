#!/usr/bin/env bash
# Installs the programs the shell corpus runs for real besides coreutils
# (internal/testutil/shellcorpus: zip -TT, sqlite3 .shell and strace -o |
# run a command given in an argument). Safe to run twice.
set -euo pipefail
missing=()
for p in zip sqlite3 strace; do
  command -v "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"
