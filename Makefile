# Mirobody-Go. The two commands a newcomer needs: `make dev` and `make test`.
GO      ?= go
MODULES := services services/stack gateway registry-svc agent-svc vfs-svc
PKGS    := $(foreach m,$(MODULES),./$(m)/...)
# -race doubles run time on 2 cores; CI keeps it on (see .ci/run).
RACE    ?= -race
TESTFLAGS ?=
WITHPG  := $(GO) run ./services/servicetest/cmd/withpg

.PHONY: dev test bench lint build deps tidy

## dev: the whole stack in one process (embedded NATS, private Postgres under ./.mirobody)
dev: deps
	$(GO) build -o bin/mirobody ./services/stack/cmd/mirobody
	MCP_TOOL_DIRS=$${MCP_TOOL_DIRS:-./tools,builtin} ./bin/mirobody dev

## test: every test of every module, against real NATS and a real private Postgres
test: deps
	$(WITHPG) $(GO) test $(RACE) -count=1 -timeout 25m $(TESTFLAGS) $(PKGS)

## bench: the Go benchmarks (see each package's *_bench_test.go)
bench: deps
	$(WITHPG) $(GO) test -run '^$$' -bench . -benchmem -count=1 $(PKGS)

## lint: go vet, gofmt, and every module building on its own (GOWORK=off)
lint:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@for m in $(MODULES); do (cd $$m && GOWORK=off $(GO) build ./...) || { echo "$$m does not build alone (GOWORK=off)"; exit 1; }; done

## build: every binary into ./bin
build:
	$(GO) build -o bin/ ./services/stack/cmd/mirobody ./gateway/cmd/gateway ./registry-svc/cmd/registry-svc ./agent-svc/cmd/agent-svc ./vfs-svc/cmd/vfs-svc

## deps: the PostgreSQL server binaries, python3 and chromium (installed with apt-get when root)
deps:
	@./deploy/scripts/ensure-deps.sh

tidy:
	@for m in $(MODULES); do (cd $$m && GOWORK=off $(GO) mod tidy); done
