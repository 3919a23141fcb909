# queen: developer entry points. `make` (or `make help`) lists the targets; every
# target documented with `## text` on its rule line shows up there.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:
MAKEFLAGS += --no-builtin-rules

GO      ?= go
GOLANGCI_LINT := bin/golangci-lint
PKG     := github.com/queenmq/queen
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.0.0-dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X $(PKG)/internal/buildinfo.Version=$(VERSION) \
           -X $(PKG)/internal/buildinfo.Commit=$(COMMIT) \
           -X $(PKG)/internal/buildinfo.Date=$(DATE)

# The whole suite runs against one throwaway cluster (scripts/pgtest.sh).
TEST_FLAGS ?= -race -count=1 -timeout 12m
REPEAT     ?= 5
# Long-lived dev cluster for pg-start/pg-stop: a symlink to its state directory.
PGTEST_LINK := .pgtest

.PHONY: help
help: ## list targets (this text)
	@printf 'Usage: make TARGET\n\n'
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-11s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build bin/queen, queenctl, queen-proxy and queen-bench (version from git describe)
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/ ./cmd/...

.PHONY: run
run: build ## serve on :6632 against PG_* or a throwaway PostgreSQL
	scripts/run.sh

.PHONY: test
test: lint build ## lint, build, every Go test and one pass of every benchmark (plus queen-bench -quick) against a throwaway PostgreSQL, then test-systemd and test-container
	@# -bench . -benchtime 1x runs each Go benchmark once after the tests, so none rots;
	@# queen-bench -quick runs every bench code path in seconds (its numbers mean nothing).
	@# The dashboard's browser tests need a Chromium: installed here when possible, else they skip.
	scripts/ensure-chromium.sh
	scripts/ensure-patroni.sh
	scripts/ensure-promtool.sh
	scripts/ensure-release-tools.sh
	scripts/pgtest.sh run -- bash -c '$(GO) test $(TEST_FLAGS) -bench . -benchtime 1x ./... && bin/queen-bench -quick'
	scripts/systemd-test.sh
	scripts/container-test.sh

.PHONY: test-repeat
test-repeat: build ## the whole Go suite REPEAT times in a row (default 5) on one throwaway PostgreSQL, as make test runs it; stops at the first red run, prints each run's wall time
	scripts/pgtest.sh run -- bash -c 'log=$$(mktemp); for i in $$(seq $(REPEAT)); do \
		start=$$(date +%s); \
		if ! $(GO) test $(TEST_FLAGS) ./... >"$$log" 2>&1; then \
			grep -E "^(--- FAIL|FAIL|panic:)" "$$log"; echo "run $$i of $(REPEAT): red (full output: $$log)"; exit 1; fi; \
		echo "run $$i of $(REPEAT): green in $$(( $$(date +%s) - start )) s"; done; rm -f "$$log"'

.PHONY: test-systemd
test-systemd: ## units, packages (lintian, rpmlint), deb/rpm lifecycle and install from the signed repositories in a disposable systemd (root; skips what the machine cannot do)
	scripts/systemd-test.sh

.PHONY: test-upgrade
test-upgrade: ## apt-get upgrade and downgrade from the signed repository under the checker's traffic, one broker then two replicas, in a disposable systemd (root; about 5 min)
	SYSTEMD_TEST_STATIC=no scripts/systemd-test.sh upgrade

.PHONY: test-container
test-container: ## build the image (FROM scratch) and run the broker from it with podman (root; skips where podman cannot run)
	scripts/container-test.sh

.PHONY: test-short
test-short: ## unit tests only (go test -short; no PostgreSQL needed)
	$(GO) test -short ./...

# queen-bench (docs/benchmarks.md) runs against the cluster in PG_* when any PG_* variable
# is set (once, labelled with that server's profile); else twice, against a throwaway
# durable cluster (fsync, synchronous_commit, full_page_writes on) and then a throwaway
# fast one (all three off), each report labelled with the profile the server reports.
# BENCH_ARGS='-o json' ends each run's output with one JSON line of results. The Go
# benchmarks run on a fast cluster.
BENCH_ARGS ?=

# bench_runs runs bin/queen-bench $(1) as described above.
define bench_runs
	@if [ -n "$$(compgen -e PG_ || true)" ]; then \
		echo "bench: using the PostgreSQL in PG_* (PG_HOST=$${PG_HOST:-localhost} PG_PORT=$${PG_PORT:-5432})" >&2; \
		bin/queen-bench $(1); \
	else \
		echo "bench: queen-bench against a durable throwaway cluster" >&2; \
		PGTEST_PROFILE=durable scripts/pgtest.sh run -- bin/queen-bench $(1); \
		echo "bench: queen-bench against a fast throwaway cluster" >&2; \
		PGTEST_PROFILE=fast scripts/pgtest.sh run -- bin/queen-bench $(1); \
	fi
endef

.PHONY: bench
bench: build ## Go benchmarks, then queen-bench on a durable and a fast cluster: broker vs raw PostgreSQL ceilings (BENCH_ARGS='-o json')
	PGTEST_PROFILE=fast scripts/pgtest.sh run -- $(GO) test -run '^$$' -bench . -benchtime 100x ./...
	$(call bench_runs,$(BENCH_ARGS))

.PHONY: bench-quick
bench-quick: build ## queen-bench -quick on a durable and a fast cluster (seconds each; the numbers mean nothing)
	$(call bench_runs,-quick $(BENCH_ARGS))

.PHONY: bench-rowcost
bench-rowcost: build ## what each part of a message's row costs PostgreSQL (queen-bench -rowcost), durable then fast (about 10 min each)
	$(call bench_runs,-rowcost $(BENCH_ARGS))

.PHONY: bench-segments
bench-segments: build ## the many-messages-per-row prototype beside today's raw ceilings (queen-bench -segments), durable then fast (about 6 min each)
	$(call bench_runs,-segments $(BENCH_ARGS))

.PHONY: bench-alternate
bench-alternate: build ## this tree's broker against BASE's (default 48feb17), alternated ROUNDS (3) times on one durable cluster: medians and ratios (CASES=, DURATION=)
	PGTEST_PROFILE=durable scripts/pgtest.sh run -- scripts/bench-alternate.sh

.PHONY: check-semantics
check-semantics: ## long concurrency checker (2 brokers, kill/restart); -args via CHECKER_ARGS
	scripts/pgtest.sh run -- $(GO) test -race -count=1 -timeout 90m -run '^TestSemanticsChecker$$' -v ./internal/checker/ -args -checker.long $(CHECKER_ARGS)

.PHONY: check-ha
check-ha: ## long rolling-restart checker (3 brokers, graceful stops and kills); -args via CHECKER_ARGS
	scripts/pgtest.sh run -- $(GO) test -race -count=1 -timeout 90m -run '^TestRollingRestart$$' -v ./internal/checker/ -args -checker.long $(CHECKER_ARGS)

.PHONY: test-failover
test-failover: ## PostgreSQL failover under load: the checker's long run on 2 brokers over a Patroni cluster (kill, rejoin, switchover, replica restart, twice), then brokers allowed onto a standby (root; installs patroni, etcd)
	scripts/ensure-patroni.sh
	$(GO) test -race -count=1 -timeout 60m -run '^TestPostgresFailover(Timers)?$$' -v ./internal/checker/ -args -checker.long $(CHECKER_ARGS)
	$(GO) test -race -count=1 -timeout 30m -run '^TestPostgresFailover$$' -v ./internal/checker/ -args -checker.target-any $(CHECKER_ARGS)

# The cells simulation of docs/scaling.md: 12 cells (a private PostgreSQL cluster and a
# broker each) behind one queen-proxy, 1 000 tenants placed by the proxy, 50 moved while
# producers and consumers run; prints the table of docs/scaling.md. Not part of make
# test, which runs its short form (3 cells, 20 tenants, 2 moves). SIM_ARGS adds flags
# (-cellsim.cells 16, -cellsim.out FILE).
SIM_ARGS ?=

.PHONY: sim-cells
sim-cells: ## the cells simulation: 12 cells, 1 000 tenants, 50 moves under load; lost/duplicated/out-of-order and the proxy's routing overhead (docs/scaling.md; about 3 min)
	scripts/pgtest.sh run -- $(GO) test -count=1 -timeout 60m -run '^TestSimulation$$' -v ./internal/cellsim/ -args -cellsim.full $(SIM_ARGS)

.PHONY: lint
lint: $(GOLANGCI_LINT) ## golangci-lint with .golangci.yml (staticcheck, unused, errcheck, depguard, forbidigo, gofmt, goimports)
	$(GOLANGCI_LINT) run ./...

# golangci-lint at the version tools/go.mod pins (a module of its own, so the linters'
# dependencies stay out of queen's go.mod), built from the Go module proxy.
$(GOLANGCI_LINT): tools/go.mod tools/go.sum
	$(GO) build -C tools -o ../$(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

.PHONY: verify
verify: ## go.mod/go.sum tidy, docs/configuration.md and etc/queen.env up to date
	$(GO) mod tidy -diff
	$(GO) test -count=1 ./internal/config/  # includes the docs/configuration.md and etc/queen.env drift tests

.PHONY: pg-start
pg-start: ## start a long-lived dev PostgreSQL (.pgtest); eval its env for go test
	@scripts/pgtest.sh start $(PGTEST_LINK) >/dev/null
	@printf 'Dev cluster running (%s -> %s). In your shell:\n  eval "$$(scripts/pgtest.sh env %s)"\n  go test ./internal/store/...\nStop it with: make pg-stop\n' \
		'$(PGTEST_LINK)' "$$(readlink $(PGTEST_LINK))" '$(PGTEST_LINK)'

.PHONY: pg-stop
pg-stop: ## stop and remove the dev PostgreSQL started by pg-start
	scripts/pgtest.sh stop $(PGTEST_LINK)

# The dashboard's vendored ES modules (Preact, htm) come from the npm registry at the
# versions in internal/dashboard/dist/vendor/VERSIONS; the Go build never needs npm.
.PHONY: dashboard-vendor
dashboard-vendor: ## re-download the dashboard's vendored JS libraries at their recorded versions (needs npm)
	scripts/dashboard-vendor.sh refresh

# The pictures of docs/dashboard.md are the browser test's screenshots of a seeded broker.
.PHONY: dashboard-screenshots
dashboard-screenshots: ## regenerate docs/dashboard/*.png with the dashboard's browser test (needs Chromium)
	scripts/ensure-chromium.sh
	scripts/pgtest.sh run -- $(GO) test -count=1 -run '^(TestPages|TestActions|TestAuth)$$' ./internal/dashboard/browsertest/ \
		-args -dashboard.screenshots=$(CURDIR)/docs/dashboard

# The picture of the Grafana dashboard in docs/observability.md: the test draws the
# shipped dashboard's panels from its own queries, run by a real Prometheus scraping a
# broker under load (Grafana itself is not packaged in Debian). Not part of make test.
.PHONY: monitoring-screenshot
monitoring-screenshot: ## regenerate docs/monitoring/grafana-dashboard.png from Prometheus scraping a loaded broker (needs Chromium, Prometheus; about 3 min)
	scripts/ensure-chromium.sh
	scripts/ensure-promtool.sh
	scripts/pgtest.sh run -- $(GO) test -count=1 -timeout 15m -run '^TestDashboardPreview$$' ./packaging/monitoring/ \
		-args -monitoring.screenshot=$(CURDIR)/docs/monitoring

.PHONY: dashboard-verify
dashboard-verify: ## prove the dashboard's vendored JS files are byte for byte the npm registry's (needs npm)
	scripts/dashboard-vendor.sh verify

# Packages: scripts/packages builds the binaries per architecture and packs them with
# nfpm (packaging/nfpm.yaml). The version comes from git; PKG_VERSION=1.2.3 overrides.
PKG_ARCH ?= amd64,arm64
PKG_FLAGS = -arch $(PKG_ARCH) -out dist $(if $(PKG_VERSION),-version $(PKG_VERSION))

.PHONY: packages
packages: ## deb and rpm for amd64 and arm64 into dist/ (PKG_VERSION=, PKG_ARCH= override)
	$(GO) run ./scripts/packages $(PKG_FLAGS) -formats deb,rpm

.PHONY: deb
deb: ## only the deb packages (dist/queen_<version>-1_<arch>.deb)
	$(GO) run ./scripts/packages $(PKG_FLAGS) -formats deb

.PHONY: rpm
rpm: ## only the rpm packages (dist/queen-<version>-1.<arch>.rpm; signed with QUEEN_PKG_SIGNING_KEY when set)
	$(GO) run ./scripts/packages $(PKG_FLAGS) -formats rpm

# A release (docs/releasing.md): signed apt and dnf repositories, the images as OCI
# archives with their SBOM, SHA256SUMS and the public key, in dist/release/ (RELEASE_OUT=).
# The key comes from QUEEN_RELEASE_KEY (+ QUEEN_RELEASE_KEY_PASSPHRASE) or
# QUEEN_RELEASE_GNUPGHOME (+ QUEEN_RELEASE_KEY_ID); RELEASE_UNSIGNED=1 for a local trial.
# RELEASE_VERSION=, RELEASE_ARCH= (default amd64,arm64) and RELEASE_IMAGE=0 override.
.PHONY: release
release: ## signed apt and dnf repositories, OCI images, SBOM and SHA256SUMS into dist/release/ (key in QUEEN_RELEASE_KEY; docs/releasing.md)
	scripts/ensure-release-tools.sh
	$(GO) run ./scripts/release

# make test runs the cheap version (amd64, no image, one Go build cache) in go test.
.PHONY: test-reproducible
test-reproducible: ## two signed releases (amd64 and arm64, images) in two clean clones, fresh Go caches: byte-identical binaries, debs, rpms (diffoscope on a difference)
	scripts/ensure-release-tools.sh
	$(GO) test -count=1 -timeout 60m -run '^TestReproducibleRelease$$' -v ./scripts/release/ -args -release.full

# make test runs these checks inside scripts/systemd-test.sh, on the packages it builds.
.PHONY: package-lint
package-lint: ## lintian on the amd64 deb, rpmlint on the rpm; fails on any finding without a listed reason (root installs the tools)
	@paths=$$($(GO) run ./scripts/packages -arch amd64 -out dist/lint $(if $(PKG_VERSION),-version $(PKG_VERSION))); \
		scripts/package-lint.sh "$$(printf '%s\n' $$paths | grep '\.deb$$')" "$$(printf '%s\n' $$paths | grep '\.rpm$$')"

.PHONY: clean
clean: ## remove build, package and coverage output
	rm -rf bin/ dist/ coverage.out coverage.html *.coverprofile

# queen-proxy's cost: queen-bench's push and pop+ack at batch 100 against one broker
# alone, then through queen-proxy in front of it, in the same run, on a durable
# throwaway cluster; prints the ratio and the proxy's CPU seconds per million
# messages (docs/benchmarks.md, "Through queen-proxy"). Not part of make test.
.PHONY: bench-proxy
bench-proxy: build ## queen-bench push/pop+ack b100 via queen-proxy vs the broker alone, durable cluster (BENCH_FLAGS=...)
	PGTEST_PROFILE=durable scripts/pgtest.sh run -- scripts/bench-proxy.sh
