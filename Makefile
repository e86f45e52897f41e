# The project's verbs. CI runs `make test` through .ci/run.
GO        ?= go
OPA       := $(GO) tool opa
COVERAGE  ?= 90
BIN       := bin/mcpx-policy

.PHONY: all build install prereqs test test-full test-go test-go-full test-rego test-rego-coverage lint lint-rego demo bench fuzz clean

all: build

# The first build downloads the modules and compiles OPA: minutes, not
# seconds (README.md); -v lists each package as it compiles;
# -buildvcs=auto stamps the git revision `mcpx-policy version` prints even
# where GOFLAGS says -buildvcs=false.
build:
	@echo "== go build -o $(BIN) (the first build compiles OPA and takes minutes; -v lists the packages)"
	$(GO) build -v -buildvcs=auto -o $(BIN) ./cmd/mcpx-policy

## install: mcpx-policy into $(go env GOBIN), else $(go env GOPATH)/bin
install:
	@echo "== go install ./cmd/mcpx-policy (the first build compiles OPA and takes minutes; -v lists the packages)"
	$(GO) install -v -buildvcs=auto ./cmd/mcpx-policy
	@echo "installed $$(d=$$($(GO) env GOBIN); echo $${d:-$$($(GO) env GOPATH)/bin})/mcpx-policy"

## test: every test — Rego (fmt, strict check, opa test) and Go; the
## long Go-against-Rego sweeps decide a sample of their cases
## (internal/sweep); minutes (README.md says how many). The Rego checks run
## beside the Go tests (-j2): alone they would leave a core idle for 20 s
test: prereqs
	@$(MAKE) --no-print-directory -j2 -Oline test-rego test-go

## test-full: every test with every case of the sweeps (.ci/run runs it)
## and the Rego coverage gate
test-full: prereqs test-rego test-rego-coverage test-go-full

## prereqs: what the tests need beyond Go, each with the command that
## installs it; fails at once when one is missing (.ci/prereqs.sh)
prereqs:
	@.ci/prereqs.sh

# The recipe asks the go command for the pinned OPA's path once: each
# `go tool opa` costs 1½ s of CPU to find the build up to date.
test-rego:
	@echo "== go tool opa (its first use compiles OPA and takes minutes)"; \
	opa=$$($(GO) tool -n opa) && $$opa version > /dev/null && \
	echo "== opa fmt" && { test -z "$$($$opa fmt -l rego/)" || { $$opa fmt -l rego/; echo "rego/ is not opa-fmt formatted: run 'go tool opa fmt -w rego/'"; exit 1; }; } && \
	echo "== opa check --strict" && $$opa check --strict rego/ && \
	echo "== opa test (the policy's tests and the example overrides')" && $$opa test --timeout 60s rego/ examples/overrides/ --fail-on-empty

# The coverage gate runs the Rego tests again, traced: four times the time
# of opa test alone, so it is make test-full's (.ci/run), not make test's.
test-rego-coverage:
	@echo "== opa test coverage >= $(COVERAGE)%"; $(OPA) test --timeout 60s rego/ --coverage --threshold $(COVERAGE) > /dev/null

# The end-to-end tests run real MCP servers from npm, pinned by the lockfile.
e2e/node_modules: e2e/package.json e2e/package-lock.json
	npm ci --prefix e2e --no-audit --no-fund
	@touch $@

# The PostgreSQL ledger tests need a server (internal/ledger/pgledger/pgtest):
# .ci/postgres.sh runs a throwaway cluster for the tests (apt-get install
# postgresql provides it), or uses the one MCPX_POLICY_TEST_PG_DSN names.
# Outside CI, MCPX_POLICY_TEST_PG_DSN=skip skips those tests instead.
# -timeout 30m: with empty build caches policy_test builds the binaries
# its pages and tests run, past go test's default of 10 minutes on a busy
# 2-core machine; with warm caches it ends in about 3.
test-go: e2e/node_modules
	$(GO) vet ./...
	@.ci/postgres.sh run -- $(GO) test -count=1 -timeout 30m ./policy_test/ ./internal/engine/ ./...

# MCPX_POLICY_TEST_FULL=1: the sweeps decide every case (internal/sweep).
test-go-full: e2e/node_modules
	$(GO) vet ./...
	@MCPX_POLICY_TEST_FULL=1 .ci/postgres.sh run -- $(GO) test -count=1 -timeout 40m ./...

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(OPA) fmt -l rego/ && $(OPA) check --strict rego/

## lint-rego: Regal on rego/ with .regal/config.yaml (its deliberate
## exceptions: docs/decisions/0010-regal-and-one-owner-per-fact.md); skipped
## when regal is not on PATH (CI has none, so `make test` does not run it)
lint-rego:
	@if command -v regal > /dev/null; then \
	  echo "regal lint rego/"; regal lint rego/; \
	else \
	  echo "lint-rego: regal is not on PATH; skipped (https://www.openpolicyagent.org/projects/regal)"; \
	fi

## demo: check the example config (its rule examples must all hold), then
## evaluate the bundled example calls and print each decision. The state
## dir is tmp/demo (git ignores tmp/); the approval commands an ask prints
## name bin/mcpx-policy by its path, so they run as printed.
demo: build
	@$(BIN) check --config examples/mcpx-policy.yaml
	@$(BIN) eval --config examples/mcpx-policy.yaml --state-dir tmp/demo examples/calls/*.json; \
	  code=$$?; echo "exit status $$code (0 allow, 2 deny, 3 ask: the most severe)"; test $$code -ne 1

## bench: the reference workloads M and L (internal/bench, and the engine's
## own benchmarks in internal/engine), one summary table of medians over
## BENCH_COUNT runs; raw output in $(BENCH_OUT)
BENCH_COUNT ?= 5
BENCH_CALLS ?= 2000
BENCH_OUT   ?= $${TMPDIR:-/tmp}/mcpx-policy-bench.txt
bench:
	@{ $(GO) test -run '^$$' -bench '^Benchmark(Decide|DecideWarm|Native|OPAServer|StockOPA|DecidePaths|ServeVsOPA)$$' -benchmem \
	     -benchtime $(BENCH_CALLS)x -count $(BENCH_COUNT) -timeout 60m ./internal/bench/ && \
	   $(GO) test -run '^$$' -bench '^Benchmark(DecideNewTools|MatchSchema|RulesOnly)$$' -benchmem \
	     -benchtime $(BENCH_CALLS)x -count $(BENCH_COUNT) -timeout 60m ./internal/engine/ && \
	   $(GO) test -run '^$$' -bench '^BenchmarkPrepare$$' -benchmem -benchtime 1x -count 3 -timeout 30m ./internal/bench/ && \
	   $(GO) test -run '^$$' -bench '^Benchmark(BudgetDecide|FlowDecide)$$' -benchmem \
	     -benchtime $(BENCH_CALLS)x -count $(BENCH_COUNT) -timeout 30m ./policy_test/; \
	 } > $(BENCH_OUT) || { cat $(BENCH_OUT); exit 1; }
	@$(GO) run ./internal/bench/benchtable < $(BENCH_OUT)

clean:
	rm -rf bin
