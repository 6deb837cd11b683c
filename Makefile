# toolhost — build, test, bench, demo. `make test` is what CI runs.
GO ?= go
BIN := bin/toolhost

.PHONY: build test vet fmt bench demo clean

build:
	$(GO) build -o $(BIN) ./cmd/toolhost

vet:
	$(GO) vet ./...

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: fmt vet
	$(GO) test -race -count=1 ./...

bench: build
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...

demo: build
	./$(BIN) phase0-verify

clean:
	rm -rf bin
