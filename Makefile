# buckety: `make help` lists the targets.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

MODULE  := github.com/Yolean/buckety-controller
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X $(MODULE)/internal/version.Version=$(VERSION)
GOBUILD := CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$(LDFLAGS)"

TOOLS      := test/tools/install.sh
KUBE_TOOLS := etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl
# The directory of the pinned Kubernetes binaries, built on first use and
# cached outside the clone (see test/tools/install.sh).
KUBE_BIN    = $$(dirname "$$($(TOOLS) $(KUBE_TOOLS) | tail -1)")
# Everything the integration tests run: the control plane, the three S3
# servers (VersityGW, MinIO, SeaweedFS), the Kafka-protocol broker, promtool (the alerting rules' unit
# tests) and the real Kafka and S3 clients (a directory of wrappers: kcat,
# python3 with confluent-kafka and boto3, aws, rclone, node with kafkajs),
# each built or fetched once and cached.
TEST_ENV    = $(RUN_ENV) BUCKETY_SEAWEEDFS=$$($(TOOLS) seaweedfs) \
              BUCKETY_PROMTOOL=$$($(TOOLS) promtool) BUCKETY_CLIENTS=$$($(TOOLS) clients)
# What make run needs: the node and the three default backends. SeaweedFS
# (a cold build of minutes) only with SEAWEEDFS=true.
RUN_ENV     = BUCKETY_KUBE_BIN=$(KUBE_BIN) \
              BUCKETY_VERSITYGW=$$($(TOOLS) versitygw) BUCKETY_MINIO=$$($(TOOLS) minio) \
              BUCKETY_KFAKE_BROKER=$(CURDIR)/bin/test/kfake-broker
SEAWEEDFS  ?= false
RUN_DIR    := .run
# The build tag that compiles in the controller's test pause points
# (internal/testhook); the release build never sets it.
TESTHOOKS  := buckety_testhooks
# Executions per fuzz target in make test (a count, not a duration: Go's
# fuzzer can report a spurious "context deadline exceeded" when a duration
# ends on a loaded machine), and per target in make fuzz.
FUZZ_SMOKE ?= 2000x
FUZZTIME   ?= 1000000x
# Every fuzz target in the tree, as "./pkg FuzzName" lines: a new target is
# picked up without editing this file.
FUZZ_TARGETS = grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' cmd internal drivers test | sed -E 's|^(.*)/[^/]*:func (.*)|./\1 \2|' | sort -u

# make help prints every target with a `## ` comment on its rule line,
# grouped by the `##@ Section` line above it (a section may be named more
# than once: its targets are gathered), sections in HELP_SECTIONS' order.
HELP_SECTIONS := Try it|Test|Benchmarks|Build and release|Generated files and checks

##@ Try it
.PHONY: help
help: ## list targets, by section
	@awk -v order='$(HELP_SECTIONS)' ' \
	  /^##@ / { sec = substr($$0, 5); next } \
	  /^[A-Za-z0-9_.-]+:.*## / { name = $$0; sub(/:.*/, "", name); text = $$0; sub(/^[^#]*## /, "", text); \
	    lines[sec] = lines[sec] sprintf("  make %-18s %s\n", name, text) } \
	  END { n = split(order, secs, "|"); for (i = 1; i <= n; i++) if (secs[i] in lines) { printf "%s%s:\n%s", (i > 1 ? "\n" : ""), secs[i], lines[secs[i]]; delete lines[secs[i]] } \
	    for (sec in lines) { printf "\n%s:\n%s", sec, lines[sec] } }' $(MAKEFILE_LIST)

##@ Build and release
.PHONY: build
build: ## build the three binaries into bin/ with version ldflags
	$(GOBUILD) -o bin/ ./cmd/buckety-controller ./cmd/buckety-webhook ./cmd/buckety-release

.PHONY: image
image: ## build the image as an OCI layout in ./oci (BASE_IMAGE, digest-pinned; default hack/base-image once make pin-base has pinned it)
	hack/image.sh

.PHONY: image-local
image-local: ## make image on a stand-in base served by a local registry (no network needed)
	hack/with-local-base.sh hack/image.sh

.PHONY: pin-base
pin-base: ## pin hack/base-image to the current digest of the distroless base (needs the registry)
	ref=$$(sed 's/@.*//' hack/base-image); \
	digest=$$(go run github.com/google/go-containerregistry/cmd/crane@v0.22.1 digest "$$ref"); \
	echo "$$ref@$$digest" > hack/base-image; cat hack/base-image

.PHONY: release
release: ## render deploy/kustomize/release from ./oci (after make image)
	go run ./cmd/buckety-release render --oci-dir oci --out deploy/kustomize/release

##@ Generated files and checks
.PHONY: generate
generate: ## regenerate deepcopy, CRDs, the published JSON schemas and the docs' generated tables
	go tool controller-gen object:headerFile=hack/boilerplate.go.txt paths=./internal/api/...
	go tool controller-gen crd paths=./internal/api/... output:crd:artifacts:config=deploy/kustomize/base/crds
	go tool controller-gen rbac:roleName=buckety-controller paths=./internal/controller/... paths=./internal/app/controller/... output:rbac:artifacts:config=deploy/kustomize/base/rbac
	go tool controller-gen rbac:roleName=buckety-webhook paths=./internal/app/webhook/... output:rbac:artifacts:config=deploy/kustomize/base/webhook/rbac
	go run ./cmd/buckety-release schemas --root . >/dev/null
	go run ./cmd/buckety-release docs --root . >/dev/null

# Paths that `make generate` writes: wholly, or (the docs) between their
# GENERATED markers.
GENERATED := internal/api/v1alpha1/zz_generated.deepcopy.go deploy/kustomize/base/crds deploy/kustomize/base/rbac deploy/kustomize/base/webhook/rbac deploy/schema $(wildcard drivers/*/schema) README.md docs $(wildcard drivers/*/README.md)

.PHONY: verify
verify: verify-generated lint ## fail on generated-file drift, untidy modules, gofmt, go vet or staticcheck findings

# verify-generated is verify's part that make test runs first: the e2e
# builds from the generated files, so they are checked before it starts.
.PHONY: verify-generated lint
verify-generated: ## verify's first part: generated files, tidy modules, gofmt
	@snap=$$(mktemp -d); trap 'rm -rf "$$snap"' EXIT; \
	cp -r --parents $(GENERATED) "$$snap"/; \
	$(MAKE) --no-print-directory generate >/dev/null; \
	drift=0; for g in $(GENERATED); do diff -ru "$$snap/$$g" "$$g" || drift=1; done; \
	if [ $$drift = 1 ]; then echo "generated files drifted from their sources (diff above): run make generate and commit"; exit 1; fi
	go mod tidy -diff
	cd test/tools/kube && go mod tidy -diff
	cd test/tools/etcd && go mod tidy -diff
	@if [ -n "$$(gofmt -l cmd internal drivers test)" ]; then echo "gofmt needed:"; gofmt -l cmd internal drivers test; exit 1; fi

# lint is verify's other part: make test runs it beside the e2e suite.
lint: ## verify's second part: go vet and staticcheck
	go vet ./...
	go vet -tags $(TESTHOOKS) ./internal/testhook/ ./test/integration/
	go tool staticcheck ./...

##@ Test
.PHONY: tools
tools: ## build the pinned Kubernetes, etcd, VersityGW, MinIO and SeaweedFS binaries, fetch contain, promtool and the real clients (cached outside the clone)
	$(TOOLS) $(KUBE_TOOLS) versitygw minio seaweedfs contain promtool clients

.PHONY: test-binaries
test-binaries: ## build the test programs (the Kafka-protocol broker)
	go run ./test/kafka/cmd/build-broker bin/test/kfake-broker

.PHONY: test-unit
test-unit: ## unit tests only (no control plane)
	go test -short -race -count=1 ./...

# Each package's fuzz test binary is built once (go test -fuzz relinks it
# per target) and run from the package directory, which is where a failing
# input is saved (testdata/fuzz) and seeds are read from.
define fuzz-all
bin=$$(mktemp -d); trap 'rm -rf "$$bin"' EXIT; cache=$$(go env GOCACHE)/fuzz; \
$(FUZZ_TARGETS) | while read -r pkg fn; do \
  t="$$bin/$$(echo "$$pkg" | tr ./ __).test"; \
  [ -x "$$t" ] || go test $(TEST_LDFLAGS) -c -fuzz=. -o "$$t" "$$pkg"; \
  echo "fuzz $$pkg $$fn ($(1))"; \
  (cd "$$pkg" && "$$t" -test.run='^$$' -test.fuzz="^$$fn\$$" -test.fuzztime=$(1) -test.fuzzcachedir="$$cache") || exit 1; \
done
endef

.PHONY: test-fuzz
test-fuzz: ## bounded smoke of every fuzz target (FUZZ_SMOKE executions each; part of make test)
	@$(call fuzz-all,$(FUZZ_SMOKE))

.PHONY: fuzz
fuzz: ## every fuzz target for FUZZTIME each (default 1000000x; not part of make test)
	@$(call fuzz-all,$(FUZZTIME))

# make test links about seventy test binaries, each for one run: without
# DWARF (a stack trace reads the symbol table, not DWARF) a link takes a
# third less CPU (test/integration: 16.8 against 25.3 CPU-seconds). A
# debugger wants it: TEST_LDFLAGS= puts it back.
TEST_LDFLAGS ?= -ldflags=-w

.PHONY: test-integration
# The bounded fault runs in make test replay one recorded seed, so CI is
# repeatable; make faults draws a new seed every run (FAULTS_SEED replays).
TEST_FAULTS_SEED ?= 1795333845002920028

test-integration: test-binaries ## every test, integration included, on a real control plane and real backends
	$(TEST_ENV) FAULTS_SEED=$${FAULTS_SEED:-$(TEST_FAULTS_SEED)} go test $(TEST_LDFLAGS) -tags $(TESTHOOKS) -count=1 -timeout $(GO_TEST_TIMEOUT) ./...

# A package's -timeout is a backstop for a hung test, not a speed goal:
# test/integration takes about 11 min alone and took 23 min in a CI run on
# a busy host, so a 30 min backstop could fail a run that was only slow.
GO_TEST_TIMEOUT ?= 60m

# make test runs the Go tests beside the e2e suite, which mostly waits. The
# local node (test/cluster) is one per machine: test/localstack's tests
# bring it up as the e2e does, so they run after it.
NODE_PKGS := ./test/localstack
# test/integration is the longest package by far (about 21 min in make
# test): it runs on its own, and every other off-node package one after
# the other beside it (go test's own -p 2 started it only after the
# packages listed before it, about 7 min late, and make test waited for it).
LONG_PKGS := ./test/integration
.PHONY: test-integration-off-node test-node test-go-long test-go-rest
test-integration-off-node: test-binaries
	$(MAKE) --no-print-directory -j2 --output-sync=target test-go-long test-go-rest
test-go-long:
	$(TEST_ENV) go test $(TEST_LDFLAGS) -tags $(TESTHOOKS) -count=1 -timeout $(GO_TEST_TIMEOUT) $(LONG_PKGS)
test-go-rest:
	$(TEST_ENV) FAULTS_SEED=$${FAULTS_SEED:-$(TEST_FAULTS_SEED)} go test $(TEST_LDFLAGS) -p 1 -tags $(TESTHOOKS) -count=1 -timeout $(GO_TEST_TIMEOUT) $$(go list ./... | grep -v -e '/test/localstack$$' -e '/test/integration$$')
test-node: test-binaries
	$(TEST_ENV) go test $(TEST_LDFLAGS) -tags $(TESTHOOKS) -count=1 -timeout $(GO_TEST_TIMEOUT) $(NODE_PKGS)

.PHONY: faults
faults: test-binaries ## the fault harness at full size: broker outages, S3 restart mid-delete, controller crash loop, apiserver restart, a hostile tenant; prints the table (FAULTS_SEED replays; FAULTS_S3=versitygw or seaweedfs picks the S3 server)
	@mkdir -p $(RUN_DIR)
	$(TEST_ENV) FAULTS_FULL=1 FAULTS_TABLE=$(CURDIR)/$(RUN_DIR)/faults-table.txt go test -count=1 -timeout 90m -v -run '^TestFaults$$' ./test/faults

##@ Benchmarks
.PHONY: bench
bench: test-binaries ## run the benchmarks and print their figures (not part of make test)
	$(TEST_ENV) go test -run '^$$' -bench . -benchtime 1000x ./drivers/... ./internal/admission/
	$(TEST_ENV) go test -run '^$$' -bench Admission -benchtime 500x ./test/integration/

.PHONY: bench-scale
# Issue 16's sizes; SCALE_N and the other SCALE_* knobs of test/scale
# override them (SCALE_N=200,1000 for a shorter run).
bench-scale: test-binaries ## the scale benchmark: N kadm Bucketies (200, 1000, 3000), floor, Kafka requests, memory, webhook, cold start, keys per access on MinIO and SeaweedFS; prints the table and writes .run/bench-scale.txt
	@mkdir -p $(RUN_DIR)
	$(TEST_ENV) SCALE_FULL=1 SCALE_TABLE=$(CURDIR)/$(RUN_DIR)/bench-scale.txt SCALE_PROFILE_DIR=$${SCALE_PROFILE_DIR:-$(CURDIR)/$(RUN_DIR)} go test -count=1 -timeout 180m -v -run '^TestScale$$' ./test/scale

.PHONY: bench-scale-10k
# Issue 36's 10,000: the kadm rows only, at 1000 and 10,000 in one run, so
# the linearity row compares the two on the same machine state.
bench-scale-10k: test-binaries ## the scale benchmark's kadm rows at N = 1000 and 10,000 in one run (linearity, memory, cold start, re-check at 10,000); writes .run/bench-scale-10k.txt
	@mkdir -p $(RUN_DIR)
	$(TEST_ENV) SCALE_FULL=1 SCALE_N=$${SCALE_N:-1000,10000} SCALE_S3_N=0 SCALE_S3_SCOPED_N= SCALE_S3_IAM_N= SCALE_S3_VERSITY_N= SCALE_SCOPED_N= SCALE_TABLE=$(CURDIR)/$(RUN_DIR)/bench-scale-10k.txt SCALE_PROFILE_DIR=$${SCALE_PROFILE_DIR:-$(CURDIR)/$(RUN_DIR)} go test -count=1 -timeout 180m -v -run '^TestScale$$' ./test/scale

.PHONY: bench-scale-100k
# Issue 54's 100,000 on shards: about 75-90 min alone on two cores, and more
# memory than the control plane has at 10,000 (docs/performance.md, "100,000
# Bucketies on shards"). SCALE_N and SCALE_REPLICAS override the sizes
# (SCALE_N=1000,10000 for a run of about 20 min); 1000 is the webhook's
# baseline. SCALE_SHARDS_PER_REPLICA=M runs --shards R×M.
bench-scale-100k: test-binaries ## kadm Bucketies at N = 1000, 10,000 and 100,000 with 1 and 4 controller replicas (--shards 4): linearity, RSS per replica, a shard's leader killed, drift sweep per shard, webhook, cold start; writes .run/bench-scale-100k.txt
	@mkdir -p $(RUN_DIR)
	$(TEST_ENV) SCALE_FULL=1 SCALE_N=$${SCALE_N:-1000,10000,100000} SCALE_REPLICAS=$${SCALE_REPLICAS:-1,4} SCALE_TABLE=$(CURDIR)/$(RUN_DIR)/bench-scale-100k.txt go test -count=1 -timeout 240m -v -run '^TestScaleShards$$' ./test/scale

.PHONY: bench-peers
# Issue 36: buckety against crossplane-contrib/provider-kafka, built from
# PEER_SRC (docs/performance.md, "Against provider-kafka", names the commit
# and how to get it). BENCH_PEERS_N, BENCH_PEERS_REPS and the other knobs of
# test/scale/peers_test.go override the sizes.
bench-peers: ## buckety vs provider-kafka (PEER_SRC=checkout): N=1000 topics with access and Secret, interleaved repetitions, ratios; writes .run/bench-peers.txt
	@if [ -z "$(PEER_SRC)" ]; then \
	  echo "bench-peers: PEER_SRC is not set: a checkout of crossplane-contrib/provider-kafka at the commit docs/performance.md names, e.g."; \
	  echo "  git clone https://github.com/crossplane-contrib/provider-kafka /tmp/provider-kafka && git -C /tmp/provider-kafka checkout ead84f9"; \
	  echo "  make bench-peers PEER_SRC=/tmp/provider-kafka"; exit 2; fi
	$(MAKE) --no-print-directory test-binaries
	@mkdir -p $(RUN_DIR)
	$(TEST_ENV) PEER_SRC=$(abspath $(PEER_SRC)) BENCH_PEERS_FULL=1 BENCH_PEERS_TABLE=$(CURDIR)/$(RUN_DIR)/bench-peers.txt go test -count=1 -timeout 240m -v -run '^TestPeers$$' ./test/scale

##@ Test
.PHONY: e2e
e2e: test-binaries ## the e2e scenario suites on the local node (IMPLEMENTATIONS, SCENARIOS, KEEP_FAILED, KEEP)
	$(TEST_ENV) test/e2e/local.sh

.PHONY: stop-e2e
stop-e2e: ## remove an environment make e2e kept (KEEP=true or KEEP_FAILED=true)
	go run ./test/localstack/cmd/buckety-local down --dir $(RUN_DIR)/e2e

.PHONY: test
test: verify-generated tools test-binaries ## everything CI runs: verify, fuzz smoke, unit, integration and e2e tests
	@# Side by side, each target's output printed whole when it ends. The
	@# generated files' check (it regenerates files the e2e builds from) and
	@# the tools come first, so the two sides never build one tool into the
	@# cache at once; vet and staticcheck run on the Go side (test-go), which
	@# ends before the e2e suite does.
	$(MAKE) --no-print-directory -j2 --output-sync=target test-go test-e2e-side

# test-go is make test's Go side, in two lines side by side: vet and
# staticcheck, then test/integration; the fuzz smoke, then every other Go
# test but the node's, one package at a time.
.PHONY: test-go test-e2e-side test-go-long-line test-go-rest-line
test-go: test-binaries
	$(MAKE) --no-print-directory -j2 --output-sync=target test-go-long-line test-go-rest-line
test-go-long-line:
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory test-go-long
test-go-rest-line:
	$(MAKE) --no-print-directory test-fuzz
	$(MAKE) --no-print-directory test-go-rest

# test-e2e-side is make test's node side: the e2e suites, then the node's
# own Go tests (test/localstack), which need the node the e2e suite has
# just given back.
test-e2e-side:
	$(MAKE) --no-print-directory e2e
	$(MAKE) --no-print-directory test-node

##@ Try it
.PHONY: run
run: test-binaries ## the whole product on a local node: node, backends, image, buckety from the release, examples (SEAWEEDFS=true adds SeaweedFS)
	@$(RUN_ENV) $(if $(filter true,$(SEAWEEDFS)),BUCKETY_SEAWEEDFS=$$($(TOOLS) seaweedfs)) go run ./test/localstack/cmd/buckety-local up --dir $(RUN_DIR)/local $(if $(filter true,$(SEAWEEDFS)),--seaweedfs)

.PHONY: stop
stop: ## stop everything `make run` started and remove what it left on the host
	go run ./test/localstack/cmd/buckety-local down --dir $(RUN_DIR)/local

.PHONY: run-controlplane
run-controlplane: ## only a control plane with the CRDs (no root needed); stop with make stop-controlplane
	@BUCKETY_KUBE_BIN=$(KUBE_BIN) go run ./test/controlplane/cmd/controlplane up --dir $(RUN_DIR)/controlplane
	@echo "export KUBECONFIG=$(CURDIR)/$(RUN_DIR)/controlplane/kubeconfig"

.PHONY: stop-controlplane
stop-controlplane: ## stop what make run-controlplane started
	go run ./test/controlplane/cmd/controlplane down --dir $(RUN_DIR)/controlplane

.PHONY: clean
clean: stop ## stop and remove build output
	rm -rf bin oci
