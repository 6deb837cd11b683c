#!/usr/bin/env bash
# Installs what the authority attacks (internal/e2e: TestConfinedProcess…)
# use besides toolhost: setpriv (util-linux) to run toolhost as an
# unprivileged user when the tests run as root, and setcap (libcap2-bin) to
# give a probe file capabilities that no_new_privs must void. Safe to run
# twice.
set -euo pipefail
missing=()
command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
command -v setcap >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v setcap >/dev/null 2>&1 || missing+=(libcap2-bin)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"
