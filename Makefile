# Abacus developer tasks. `make help` lists them.
SHELL := /bin/bash

GO          ?= go
# Packages of pure logic, run under the race detector (with -short: size-heavy
# property tests run in the full pass that follows; and on the embedded store
# only: the same tests on Cassandra run in that pass, and running them twice
# cost `make test` three minutes).
RACE_PKGS   ?= ./internal/crdt/... ./clock/... ./internal/sharded/... ./internal/ledger/... ./driver/embedded/... ./internal/queue/... ./internal/events/... ./internal/cas/... ./internal/actor/... ./internal/background/...
# Nodes of the dev Cassandra that `make test` runs the fault suite and the
# node-loss tests on (3), after every package has run on a single node; 1
# skips both (and the partition suite) for a quicker local loop. Every
# package runs on one node because three cost CI twelve minutes: on two
# cores the every-package phase took 16-17 min on three nodes, 4.5 min on
# one (driver/cassandra alone: 661 s against 76 s), and what three nodes
# add (replica loss, a node stopped, schema races) is what the fault and
# node-loss tests exercise.
DEV_NODES   ?= 3
# The Cassandra release the whole suite runs on (on DEV_NODES nodes), and
# the older ones whose driver conformance and end-to-end smoke tests run on
# a single node each (`make test-compat`). README.md has the table. A
# release written V/vN runs its lightweight transactions with paxos_variant vN
# (4.1 and later; v1, their default, otherwise), and that leg runs the ledger
# engine's tests too: its claims are what the variant changes.
CASSANDRA_VERSION ?= 5.0
COMPAT_VERSIONS   ?= 2.1 3.11 4.1/v2
# The compat nodes live beside the main cluster: own directory, 127.0.1.1.
COMPAT_ENV   = ABACUS_DEV_DIR=/tmp/abacus-devcassandra-compat ABACUS_DEV_IP_PREFIX=127.0.1
COMPAT_SMOKE = TestServeInProcess|TestServeSurvivesKill9|TestTenServersOneCassandra|TestServersStartTogetherOnFreshKeyspace|TestRetryStormEventsVsNative
FUZZTIME    ?= 30s
# Generated requests per operation for the API fuzzer (scripts/apifuzz).
APIFUZZ_EXAMPLES ?= 50
# The packages with node-loss tests (TestNodeDown*); listing them spares a
# test binary start for every other package.
NODE_DOWN_PKGS = ./driver/cassandra/ ./systemtest/
# Tests whose point is several nodes (the schema reaching every node,
# servers creating it together): they also run on the DEV_NODES cluster,
# before the fault suite.
MULTI_NODE_DRIVER = TestChangeSchemaReachesEveryNode|TestConcurrentOpenFreshKeyspace|TestOpenWaitsForSchemaLock|TestOpenChecksDataCenters
MULTI_NODE_SERVE  = TestTenServersOneCassandra|TestServersStartTogetherOnFreshKeyspace
FAULT_SUITE  = ABACUS_TEST_CASSANDRA_FAULTS=1 $(GO) test -count=1 -p 1 -timeout 20m -v -run Fault ./systemtest/
# The partition suite (docs/faults.md, "Partitions"): four servers in two
# data centers of a 4-node cluster, every model under five nemeses cut with
# scripts/netsplit. Serial and alone: it cuts the network of the nodes.
PARTITION_SUITE = ABACUS_TEST_PARTITIONS=1 $(GO) test -count=1 -p 1 -timeout 30m -v -run TestPartitions ./systemtest/
# staticcheck is pinned by its Go module version (the release 2026.2.2 is
# module v0.8.2; the module proxy serves only module versions) and installed
# into .tools/, one directory per version, so a staticcheck already on the
# machine, of whatever version, is never used in its place.
STATICCHECK_VERSION ?= v0.8.2
TOOLS_DIR   ?= $(CURDIR)/.tools
STATICCHECK ?= $(TOOLS_DIR)/staticcheck-$(STATICCHECK_VERSION)/staticcheck

.DEFAULT_GOAL := help
.PHONY: help build test test-main test-compat test-faults test-partitions test-unit api-fuzz lint fuzz bench cassandra-start cassandra-stop clean

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## Build the abacus binary into ./bin
	$(GO) build -o bin/abacus ./cmd/abacus

test-unit: ## Run every test that needs no Cassandra (Cassandra tests skip and say so)
	$(GO) test -race -short -count=1 $(RACE_PKGS)
	$(GO) test -count=1 ./...

# The full suite. Unless ABACUS_TEST_CASSANDRA already points at a cluster,
# it first runs the compat phase (test-compat: each older release on one
# node), then starts one node of CASSANDRA_VERSION and runs the
# race-enabled unit packages (on the embedded store, while the node
# starts) and every package with the Cassandra tests enabled; then, on a
# fresh DEV_NODES-node cluster, the multi-node schema tests, the fault
# suite and the node-loss tests
# (after the suite: they leave restarted nodes behind); and last the
# partition suite on a 2-data-center cluster of its own (test-partitions;
# needs root). On a cluster of its own (ABACUS_TEST_CASSANDRA set) all but
# the partition suite run there, the fault and node-loss tests if it has
# three nodes.
test: ## Run the whole suite: the API fuzzer, older Cassandra releases, then everything on the newest
	@$(MAKE) --no-print-directory api-fuzz
	@if [ -z "$${ABACUS_TEST_CASSANDRA:-}" ]; then $(MAKE) --no-print-directory test-compat; \
	else echo "== $$(date -u +%T) compat phase skipped: ABACUS_TEST_CASSANDRA points at a cluster of its own"; fi
	@$(MAKE) --no-print-directory test-main

test-main: ## The whole suite on CASSANDRA_VERSION (or on ABACUS_TEST_CASSANDRA)
	@set -euo pipefail; \
	own=; starting=; \
	if [ -z "$${ABACUS_TEST_CHROMIUM:-}" ]; then ABACUS_TEST_CHROMIUM=$$(scripts/chromium); export ABACUS_TEST_CHROMIUM; fi; \
	echo "ABACUS_TEST_CHROMIUM=$$ABACUS_TEST_CHROMIUM (the web console's browser test)"; \
	if [ -z "$${ABACUS_TEST_CASSANDRA:-}" ]; then \
		own=1; \
		trap 'if [ -n "$$starting" ]; then kill $$starting 2>/dev/null || true; wait $$starting 2>/dev/null || true; fi; scripts/devcassandra clean' EXIT; \
		scripts/devcassandra clean; \
		echo "== $$(date -u +%T) Cassandra $(CASSANDRA_VERSION), 1 node: every package"; \
		startlog=$$(mktemp); \
		echo "== $$(date -u +%T) starting it in the background while the race phase runs (log: $$startlog)"; \
		scripts/devcassandra start 1 --version $(CASSANDRA_VERSION) >$$startlog 2>&1 & starting=$$!; \
	fi; \
	echo "== $$(date -u +%T) race detector over the logic packages, on the embedded store (their Cassandra cases run in the next step)"; \
	ABACUS_TEST_CASSANDRA= $(GO) test -race -short -count=1 $(RACE_PKGS); \
	if [ -n "$$own" ]; then \
		if ! wait $$starting; then starting=; cat $$startlog; exit 1; fi; \
		starting=; cat $$startlog; rm -f $$startlog; \
		export $$(scripts/devcassandra env); \
	fi; \
	echo "ABACUS_TEST_CASSANDRA=$$ABACUS_TEST_CASSANDRA"; \
	echo "== $$(date -u +%T) every package, Cassandra tests enabled"; \
	$(GO) test -count=1 -timeout 25m ./...; \
	if [ -n "$$own" ] && [ "$(DEV_NODES)" -ge 3 ]; then \
		echo "== $$(date -u +%T) Cassandra $(CASSANDRA_VERSION), $(DEV_NODES) nodes: the fault suite and the node-loss tests"; \
		scripts/devcassandra clean; \
		scripts/devcassandra start $(DEV_NODES) --version $(CASSANDRA_VERSION); \
		export $$(scripts/devcassandra env); \
		echo "ABACUS_TEST_CASSANDRA=$$ABACUS_TEST_CASSANDRA"; \
	fi; \
	if [ "$$(echo "$$ABACUS_TEST_CASSANDRA" | tr ',' '\n' | grep -c .)" -ge 3 ]; then \
		echo "== $$(date -u +%T) the tests whose point is several nodes"; \
		$(GO) test -count=1 -timeout 10m -run '$(MULTI_NODE_DRIVER)' ./driver/cassandra/; \
		$(GO) test -count=1 -timeout 10m -run '$(MULTI_NODE_SERVE)' ./systemtest/; \
		echo "== $$(date -u +%T) fault suite (the same as make test-faults)"; \
		$(FAULT_SUITE); \
		echo "== $$(date -u +%T) node-loss tests (serial: they stop and restart Cassandra nodes)"; \
		ABACUS_TEST_CASSANDRA_FAULTS=1 $(GO) test -count=1 -p 1 -timeout 15m -run 'NodeDown' $(NODE_DOWN_PKGS); \
		if [ -n "$$own" ]; then \
			echo "== $$(date -u +%T) partition suite on a 4-node, 2-data-center cluster (the same as make test-partitions)"; \
			scripts/devcassandra clean; \
			ABACUS_TEST_CASSANDRA= $(MAKE) --no-print-directory test-partitions; \
		else \
			echo "== $$(date -u +%T) partition suite skipped: it needs a 2-data-center cluster of its own (make test-partitions, as root)"; \
		fi; \
	else \
		echo "== $$(date -u +%T) node-loss tests, fault suite and partition suite skipped: they need DEV_NODES=3 (or a 3-node ABACUS_TEST_CASSANDRA)"; \
	fi

# schemathesis against a real server on the embedded store (scripts/apifuzz):
# generated requests from api/openapi.yaml; no 5xx, no answer outside the
# contract, no invalid request accepted.
api-fuzz: ## Fuzz the HTTP API from its OpenAPI file (APIFUZZ_EXAMPLES per operation, default 50)
	@echo "== $$(date -u +%T) API fuzzer (schemathesis) against a real server"
	GO=$(GO) scripts/apifuzz $(APIFUZZ_EXAMPLES)

# One node of each older release, one after another, on 127.0.1.1: the
# driver's whole package (conformance suite, integration tests, concurrent
# schema creation; not its node-loss test, which needs three nodes) and the
# end-to-end smoke tests of real `abacus serve` processes.
test-compat: ## Conformance and end-to-end smoke tests on one node of each of COMPAT_VERSIONS
	@set -euo pipefail; \
	trap '$(COMPAT_ENV) scripts/devcassandra clean >/dev/null 2>&1 || true' EXIT; \
	for leg in $(COMPAT_VERSIONS); do \
		v=$${leg%%/*}; paxos=; ledger=; \
		if [ "$$leg" != "$$v" ]; then paxos=$${leg#*/}; ledger=./internal/ledger/; fi; \
		echo "== $$(date -u +%T) Cassandra $$v$${paxos:+ (paxos_variant $$paxos)}, 1 node: driver conformance$${ledger:+, ledger engine} and end-to-end smoke tests"; \
		$(COMPAT_ENV) scripts/devcassandra clean; \
		$(COMPAT_ENV) ABACUS_DEV_PAXOS=$${paxos:-v1} scripts/devcassandra start 1 --version $$v; \
		hosts=$$($(COMPAT_ENV) scripts/devcassandra env); \
		env $$hosts ABACUS_DEV_PAXOS=$${paxos:-v1} $(GO) test -count=1 -timeout 10m -skip 'NodeDown' ./driver/cassandra/ $$ledger; \
		env $$hosts $(GO) test -count=1 -timeout 10m -run '$(COMPAT_SMOKE)' ./cmd/abacus/ ./systemtest/; \
	done

# The fault suite (docs/faults.md): real servers and the 3-node cluster under
# client timeouts, SIGKILL, a stopped Cassandra node, racing GC and clock skew,
# one checker over every model. Serial, since it stops and restarts nodes; -v
# shows the per-fault table at the end. Starts and cleans a 3-node cluster like
# `make test` unless ABACUS_TEST_CASSANDRA points at one (which must then be
# the scripts/devcassandra cluster on 127.0.0.1-3 for the node-stopping test).
test-faults: ## Run the fault suite (every model under five faults) against a 3-node Cassandra
	@set -euo pipefail; \
	if [ -z "$${ABACUS_TEST_CASSANDRA:-}" ]; then \
		trap 'scripts/devcassandra clean' EXIT; \
		scripts/devcassandra clean; \
		scripts/devcassandra start 3 --version $(CASSANDRA_VERSION); \
		export $$(scripts/devcassandra env); \
	fi; \
	echo "ABACUS_TEST_CASSANDRA=$$ABACUS_TEST_CASSANDRA"; \
	$(FAULT_SUITE)

# The partition suite. Starts a 4-node, 2-data-center cluster of
# CASSANDRA_VERSION (nodes 1-2 in dc1, 3-4 in dc2) and cleans it, unless
# ABACUS_TEST_CASSANDRA points at one, which must then be that
# scripts/devcassandra cluster: the suite cuts its nodes' network. Every cut
# is healed on the way out, whatever happens.
test-partitions: ## Run the partition suite (every model under five network nemeses) on a 2-data-center Cassandra (as root)
	@set -euo pipefail; \
	if [ -z "$${ABACUS_TEST_CASSANDRA:-}" ]; then \
		trap 'scripts/netsplit heal || true; scripts/netsplit forget || true; scripts/devcassandra clean' EXIT; \
		scripts/devcassandra clean; \
		scripts/devcassandra start 4 --dcs 2 --version $(CASSANDRA_VERSION); \
		hosts=$$(scripts/devcassandra env); export "$$hosts"; \
	else \
		trap 'scripts/netsplit heal || true; scripts/netsplit forget || true' EXIT; \
	fi; \
	echo "ABACUS_TEST_CASSANDRA=$$ABACUS_TEST_CASSANDRA"; \
	$(PARTITION_SUITE)

lint: ## gofmt, go vet, staticcheck, and the monitoring files parsed by Prometheus
	@extra=$$($(GO) list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./client | grep -v -x -e github.com/abacusdb/abacus/client -e github.com/abacusdb/abacus/api || true); \
	if [ -n "$$extra" ]; then echo "client may depend only on api and the standard library, but depends on:"; echo "$$extra"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@for d in $$(git grep -l 'func Test[A-Za-z]*NodeDown' -- '*_test.go' | xargs -n1 dirname | sort -u); do \
		case " $(NODE_DOWN_PKGS) " in *" ./$$d/ "*) ;; *) echo "$$d has node-loss tests; add it to NODE_DOWN_PKGS"; exit 1;; esac; \
	done
	$(GO) vet ./...
	@[ -x "$(STATICCHECK)" ] || GOBIN=$(dir $(STATICCHECK)) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(STATICCHECK) ./...
	@# The alert rules and dashboard queries, by Prometheus's own parsers (a
	@# module of its own: deploy/check/doc.go says why).
	cd deploy/check && $(GO) vet ./... && $(GO) test -count=1 ./...

fuzz: ## Run every fuzz target for FUZZTIME each (default 30s)
	@set -e; for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$f"; $(GO) test $$pkg -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME); \
		done; \
	done

bench: ## Run the Go benchmarks (Cassandra ones need ABACUS_TEST_CASSANDRA)
	$(GO) test -run '^$$' -bench . -benchmem ./...

cassandra-start: ## Start the dev Cassandra (DEV_NODES nodes of CASSANDRA_VERSION)
	scripts/devcassandra start $(DEV_NODES) --version $(CASSANDRA_VERSION)

cassandra-stop: ## Stop the dev Cassandra (keeps its data; `scripts/devcassandra clean` removes it)
	scripts/devcassandra stop

clean: ## Remove build output
	rm -rf bin
