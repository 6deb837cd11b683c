#!/usr/bin/env bash
# Builds the release archives: per target, the static toolhost binary and,
# beside it, its confinement helper toolhost-confine (which the hook finds
# there), in toolhost-VERSION-OS-ARCH.tar.gz with the README, and SHA256SUMS over the
# archives, under $RELEASE_DIR (dist/ by default, gitignored).
#
# The version the binary reports (`toolhost version`) is stamped from git
# (`git describe --always --dirty`) unless VERSION is given. The build is
# reproducible: the same commit and Go toolchain give the same bytes wherever
# the checkout lives (-trimpath, no cgo, no build id from the host), and the
# archives hold no time, owner or order of the machine that made them.
#
#   make release                            # the Makefile's RELEASE_TARGETS
#   RELEASE_TARGETS=linux/amd64 scripts/release.sh
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
RELEASE_DIR=${RELEASE_DIR:-dist}
: "${RELEASE_TARGETS:?the targets, GOOS/GOARCH separated by spaces (make release sets them)}"
VERSION=${VERSION:-$(git describe --always --dirty 2>/dev/null || echo 0.1.0-dev)}
# The archives' file times: the commit's, so two builds of one commit agree.
EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}

case $VERSION in
*[!A-Za-z0-9._+-]*) echo "release: VERSION '$VERSION' has characters a file name or -X flag cannot carry" >&2; exit 2 ;;
esac

rm -rf "$RELEASE_DIR"
mkdir -p "$RELEASE_DIR"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

for target in $RELEASE_TARGETS; do
	os=${target%/*} arch=${target#*/}
	name=toolhost-$VERSION-$os-$arch
	mkdir -p "$stage/$name"
	echo "release: $name"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath \
		-ldflags "-s -w -buildid= -X github.com/toolhost/toolhost/internal/cli.Version=$VERSION" \
		-o "$stage/$name/" ./cmd/toolhost ./cmd/toolhost-confine
	cp README.md "$stage/$name/"
	tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$EPOCH" \
		--mode='u+rwX,go+rX,go-w' -cf - "$name" | gzip -9 -n >"$RELEASE_DIR/$name.tar.gz"
done

(cd "$RELEASE_DIR" && sha256sum -- *.tar.gz >SHA256SUMS)
cat "$RELEASE_DIR/SHA256SUMS"
