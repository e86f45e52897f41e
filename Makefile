# The project's verbs. CI runs `make test` through .ci/run.
GO        ?= go
OPA       := $(GO) tool opa
COVERAGE  ?= 90
BIN       := bin/mcpx-policy

.PHONY: all build test test-go test-rego lint demo bench fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/mcpx-policy

## test: every test — Rego (coverage gate, fmt, strict check) and Go
test: test-rego test-go

test-rego:
	@echo "== opa fmt"; test -z "$$($(OPA) fmt -l rego/)" || { $(OPA) fmt -l rego/; echo "rego/ is not opa-fmt formatted: run 'go tool opa fmt -w rego/'"; exit 1; }
	@echo "== opa check --strict"; $(OPA) check --strict rego/
	@echo "== opa test"; $(OPA) test rego/ --fail-on-empty
	@echo "== opa test (example overrides)"; $(OPA) test rego/ examples/overrides/ --fail-on-empty
	@echo "== opa test coverage >= $(COVERAGE)%"; $(OPA) test rego/ --coverage --threshold $(COVERAGE) > /dev/null

# The end-to-end tests run real MCP servers from npm, pinned by the lockfile.
e2e/node_modules: e2e/package.json e2e/package-lock.json
	npm ci --prefix e2e --no-audit --no-fund
	@touch $@

test-go: e2e/node_modules
	$(GO) vet ./...
	$(GO) test -count=1 ./...

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(OPA) fmt -l rego/ && $(OPA) check --strict rego/

## demo: check the example config (its rule examples must all hold), then
## evaluate the bundled example calls and print each decision
demo: build
	@$(BIN) check --config examples/mcpx-policy.yaml
	@$(BIN) eval --config examples/mcpx-policy.yaml --state-dir $${TMPDIR:-/tmp}/mcpx-policy-demo examples/calls/*.json; \
	  code=$$?; echo "exit status $$code (0 allow, 2 deny, 3 ask: the most severe)"; test $$code -ne 1

## bench: the reference workloads M and L (internal/bench), one summary table
## of medians over BENCH_COUNT runs; raw output in $(BENCH_OUT)
BENCH_COUNT ?= 5
BENCH_CALLS ?= 2000
BENCH_OUT   ?= $${TMPDIR:-/tmp}/mcpx-policy-bench.txt
bench:
	@{ $(GO) test -run '^$$' -bench '^Benchmark(Decide|DecideNewTools|DecideWarm|Native|MatchSchema|RulesOnly|OPAServer)$$' -benchmem \
	     -benchtime $(BENCH_CALLS)x -count $(BENCH_COUNT) -timeout 60m ./internal/bench/ && \
	   $(GO) test -run '^$$' -bench '^BenchmarkPrepare$$' -benchmem -benchtime 1x -count 3 -timeout 30m ./internal/bench/; \
	 } > $(BENCH_OUT) || { cat $(BENCH_OUT); exit 1; }
	@$(GO) run ./internal/bench/benchtable < $(BENCH_OUT)

clean:
	rm -rf bin
