# Mirobody-Go. The two commands a newcomer needs: `make dev` and `make test`.
GO      ?= go
MODULES := services services/stack gateway registry-svc agent-svc vfs-svc
PKGS    := $(foreach m,$(MODULES),./$(m)/...)
# Every test runs under the race detector, and lint compiles with the same
# flag: `go vet -race` and `go build -race` fill the build cache with the
# race-instrumented packages that `go test -race` then reuses. Compiling is
# what a cold machine spends most of its time on (every dependency, nats-server
# and OpenTelemetry included, ~480 CPU-seconds plain), so each package is
# compiled once, not once plain for lint and again with -race for tests.
# (Race on only some packages would bring back that second, plain compile
# for the rest: services/stack alone depends on every package.)
RACE    ?= -race
TESTFLAGS ?=
# withpg is built with $(RACE) too, reusing the packages lint compiled.
WITHPG  := $(GO) run $(RACE) ./services/servicetest/cmd/withpg
# Every go test -json event of the last `make test`, for `testtime -report`.
EVENTS  := bin/test-events.json

.PHONY: dev test chaos bench bench-compare lint build deps tidy node-tools

## dev: the whole stack in one process (embedded NATS, private Postgres under ./.mirobody)
dev: deps
	@echo "Building bin/mirobody. The first build compiles every dependency and takes a few minutes; later ones take seconds."
	@GO="$(GO)" ./deploy/scripts/build-progress.sh -o bin/mirobody ./services/stack/cmd/mirobody
	MCP_TOOL_DIRS=$${MCP_TOOL_DIRS:-./tools,builtin} ./bin/mirobody dev

## test: every test of every module, against real NATS and a real private Postgres;
## ends with the run time per module
test: deps
	@mkdir -p bin && rm -f $(EVENTS) && $(GO) build -o bin/testtime ./services/servicetest/cmd/testtime
	@$(WITHPG) bin/testtime -o $(EVENTS) -- $(GO) test -json $(RACE) -count=1 -timeout 25m $(TESTFLAGS) $(PKGS); \
	s=$$?; bin/testtime -report $(EVENTS) || true; exit $$s

## chaos: the chaos run with long phases (services/stack/design.md "Chaos run"):
## the split topology under load, one replica of each kind and one NATS node
## killed in turn; prints the counts. `make test` runs it with 3 s phases.
## Not under the race detector, so that its timings are the services' own.
CHAOS_PHASE ?= 15s
chaos: deps
	$(GO) run ./services/servicetest/cmd/withpg $(GO) test -count=1 -v -timeout 30m -run '^TestChaos$$' ./services/stack/ -chaos.phase=$(CHAOS_PHASE) -chaos.liveness=2s -chaos.interval=0 -chaos.kill-agent

## node-tools: the Node toolchain of the real-client tests (minutes of npm downloads, once per machine)
node-tools:
	$(GO) run ./services/servicetest/cmd/nodetools

## bench: the Go benchmarks (see each package's *_bench_test.go)
bench: deps
	$(WITHPG) $(GO) test -run '^$$' -bench . -benchmem -count=1 $(PKGS)

## bench-compare: mirobody side by side with a bare go-sdk server (and FastMCP when
## installed): tools/call ratios at c=1, 8, 32, tools/list of 1,000 tools, a Python
## tool over a Go built-in (bench/README.md)
bench-compare: deps
	$(WITHPG) $(GO) test -run '^$$' -bench '^BenchmarkCompare$$' -benchtime 1x -count=1 -timeout 20m ./services/stack/

## lint: gofmt, and go vet of every module on its own (GOWORK=off), which also
## proves each module's go.mod suffices to build it (tests included). Vetting
## per module rather than the workspace at once checks every package once
## and links nothing (`go build ./...` linked each command just to discard
## it); compiled with $(RACE) like the tests (see RACE above).
lint:
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@for m in $(MODULES); do t=$$(date +%s); (cd $$m && GOWORK=off $(GO) vet $(RACE) ./...) || { echo "$$m: go vet failed or the module does not build alone (GOWORK=off)"; exit 1; }; echo "lint $$m: $$(( $$(date +%s) - t ))s"; done

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
