# surge — developer tasks. Run `make help` for the list.
#
# `make test` is THE test command (README and .ci/run use the same one):
#     go test -race -count=1 ./...
# Fuzz targets' seed corpora (testdata/fuzz/...) run as ordinary tests there.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO       ?= go
PKGS     ?= ./...
BIN      ?= bin/surge
FUZZTIME ?= 30s
# Extra flags for `make run`, e.g. make run ARGS='--addr 127.0.0.1:9090'
ARGS     ?=

# staticcheck 2026.2.2 (module honnef.co/go/tools v0.8.2): latest release,
# requires and supports Go 1.26. Run via `go run` so nothing is installed globally.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

.PHONY: help proto run build image test test-short h2spec test-cluster test-cluster-long test-image bench bench-ledger bench-spike bench-h2-overload bench-overload bench-all lint fmt-check vet staticcheck fuzz clean

help: ## List targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# buf v1.75.0 compiles proto/ (buf.yaml) and runs the plugins pinned in
# buf.gen.yaml (protoc-gen-go, protoc-gen-connect-go, protoc-gen-go-vtproto) with `go run`: Go is all
# a machine needs. The generated code is committed, so builds and CI never run this.
BUF_VERSION := v1.75.0
BUF := $(GO) run github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)

proto: ## Regenerate internal/gen from proto/*.proto (buf + pinned plugins, via go run)
	$(BUF) generate

run: ## Run the server: go run ./cmd/surge serve [ARGS=...]
	$(GO) run ./cmd/surge serve $(ARGS)

build: ## Build the binary into bin/surge
	$(GO) build -o $(BIN) ./cmd/surge

image: ## Container image from scratch (Dockerfile): scripts/image.sh with podman or buildah, tag surge:dev
	scripts/image.sh surge:dev

test: ## THE test command: go test -race -count=1 ./... (fuzz seed corpora included)
	$(GO) test -race -count=1 $(PKGS)

h2spec: ## HTTP/2 conformance: h2spec (pinned in go.mod) against surge, h2c and TLS, every case must pass; part of make test
	$(GO) test -count=1 -v -run 'TestH2SpecConformance$$' ./test/e2e/

test-short: ## Quick loop: go test -short -count=1 ./... (no race detector, skips long tests)
	$(GO) test -short -count=1 $(PKGS)

test-cluster: ## Cluster tests: 3 brokers, one killed; 3 surge nodes, one killed (on plain and on SASL_SSL brokers); routes, the wallet, two-phase and atomic batches on any node (~4 min; Java + Maven)
	SURGE_KAFKA_CLUSTER_TESTS=1 $(GO) test -race -count=1 -run 'TestBrokerDeath' ./internal/cluster/...
	SURGE_KAFKA_CLUSTER_TESTS=1 $(GO) test -race -count=1 -run 'TestClusterSurvivesANodesKill|TestClusterServesOnAnyNode|TestClusterWallet|TestClusterSellsSeatsOnce|TestClusterTwoPhaseAndAtomic|TestClusterAtomicBatchOfTheSingleNodesSize' ./test/e2e/

test-cluster-long: ## 3 brokers and 3 surge nodes, one broker killed under load (~3 min; Java + Maven)
	SURGE_KAFKA_CLUSTER_TESTS=1 $(GO) test -race -count=1 -timeout 20m -run 'TestClusterSurvivesABrokersKill' ./test/e2e/

test-image: ## Build the image with podman and run its surge as the image's user (root: chroot; minutes for the static build)
	SURGE_IMAGE_TESTS=1 $(GO) test -count=1 -run 'TestImage' ./test/e2e/

bench: ## Go benchmarks only (no tests): go test -bench=. -benchmem ./...
	$(GO) test -run='^$$' -bench=. -benchmem $(PKGS)

bench-all: ## Every workload's figures of docs/BENCHMARKS.md in one run (~30 min, idle machine)
	scripts/bench-all.sh

bench-spike: ## Ticketing figures of docs/BENCHMARKS.md: surge bench spike, 1M requests (~15 min, idle machine)
	scripts/bench-spike.sh

bench-h2-overload: ## HTTP/2 spike, light to 100x overload: server CPU per reservation (~12 min, idle machine)
	scripts/bench-h2-overload.sh

bench-overload: ## HTTP/1.1 transfers at 1x and 10x: accepted and refused latency, server CPU per accepted (~3 min, idle machine)
	scripts/bench-overload.sh

bench-ledger: ## Ledger load figures of docs/BENCHMARKS.md: surge bench transfer, single and batch (~12 min, idle machine)
	scripts/bench-ledger.sh

lint: fmt-check vet staticcheck ## gofmt check, go vet and staticcheck (pinned)

fmt-check: ## Fail if any Go file is not gofmt'ed
	@out="$$(find . -type f -name '*.go' -not -path './.git/*' -not -path './vendor/*' \
		-not -path '*/testdata/*' -print0 | xargs -0 -r "$$($(GO) env GOROOT)/bin/gofmt" -l)"; \
	if [ -n "$$out" ]; then echo "gofmt: these files need formatting (run gofmt -w):"; echo "$$out"; exit 1; fi; \
	echo "gofmt: ok"

vet: ## go vet ./...
	$(GO) vet $(PKGS)

staticcheck: ## staticcheck ./... at the pinned version
	$(STATICCHECK) -version
	$(STATICCHECK) $(PKGS)

fuzz: ## Run every fuzz target for FUZZTIME (default 30s) each; targets via go test -list '^Fuzz'
	@list="$$($(GO) test -list '^Fuzz' $(PKGS))"; \
	targets="$$(printf '%s\n' "$$list" | awk ' \
		/^Fuzz/ { names[++n] = $$1; next } \
		/^ok[ \t]/ { for (i = 1; i <= n; i++) print $$2, names[i]; n = 0; next } \
		{ n = 0 }')"; \
	if [ -z "$$targets" ]; then echo "fuzz: no fuzz targets found"; exit 0; fi; \
	echo "fuzz targets ($(FUZZTIME) each):"; printf '%s\n' "$$targets" | sed 's/^/  /'; \
	while read -r pkg name; do \
		echo "=== $$pkg $$name"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) "$$pkg"; \
	done <<< "$$targets"

clean: ## Remove build output (bin/); never touches data/
	rm -rf bin
