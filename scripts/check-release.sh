#!/usr/bin/env bash
# Checks what scripts/release.sh made (CI runs it after `make release`):
#   - SHA256SUMS matches the archives;
#   - the binary for this machine reports the version stamped from git
#     (`toolhost version` prints `toolhost VERSION (…)`), and its helper
#     toolhost-confine is beside it and runs;
#   - the build is reproducible: a clone of this commit in another directory
#     builds this machine's archive byte for byte the same.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
RELEASE_DIR=${RELEASE_DIR:-dist}
VERSION=${VERSION:-$(git describe --always --dirty 2>/dev/null || echo 0.1.0-dev)}
native=$("$GO" env GOOS)-$("$GO" env GOARCH)
name=toolhost-$VERSION-$native

(cd "$RELEASE_DIR" && sha256sum --quiet -c SHA256SUMS)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -C "$tmp" -xzf "$RELEASE_DIR/$name.tar.gz"
got=$("$tmp/$name/toolhost" version)
case $got in
"toolhost $VERSION ("*) echo "check-release: $name says: $got" ;;
*) echo "check-release: $name says '$got', want the stamped version '$VERSION'" >&2; exit 1 ;;
esac
if ! "$tmp/$name/toolhost-confine" --agent tester --project-dir "$tmp" --explain >/dev/null; then
	echo "check-release: $name has no working toolhost-confine beside toolhost" >&2
	exit 1
fi

# A dirty tree cannot be cloned as it is; the reproducibility check needs a commit.
case $VERSION in
*-dirty) echo "check-release: tree is dirty, reproducibility not checked" >&2; exit 0 ;;
esac
git clone -q --no-hardlinks . "$tmp/clone"
(cd "$tmp/clone" && VERSION=$VERSION RELEASE_DIR=$tmp/dist RELEASE_TARGETS=${native/-//} GO=$GO bash scripts/release.sh >/dev/null)
want=$(cd "$RELEASE_DIR" && sha256sum "$name.tar.gz")
again=$(cd "$tmp/dist" && sha256sum "$name.tar.gz")
if [ "$want" != "$again" ]; then
	echo "check-release: not reproducible: $want here, $again from a clone in another directory" >&2
	exit 1
fi
echo "check-release: $name.tar.gz is the same built from $tmp/clone"
