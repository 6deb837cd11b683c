# toolhost — build, test, bench, demo. `make test` is what CI runs.
GO ?= go
BIN := bin/toolhost

.PHONY: build release vet-targets deps test test-go vet fmt bench demo clean

# The version `toolhost version` reports: the commit, from git.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo 0.1.0-dev)

# Static binaries (pure-Go resolver, no libc): ~2 MiB less RSS per agent
# session and a faster exec. Beside toolhost, the small toolhost-confine
# (`toolhost confine` alone), which the hook's rewrite of the agent CLI's
# Bash runs when it finds it there.
build:
	CGO_ENABLED=0 $(GO) build -ldflags "-X github.com/toolhost/toolhost/internal/cli.Version=$(VERSION)" -o bin/ ./cmd/toolhost ./cmd/toolhost-confine

# The systems a release is built for; CI builds and vets each.
RELEASE_TARGETS ?= linux/amd64 linux/arm64 darwin/arm64 darwin/amd64

# Release archives for every target (scripts/release.sh): reproducible static
# binaries stamped with $(VERSION), and SHA256SUMS, under dist/.
release:
	VERSION=$(VERSION) RELEASE_TARGETS="$(RELEASE_TARGETS)" GO=$(GO) bash scripts/release.sh

# go vet, tests included, as each release target sees the code (the
# build-tagged files of the other systems are type-checked too).
vet-targets:
	@for t in $(RELEASE_TARGETS); do echo "vet $$t"; GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) vet ./... || exit 1; done

vet:
	$(GO) vet ./...

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The external programs some tests drive (scripts/deps/*.sh: tsc, chromium,
# the MCP Inspector, the Claude CLI; npm packages into .deps/, Debian packages
# with apt); idempotent and quick once installed.
deps:
	bash scripts/setup-test-deps.sh

# go test through internal/gotest: a line per package, failed tests whole,
# and a progress line naming the running tests after 30 s of silence. The
# package timeout is a bound against a hang, not a speed check: the tester
# package runs a real 5,000-test Vitest suite, which takes minutes on a
# loaded 2-core machine and passed go test's default 10 min there.
GOTEST = $(GO) run ./internal/gotest -race -count=1 -timeout 25m ./...

# What CI runs: installs the test programs, then every test (under CI=true a
# test whose program is missing fails instead of skipping).
test: deps fmt vet
	$(GOTEST)

# Go only: installs nothing, needs no root or network beyond the Go module
# proxy. Tests that drive a missing program skip and are listed at the end.
test-go: fmt vet
	$(GOTEST)

# Benchmarks, never timed tests: the pipeline in-process (the bug store at
# 100/1,000/10,000 bugs and update_todo_item at 10/500 steps among them),
# then the real binary over stdio (sequential and 8-in-flight calls/s with
# p50/p99 for a 2025 client and for a 2026-07-28 client that sends _meta on
# every request, 2 and 6 sessions on one project taking turns against one
# alone (timeline_append and bash), cold start, RSS after 10k and 100k
# calls, PSS per session with six sessions, what confinement adds to a bash
# command; side by side with bubblewrap, what `toolhost confine`, the
# toolhost-confine helper, the hook's whole Bash rewrite and the bash tool
# add to `true` and to a small `sh -c` script, as ratios to bwrap's),
# `audit stats` on a 1 GB trail (time and peak RSS), what tracing
# costs a sequential session with a live, a dead and a hanging collector
# (with TOOLHOST_BASE_BIN=path to a build without tracing, tracing off
# against it); the scaling table: validate_prd_site, diff_contract_vs_impl,
# parse_vitest (page 1 and 2), find_similar_bug and update_todo_item at
# three sizes each through the binary, `audit verify` at 10 MB / 100 MB /
# 1 GB against sha256sum, the dashboard's first state on 1 and 10 GB trails
# (each line reports time per size and the growth exponent; the trails are
# written to temporary dirs and removed, ~10 GB free needed); last, the
# side-by-side run against the go-sdk and mcp-go echo servers
# (internal/e2e/testdata/peers), interleaved, reported as ratios to them.
bench: build
	$(GO) test -run '^$$' -bench . -skip StartScale -benchmem $$($(GO) list ./internal/... | grep -v /e2e)
	$(GO) test -run '^$$' -bench 'Stdio(Sequential|Concurrent8)(_?2026)?$$' -benchtime 20000x ./internal/e2e
	$(GO) test -run '^$$' -bench 'SharedProject' -benchtime 1x ./internal/e2e
	$(GO) test -run '^$$' -bench 'ColdStart' -benchtime 200x ./internal/e2e
	$(GO) test -run '^$$' -bench 'StartCost' -benchtime 1x ./internal/e2e
	$(GO) test -run '^$$' -bench 'RSSGrowth|SixSessions' -benchtime 1x ./internal/e2e
	$(GO) test -run '^$$' -bench 'BashConfinement$$|ConfineReexec$$' -benchtime 300x ./internal/e2e
	$(GO) test -run '^$$' -bench 'ServerRunning' -benchtime 50x ./internal/e2e
	$(GO) test -run '^$$' -bench 'CommandSandboxes' -benchtime 100x ./internal/e2e
	$(GO) test -run '^$$' -bench 'AuditStats1GB' -benchtime 1x ./internal/e2e
	$(GO) test -run '^$$' -bench 'StdioTracing' -benchtime 20000x ./internal/e2e
	$(GO) test -run '^$$' -bench 'StdioRules50' -benchtime 20000x ./internal/e2e
	$(GO) test -run '^$$' -bench 'Scale' -benchtime 1x -timeout 60m ./internal/e2e
	$(GO) test -run '^$$' -bench 'StartScale' -benchtime 1x -timeout 30m ./internal/dashboard
	$(GO) test -run '^$$' -bench 'Peers' -benchtime 1x ./internal/e2e

demo: build
	./$(BIN) demo

clean:
	rm -rf bin dist
