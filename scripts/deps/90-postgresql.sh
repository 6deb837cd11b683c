#!/usr/bin/env bash
# Installs Debian's postgresql (15) for the database store's tests
# (internal/store/pgstore and the tests that run both stores): the tests
# make their own clusters with initdb in a temp dir and run them with
# pg_ctl on a private socket dir and port, as the `postgres` user the
# package creates (initdb refuses root); no system service is used, so the
# one the package may start is stopped and disabled. Safe to run twice.
set -euo pipefail
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && id postgres >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends postgresql postgresql-client
# The package's own cluster is not what the tests use.
if command -v pg_ctlcluster >/dev/null 2>&1; then
  for c in /etc/postgresql/*/main; do
    [ -d "$c" ] || continue
    v=$(basename "$(dirname "$c")")
    pg_ctlcluster "$v" main stop 2>/dev/null || true
  done
fi
