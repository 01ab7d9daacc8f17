# Mirobody-Go. The two commands a newcomer needs: `make dev` and `make test`.
GO      ?= go
MODULES := services services/stack gateway registry-svc agent-svc vfs-svc
PKGS    := $(foreach m,$(MODULES),./$(m)/...)
# The race detector compiles every dependency a second time and runs tests
# 2-10x slower, so `make test` uses it on the packages whose own code starts
# goroutines or guards shared state with locks: the service runner and NATS
# adapters (services/svc, services/wire), the import pipe of services/vfs,
# the test kit's shared servers and log capture (services/servicetest), the
# gateway's streams, hub, limits and caches, registry-svc's reloads and
# Python worker pool, agent-svc's turn loop, the JS sandbox's interrupt and
# the deep agent's parallel subagents. The rest run without it: contracts,
# config and telemetry, the pure built-in tools, skills and the LLM wire
# clients (sequential code), vfs-svc (stateless handlers; shared state lives
# in Postgres), and services/stack, which has no concurrency of its own, only
# wires those services together (their packages are race-tested), and is the
# slowest package by far. Override to move packages between the sets
# (`make test RACE_PKGS=./vfs-svc`); `RACE_PKGS=` runs everything plain.
RACE_PKGS ?= ./services/svc ./services/wire ./services/vfs ./services/servicetest ./gateway \
	./registry-svc ./registry-svc/internal/pyhost ./agent-svc ./agent-svc/internal/jsrepl ./agent-svc/internal/deep
TESTFLAGS ?=
RACE_LIST  = $(if $(strip $(RACE_PKGS)),$(shell $(GO) list $(RACE_PKGS)))
PLAIN_LIST = $(filter-out $(RACE_LIST),$(shell $(GO) list $(PKGS)))
GOTEST     = $(GO) test -json -count=1 -timeout 25m $(TESTFLAGS)
WITHPG  := $(GO) run ./services/servicetest/cmd/withpg
# Every go test -json event of the last `make test`, for `testtime -report`.
EVENTS  := bin/test-events.json

.PHONY: dev test test-run bench lint build deps tidy node-tools

## dev: the whole stack in one process (embedded NATS, private Postgres under ./.mirobody)
dev: deps
	$(GO) build -o bin/mirobody ./services/stack/cmd/mirobody
	MCP_TOOL_DIRS=$${MCP_TOOL_DIRS:-./tools,builtin} ./bin/mirobody dev

## test: every test of every module, against real NATS and a real private Postgres,
## -race on RACE_PKGS; ends with the run time per module
test: deps
	@mkdir -p bin && rm -f $(EVENTS) && $(GO) build -o bin/testtime ./services/servicetest/cmd/testtime
	@$(WITHPG) $(MAKE) --no-print-directory test-run; s=$$?; bin/testtime -report $(EVENTS) || true; exit $$s

# test-run runs the two sets at once under one withpg: the plain set spends
# its time waiting (Postgres, Python workers, Node clients, timeouts) while
# the race set starts by compiling every dependency again, so together they
# keep both cores busy. Each set writes its own events file (two writers
# would interleave lines); test merges them for the report.
test-run:
	@bin/testtime -o $(EVENTS).plain -- $(GOTEST) $(PLAIN_LIST) & plain=$$!; race=0; \
	if [ -n "$(RACE_LIST)" ]; then bin/testtime -o $(EVENTS).race -- $(GOTEST) -race $(RACE_LIST) || race=$$?; fi; \
	wait $$plain; plain=$$?; cat $(EVENTS).plain $(EVENTS).race > $(EVENTS) 2>/dev/null; rm -f $(EVENTS).plain $(EVENTS).race; \
	exit $$((plain | race))

## node-tools: the Node toolchain of the real-client tests (minutes of npm downloads, once per machine)
node-tools:
	$(GO) run ./services/servicetest/cmd/nodetools

## bench: the Go benchmarks (see each package's *_bench_test.go)
bench: deps
	$(WITHPG) $(GO) test -run '^$$' -bench . -benchmem -count=1 $(PKGS)

## lint: go vet, gofmt, and every module building on its own (GOWORK=off)
lint:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@for m in $(MODULES); do t=$$(date +%s); (cd $$m && GOWORK=off $(GO) build ./...) || { echo "$$m does not build alone (GOWORK=off)"; exit 1; }; echo "$$m builds alone ($$(( $$(date +%s) - t ))s)"; done

## build: every binary into ./bin
build:
	$(GO) build -o bin/ ./services/stack/cmd/mirobody ./gateway/cmd/gateway ./registry-svc/cmd/registry-svc ./agent-svc/cmd/agent-svc ./vfs-svc/cmd/vfs-svc

## deps: the PostgreSQL server binaries, python3 and chromium (installed with apt-get when root)
deps:
	@./deploy/scripts/ensure-deps.sh

# tidy first syncs every go.mod to the workspace's versions, so that a module
# built alone (lint) compiles the same packages as the workspace and reuses them.
tidy:
	$(GO) work sync
	@for m in $(MODULES); do (cd $$m && GOWORK=off $(GO) mod tidy); done
