# toolhost — build, test, bench, demo. `make test` is what CI runs.
GO ?= go
BIN := bin/toolhost

.PHONY: build deps test vet fmt bench demo clean

# A static binary (pure-Go resolver, no libc): ~2 MiB less RSS per agent
# session and a faster exec.
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/toolhost

vet:
	$(GO) vet ./...

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The external programs some tests drive (tsc, chromium, the MCP Inspector,
# the Claude CLI);
# idempotent and quick once installed.
deps:
	bash scripts/setup-test-deps.sh

test: deps fmt vet
	$(GO) test -race -count=1 ./...

# Benchmarks, never timed tests: the pipeline in-process, then the real
# binary over stdio (sequential and 8-in-flight calls/s with p50/p99, cold
# start, RSS after 10k and 100k calls, PSS per session with six sessions).
bench: build
	$(GO) test -run '^$$' -bench . -benchmem $$($(GO) list ./internal/... | grep -v /e2e)
	$(GO) test -run '^$$' -bench 'Stdio(Sequential|Concurrent8)$$' -benchtime 20000x ./internal/e2e
	$(GO) test -run '^$$' -bench 'ColdStart' -benchtime 200x ./internal/e2e
	$(GO) test -run '^$$' -bench 'RSSGrowth|SixSessions' -benchtime 1x ./internal/e2e

demo: build
	./$(BIN) demo

clean:
	rm -rf bin
