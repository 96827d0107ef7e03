# secondary-scheduler-operator. `make help` lists the targets.

# Image of the operator, for deploy and build-installer: the release's own tag, so that
# dist/install.yaml installs what the bundle does.
IMG ?= ghcr.io/secondary-scheduler/secondary-scheduler-operator:v$(VERSION)
# IMG without its tag or digest (its registry may have a port).
IMG_REPOSITORY = $(shell hack/image-reference.sh repository '$(IMG)')

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

# Every binary and test this Makefile builds is static, as the Dockerfile builds the image's
# (CGO_ENABLED=0): so the tests, the real node's images and the control plane share one
# build of each package, where a cgo build of the tests would compile them all a second time.
export CGO_ENABLED ?= 0
# And every one with -trimpath, as the Dockerfile and hack/build-control-plane.sh build:
# the build cache then keys a package by its module and version, not by the directory it
# was compiled in, so the tests reuse the packages the control plane's build compiled
# (the Kubernetes libraries and most else the operator imports) and the docs test's copy of
# the checkout reuses the operator's own.
export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)

LOCALBIN ?= $(CURDIR)/bin
# The control plane (kube-apiserver, etcd, kubectl, ...) built by hack/build-control-plane.sh;
# envtest finds it through KUBEBUILDER_ASSETS.
KUBE_VERSION ?= v1.37.2
FUZZTIME ?= 10m
CONTROL_PLANE_DIR ?= $(LOCALBIN)/k8s/$(KUBE_VERSION)
KUBECTL ?= $(CONTROL_PLANE_DIR)/kubectl
# What the e2e suite and the docs test run: the control plane, and the real node's kubelet
# and kube-proxy, and kube-router, which enforces its NetworkPolicies; and the descheduler,
# which the integration tests run.
TEST_COMPONENTS = kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl metrics-server kubelet kube-proxy descheduler kube-router
# The kube-scheduler of kubernetes-sigs/scheduler-plugins (Trimaran & co.), built from local
# checkouts by `make scheduler-plugins`. test-e2e and demo run the operator's scheduler-plugins
# image with it when it is there (and SCHEDULER_PLUGINS_BINARY is not set otherwise); when it
# is not, they use the in-tree kube-scheduler and skip what needs Trimaran, as before.
SCHEDULER_PLUGINS_BIN_DIR ?= $(LOCALBIN)/scheduler-plugins
SCHEDULER_PLUGINS_BINARY ?= $(wildcard $(SCHEDULER_PLUGINS_BIN_DIR)/kube-scheduler)

CONTROLLER_TOOLS_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
# ginkgo's command runs the e2e suite in parallel processes; go run builds it at go.mod's
# version of the library, which the command requires.
GINKGO ?= go run github.com/onsi/ginkgo/v2/ginkgo
# The e2e suite's processes: its specs mostly wait on their clusters.
E2E_PROCS ?= 2

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRDs (their descriptions' paragraphs on one line each, for kubectl explain), the operator's ClusterRole, the admission policies the installer ships (config/admission), config/prometheus/alert-rules.yaml (a copy of the alert rules the operator ships) and bindata's copy of the CRD (the offline renderer validates with it).
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./api/...;./controllers/..." output:crd:artifacts:config=config/crd/bases
	go run ./hack/crddescriptions config/crd/bases/*.yaml
	go run ./hack/admissiongen -admission config/admission -routing config/routing
	cp bindata/assets/monitoring/alert-rules.yaml config/prometheus/alert-rules.yaml
	cp config/crd/bases/operator.secondary-scheduler.io_secondaryschedulers.yaml bindata/assets/crd/secondaryschedulers.yaml

.PHONY: plugin-points
plugin-points: ## Regenerate internal/schedconfig/zz_generated_pluginpoints_*.go, the extension points each plugin implements, from the sources of Kubernetes' kube-scheduler (the version hack/pluginpoints pins, from the module cache) and of scheduler-plugins as hack/build-scheduler-plugins.sh pins it; its own plugins only with SCHEDULER_PLUGINS_SRC=checkout (make test-unit checks them against the sources).
	go run ./hack/pluginpoints -out internal/schedconfig

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: docs
docs: ## Write docs/api.md, the API reference, from the CRD (run make manifests first when api/v1 changed).
	go run ./hack/apidocs -crd config/crd/bases/operator.secondary-scheduler.io_secondaryschedulers.yaml -out docs/api.md

.PHONY: fmt
fmt: ## go fmt.
	go fmt ./...

.PHONY: vet
vet: ## go vet, on the e2e and docs suites too (their build tags). make test leaves it to lint (its govet linter, on the same build tags).
	go vet -tags e2e,docs ./...

.PHONY: compile-tests
compile-tests: ## Compile every package the tests build (those of the e2e and docs suites too), without linking or running anything. make test runs it before the suites, which, started together on a cold cache, would each compile the packages they share.
	go list -export -deps -test -tags e2e,docs ./... >/dev/null

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint.
	$(GOLANGCI_LINT) run ./...

.PHONY: lint-fix
lint-fix: $(GOLANGCI_LINT) ## Run golangci-lint and fix what it can.
	$(GOLANGCI_LINT) run --fix ./...

.PHONY: verify-clean
verify-clean: manifests generate docs fmt ## Fail when generating or formatting changed the tree (stale generated files or docs/api.md, unformatted code).
	@if [ -n "$$(git status --porcelain)" ]; then \
		echo "Generated or formatted files differ from the commit; run 'make manifests generate docs fmt' and commit:"; \
		git status --porcelain; git diff | head -60; exit 1; fi

##@ Test

.PHONY: control-plane
control-plane: ## Build the pinned control plane into bin/ (reuses what is there).
	CONTROL_PLANE_DIR=$(CONTROL_PLANE_DIR) KUBE_VERSION=$(KUBE_VERSION) hack/build-control-plane.sh

.PHONY: descheduler
descheduler: ## Build sigs.k8s.io/descheduler, at the release spec.descheduling runs by default, into the control plane's directory (from the module proxy; reuses what is there).
	CONTROL_PLANE_DIR=$(CONTROL_PLANE_DIR) KUBE_VERSION=$(KUBE_VERSION) hack/build-control-plane.sh descheduler

.PHONY: scheduler-plugins
scheduler-plugins: ## Build kube-scheduler and the controller of kubernetes-sigs/scheduler-plugins into bin/scheduler-plugins from checkouts SCHEDULER_PLUGINS_SRC, LOAD_WATCHER_SRC and NUMAPLACEMENT_SRC at the pinned commits (hack/build-scheduler-plugins.sh says which; reuses what is there).
	SCHEDULER_PLUGINS_BIN_DIR="$(SCHEDULER_PLUGINS_BIN_DIR)" SCHEDULER_PLUGINS_SRC="$(SCHEDULER_PLUGINS_SRC)" \
		LOAD_WATCHER_SRC="$(LOAD_WATCHER_SRC)" NUMAPLACEMENT_SRC="$(NUMAPLACEMENT_SRC)" hack/build-scheduler-plugins.sh

.PHONY: test
test: ## Run every test: unit (the OLM bundle's validation among them), integration on a real API server, e2e on local clusters, the docs, lint (vet's analyzers among its linters). With CI set, also fail on stale generated files and a stale bundle. Three phases, the jobs of each at the same time (hack/make-parallel.sh): generating and compile-tests (which compiles what the suites share) beside the control plane's build; then the suites, which mostly wait on their clusters (the e2e suite in one process: two beside the others overload 2 cores), with lint and the checkout pages at the lowest CPU priority; then the e2e suite's real-node specs, since a real node runs in one suite at a time (the docs test's in the second phase).
	hack/make-parallel.sh 'manifests generate fmt $(if $(CI),verify-clean verify-bundle) compile-tests' test-binaries
	hack/make-parallel.sh 'test-e2e E2E_LABELS=!real-node E2E_PROCS=1' test-docs-cluster test-integration test-unit 'nice: test-docs-checkout' 'nice: lint'
	hack/make-parallel.sh 'test-e2e E2E_LABELS=real-node E2E_PROCS=1'

.PHONY: test-binaries
test-binaries: ## Build what the suites run, before make test starts them at the same time: the control plane and the real node's kubelet, kube-proxy and kube-router (reuses what is there).
	CONTROL_PLANE_DIR=$(CONTROL_PLANE_DIR) KUBE_VERSION=$(KUBE_VERSION) hack/build-control-plane.sh $(TEST_COMPONENTS)

.PHONY: test-unit
test-unit: ## Unit tests: every package with tests but those of test-integration (hack/unit-packages.sh lists them; no API server; the metrics probe runs against a real Prometheus on loopback), among them the shipped RBAC against its allow-list, the alert rules and the dashboard's queries with promtool.
	packages=$$(hack/unit-packages.sh) && go test $$packages -count=1

.PHONY: test-integration
test-integration: ## Integration tests: a real kube-apiserver and etcd (envtest) and a real manager; and the real descheduler, under the permissions the operator gives it, with the policy it renders.
	CONTROL_PLANE_DIR=$(CONTROL_PLANE_DIR) KUBE_VERSION=$(KUBE_VERSION) hack/build-control-plane.sh kube-apiserver kube-scheduler etcd kubectl descheduler
	KUBEBUILDER_ASSETS=$(CONTROL_PLANE_DIR) go test ./controllers/... ./internal/admission/... ./internal/metricsauth/... ./test/rbacproxy/... -count=1 -timeout 20m

.PHONY: test-docs
test-docs: test-docs-cluster test-docs-checkout ## Run the docs on the demo's cluster (make demo, as a reader would; stops a demo already running): docs/demo.md command by command, then the commands of every page marked <!-- test-page: demo -->, then every Kubernetes object of README.md and docs/ through its API server (server-side dry run); then the commands of every page marked <!-- test-page: bare --> on a cluster without the operator, with kube-prometheus played by test/kubeprometheus (needs root); then those of every page marked <!-- test-page: checkout --> in a copy of the checkout, which they must leave unchanged.

.PHONY: test-docs-cluster
test-docs-cluster: ## The docs test but for the pages marked checkout: the demo's pages and the bare pages, on their clusters.
	SCHEDULER_PLUGINS_BINARY="$(SCHEDULER_PLUGINS_BINARY)" go test -tags docs ./test/docs/ -count=1 -timeout 45m -v -skip '^TestCheckoutPages$$'

.PHONY: test-docs-checkout
test-docs-checkout: ## The docs test's pages marked checkout, each in a copy of the checkout: they need no cluster, so make test runs them beside the others.
	go test -tags docs ./test/docs/ -count=1 -timeout 45m -v -run '^TestCheckoutPages$$'

.PHONY: test-e2e
E2E_LABELS ?=
test-e2e: ## End to end: the operator binary on a local kwok cluster, scheduler pods running as real kube-scheduler processes (scheduler-plugins' when make scheduler-plugins built it, then also Trimaran); and on a real node (hack/real-node.sh; needs root, containerd, runc and CNI's plugins; the specs labelled real-node), the operator installed from dist/install.yaml and its schedulers running as containers of images built from this checkout. E2E_LABELS=real-node runs only those, E2E_LABELS='!real-node' all others (a ginkgo label filter). The specs run in E2E_PROCS processes (default 2), each with a cluster of its own.
	CONTROL_PLANE_DIR=$(CONTROL_PLANE_DIR) KUBE_VERSION=$(KUBE_VERSION) hack/build-control-plane.sh $(TEST_COMPONENTS)
	CONTROL_PLANE_DIR=$(CONTROL_PLANE_DIR) SCHEDULER_PLUGINS_BINARY="$(SCHEDULER_PLUGINS_BINARY)" $(GINKGO) --procs=$(E2E_PROCS) --tags e2e --timeout 30m -v --no-color $(if $(E2E_LABELS),--label-filter='$(E2E_LABELS)') ./test/e2e/

.PHONY: fuzz
fuzz: ## Fuzz the parsers and renderers of user input, FUZZTIME each (default 10m; FUZZ=FuzzParse for one), keeping the corpus in testdata/fuzz.
	FUZZTIME=$(FUZZTIME) FUZZ=$(FUZZ) hack/fuzz.sh

.PHONY: bench
BENCH ?=
BENCH_COUNT ?= 0
BENCH_BASELINE ?=
bench: ## Benchmarks, about 29 minutes with bin/scheduler-plugins (28m47s measured 2026-11-26), about 18 without it (the outcome benchmark takes 11): the micro-benchmarks (decoding a resource, hostile or not, rendering and config parsing per reconcile, a metrics probe of 500 nodes; time and allocations), then binaries (the sizes and package counts of the operator and the kubectl plugin; no cluster), then every cluster benchmark of test/bench (convergence, edit, scale, references, slow-prometheus, scheduling, outcome (with bin/scheduler-plugins only), routing, memory, idle, pending-pods) on a local cluster of its own, printing tables and writing docs/benchmarks.md. BENCH=name[,name] runs only those cluster benchmarks (no micro-benchmarks) and replaces only their sections; BENCH=drift runs the one benchmark make bench leaves out, descheduling as load drifts (about 110 minutes: its descheduler's cycles are 15 minutes apart, and the drift needs several to settle; needs make descheduler too); BENCH_COUNT=N runs each N times (default: edit 3, the others once) and reports medians; BENCH_BASELINE=path/to/manager runs that build too, side by side (about twice as long).
	$(if $(BENCH),,CGO_ENABLED=0 go test ./api/... ./internal/... -run '^$$' -bench . -benchmem -count 3)
	CGO_ENABLED=0 CONTROL_PLANE_DIR=$(CONTROL_PLANE_DIR) KUBE_VERSION=$(KUBE_VERSION) SCHEDULER_PLUGINS_BINARY="$(SCHEDULER_PLUGINS_BINARY)" go run ./test/bench -bench '$(BENCH)' -count $(BENCH_COUNT) $(if $(BENCH_BASELINE),-baseline-manager '$(BENCH_BASELINE)') -report docs/benchmarks.md

##@ Demo

.PHONY: demo
demo: ## Start a local cluster with a real node (needs root, containerd, runc, containernetworking-plugins, iptables, curl), the operator installed from dist/install.yaml and a bin-packing scheduler running there as containers of images built from the checkout, placing pods; leaves it running.
	SCHEDULER_PLUGINS_BINARY="$(SCHEDULER_PLUGINS_BINARY)" hack/demo.sh up

.PHONY: demo-prometheus
demo-prometheus: ## Add to the demo a Prometheus (port 9090 of this machine) with each node's load, for the load-aware profiles, and the same behind TLS and a token check (port 9091), both behind the Service prometheus in namespace demo (http://prometheus.demo.svc:9090, https://prometheus.demo.svc:9091); needs prometheus on PATH.
	hack/demo.sh prometheus

.PHONY: demo-operator
demo-operator: ## Build the demo operator's image again and roll its pods, running schedulers in SCHEDULER_NAMESPACES (e.g. demo,platform: its role bound in each, and its --scheduler-namespaces flag), binding metrics tokens to METRICS_TOKEN_CLUSTER_ROLES; either one not given keeps its value from the last start (at first: demo, and the operator's default cluster-monitoring-view).
	SCHEDULER_NAMESPACES="$(if $(filter command line environment,$(origin SCHEDULER_NAMESPACES)),$(SCHEDULER_NAMESPACES))" METRICS_TOKEN_CLUSTER_ROLES="$(METRICS_TOKEN_CLUSTER_ROLES)" hack/demo.sh operator

.PHONY: demo-down
demo-down: ## Stop what make demo started.
	hack/demo.sh down

##@ Build

.PHONY: build
build: manifests generate fmt vet ## Build the operator binary, bin/manager, and the kubectl plugin, bin/kubectl-secondary_scheduler (kubectl secondary-scheduler render, docs/render.md).
	go build -o bin/manager .
	go build -o bin/kubectl-secondary_scheduler ./cmd/kubectl-secondary_scheduler

.PHONY: images
PAUSE_IMAGE ?= registry.k8s.io/pause:3.10
images: ## Build bin/images.tar, the images a real node runs (hack/real-node.sh), from static builds on this machine and no registry (hack/buildimages): the operator's (IMG), Kubernetes' kube-scheduler of the control plane's version, the image of every scheduler-plugins release the operator knows, the one it runs by default among them (scheduler-plugins' kube-scheduler when make scheduler-plugins built it, else Kubernetes' in its place, which runs every profile but the load-aware ones), the controller image of each of those releases when make scheduler-plugins built the controller, the descheduler's image when make descheduler built it, and the pause image (PAUSE_IMAGE).
	mkdir -p $(LOCALBIN)/static
	CGO_ENABLED=0 go build -ldflags "-s -w" -o $(LOCALBIN)/static/manager .
	CGO_ENABLED=0 go build -ldflags "-s -w" -o $(LOCALBIN)/static/kubectl-secondary_scheduler ./cmd/kubectl-secondary_scheduler
	CGO_ENABLED=0 go build -ldflags "-s -w" -o $(LOCALBIN)/static/pause ./test/pause
	CONTROL_PLANE_DIR=$(CONTROL_PLANE_DIR) KUBE_VERSION=$(KUBE_VERSION) hack/build-control-plane.sh kube-scheduler
	go run ./hack/buildimages -o $(LOCALBIN)/images.tar -operator $(IMG) -manager $(LOCALBIN)/static/manager \
		-plugin $(LOCALBIN)/static/kubectl-secondary_scheduler -pause $(PAUSE_IMAGE)=$(LOCALBIN)/static/pause \
		-scheduler registry.k8s.io/kube-scheduler:$(KUBE_VERSION)=KubeScheduler:$(CONTROL_PLANE_DIR)/kube-scheduler \
		-scheduler-plugins $(or $(SCHEDULER_PLUGINS_BINARY),$(CONTROL_PLANE_DIR)/kube-scheduler) \
		$(if $(wildcard $(dir $(SCHEDULER_PLUGINS_BINARY))controller),-scheduler-plugins-controller $(dir $(SCHEDULER_PLUGINS_BINARY))controller) \
		$(if $(wildcard $(CONTROL_PLANE_DIR)/descheduler),-descheduler $(CONTROL_PLANE_DIR)/descheduler)

.PHONY: run
SCHEDULER_NAMESPACES ?= default
run: manifests generate fmt vet $(KUBECTL) ## Run the operator against the current kubeconfig, running schedulers in SCHEDULER_NAMESPACES (comma-separated), with the admission policy of config/admission applied and its parameters in namespace secondary-scheduler-operator.
	$(KUBECTL) create namespace secondary-scheduler-operator --dry-run=client -o yaml | $(KUBECTL) apply -f -
	$(KUBECTL) apply --server-side -k config/admission
	-$(KUBECTL) apply --server-side -k config/routing # for spec.routing; a cluster before 1.36 refuses it
	POD_NAMESPACE=secondary-scheduler-operator go run . --metrics-bind-address=0 --health-probe-bind-address=:8081 --scheduler-namespaces=$(SCHEDULER_NAMESPACES)

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests $(KUBECTL) ## Install the CRD into the cluster of the current kubeconfig.
	$(KUBECTL) kustomize config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: manifests ## Remove the CRD. ignore-not-found=true ignores missing objects.
	$(KUBECTL) kustomize config/crd | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: manifests $(KUBECTL) ## Deploy the operator with image IMG (dist/install.yaml stays as committed).
	$(call installer) | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: manifests $(KUBECTL) ## Remove the operator. ignore-not-found=true ignores missing objects.
	$(call installer) | $(KUBECTL) delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: build-installer
build-installer: manifests $(KUBECTL) ## Write dist/install.yaml (CRDs, RBAC, the authority admission policy and the operator, for one kubectl apply) and dist/routing.yaml (the routing policy, for Kubernetes 1.36 and later).
	mkdir -p dist
	$(call installer) > dist/install.yaml
	$(KUBECTL) kustomize config/routing > dist/routing.yaml

# installer writes to stdout what config/default builds, with the operator's image IMG (its
# tag or digest goes at the end of config/manager/kustomization.yaml, which its images entry ends).
define installer
	(tmp=$$(mktemp -d) && cp -r config $$tmp/config && \
	sed -i '/newTag: /d; s#newName: .*#newName: $(IMG_REPOSITORY)#' $$tmp/config/manager/kustomization.yaml && \
	hack/image-reference.sh kustomize '$(IMG)' >> $$tmp/config/manager/kustomization.yaml && \
	$(KUBECTL) kustomize $$tmp/config/default; status=$$?; rm -rf $$tmp; exit $$status)
endef

##@ Tools

$(CONTROLLER_GEN):
	mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $@

$(GOLANGCI_LINT):
	mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(LOCALBIN)/golangci-lint $@

$(KUBECTL):
	CONTROL_PLANE_DIR=$(CONTROL_PLANE_DIR) KUBE_VERSION=$(KUBE_VERSION) hack/build-control-plane.sh kubectl

##@ OLM bundle

# The bundle's version, and the version it replaces (empty: it replaces none).
VERSION ?= 0.1.0
PREVIOUS_VERSION ?=
BUNDLE_IMG_OPERATOR ?= $(IMG_REPOSITORY):v$(VERSION)
# The bundle image built from bundle.Dockerfile, which the catalog points at, and the
# catalog image's base, which serves the catalog.
BUNDLE_IMG ?= $(IMG_REPOSITORY)-bundle:v$(VERSION)
OPM_IMAGE ?= quay.io/operator-framework/opm:v1.56.0

.PHONY: bundle
bundle: manifests ## Write the OLM bundle (bundle/, bundle.Dockerfile) from config/, for VERSION and PREVIOUS_VERSION; never edit it by hand.
	go run ./hack/bundlegen -root . -version $(VERSION) -previous-version "$(PREVIOUS_VERSION)" -image $(BUNDLE_IMG_OPERATOR)

.PHONY: catalog
catalog: ## Write the file-based catalog (catalog/, catalog.Dockerfile) from bundle/, pointing at BUNDLE_IMG; run make bundle first.
	go run ./hack/cataloggen -root . -bundle-image $(BUNDLE_IMG) -opm-image $(OPM_IMAGE)

.PHONY: bundle-validate
bundle-validate: ## Check bundle/ and catalog/ with the rules of OLM's bundle validators and opm validate, the CRD's schema and the RBAC allow-list.
	go test ./internal/olm/... -count=1

.PHONY: verify-bundle
verify-bundle: bundle build-installer ## Fail when bundle/, catalog/ or dist/install.yaml differs from what make bundle catalog build-installer writes (stale or edited by hand).
	$(MAKE) catalog
	@if [ -n "$$(git status --porcelain bundle bundle.Dockerfile catalog catalog.Dockerfile dist)" ]; then \
		echo "bundle/, catalog/ or dist/ is stale; run 'make bundle catalog build-installer' and commit:"; \
		git status --porcelain bundle bundle.Dockerfile catalog catalog.Dockerfile dist; \
		git diff bundle bundle.Dockerfile catalog catalog.Dockerfile dist | head -60; exit 1; fi
