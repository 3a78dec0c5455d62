# swarm: run `make demo` for the main job, `make test` for the tests.
GO      ?= go
BIN     ?= bin/swarm
PKGS    ?= ./...
TIMEOUT ?= 25m
# The build's version (`swarm --version`, /v1/info, the dashboard): the
# nearest tag and commit, "dev" outside a git checkout.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS ?= -X github.com/swarmllm/swarm/swarm.Version=$(VERSION)

.PHONY: all build test vet fmt-check cross purego release oracles demo bench fuzz tidy clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/swarm

# The tests: formatting, vet, the other platforms build, the engine with
# its portable kernels, the llama.cpp oracle's every row, then every
# package with the race detector.
test: fmt-check vet cross purego oracles
	$(GO) test -race -timeout $(TIMEOUT) $(PKGS)

# The engine's portable kernels (-tags purego: no assembly) pass the same
# tests; the other packages only call into blocks.
purego:
	$(GO) test -tags purego -timeout $(TIMEOUT) ./blocks/...

# Windows and macOS must build (what they lack, e.g. process groups for a
# supervised engine, degrades or refuses clearly at run time).
cross:
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/swarm
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build -o /dev/null ./cmd/swarm

# Release binaries: every GOOS x GOARCH of PLATFORMS, CGO_ENABLED=0 (linux ones
# load through the system loader for the CUDA backend; -tags nocuda: static),
# into dist/swarm-VERSION-OS-ARCH[.exe], with dist/SHA256SUMS
# (check with `cd dist && sha256sum -c SHA256SUMS`).
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
RELEASE_LDFLAGS ?= -s -w $(LDFLAGS)
release:
	rm -rf dist && mkdir -p dist
	@set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		out=dist/swarm-$(VERSION)-$$os-$$arch$$ext; echo "build $$out"; \
		GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(RELEASE_LDFLAGS)' -o $$out ./cmd/swarm; \
	done
	cd dist && sha256sum swarm-* > SHA256SUMS

# Every architecture x {f32, f16, q8_0} against llama.cpp (node-llama-cpp):
# about a minute without -race; under -race (below) only the f32 rows and
# llama's run, each row costing tens of seconds there. Then every GGML
# quantized type and the Q4_K_M mix (TestLlamaCppOracleQuantized, 12 Llama
# files with Llama 3's vocabulary: a few minutes on 2 cores; under -race
# only q4_k_m).
oracles:
	$(GO) test -run '^TestLlamaCppOracle(Quantized)?$$' ./blocks

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The main job: a local swarm generating a story.
demo: build
	$(BIN) demo

# Benchmarks, benchstat-friendly: make bench BENCH=. COUNT=6 > new.txt
BENCH ?= .
COUNT ?= 1
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -count $(COUNT) -benchmem $(PKGS)

tidy:
	$(GO) mod tidy
	git diff --exit-code go.mod go.sum

clean:
	rm -rf bin dist
