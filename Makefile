# manent.kubernetes — developer entry points (see README.md).
SHELL := /bin/bash
.DEFAULT_GOAL := help
ROOT := $(abspath .)
CACHE ?= $(or $(MANENT_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/manent)
# The main line: the newest stable ansible-core on the newest Python it supports (the strictest TLS defaults).
# hack/python.sh finds it on PATH or in pyenv; other lines run in `make test-matrix` (hack/test-matrix.txt).
PYTHON_VERSION := 3.13
PYTHON ?= $(shell bash hack/python.sh $(PYTHON_VERSION) 2>/dev/null)
REQ_HASH := $(shell cat requirements.txt requirements-dev.txt | sha256sum | cut -c1-12)
VENV ?= $(CACHE)/venv-py$(PYTHON_VERSION)-$(REQ_HASH)
VPY := $(VENV)/bin/python
COLLECTIONS := $(ROOT)/.build/collections
export MANENT_CACHE := $(CACHE)
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export PATH := $(VENV)/bin:$(PATH)

.PHONY: help venv tools collection-link clusters clusters-down clusters-status prometheus prometheus-down test unit integration lint sanity build demo clean docs-lint changelog-lint ee-check test-matrix docs

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

$(VPY): requirements.txt requirements-dev.txt
	@test -n "$(PYTHON)" || { bash hack/python.sh $(PYTHON_VERSION); exit 1; }
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --disable-pip-version-check -r requirements-dev.txt
	@touch $(VPY)

venv: $(VPY) ## create the pinned Python environment (cached outside the clone, keyed by requirements)

tools: ## build or reuse etcd, kube-*, kwok, helm, prometheus and the CRDs (cached, keyed by version)
	bash hack/build-tools.sh all

collection-link:
	@mkdir -p $(COLLECTIONS)/ansible_collections/manent
	@ln -sfn $(ROOT) $(COLLECTIONS)/ansible_collections/manent/kubernetes

clusters: venv tools ## start the local clusters (3: eu-1a, eu-1b, us-1a) and write .clusters/inventory.yml
	$(VPY) hack/clusters.py up

clusters-down: ## stop the local clusters
	$(VPY) hack/clusters.py down

clusters-status: ## show the local clusters
	$(VPY) hack/clusters.py status

prometheus: venv ## start the Prometheus test rig in .prometheus/ (Prometheus scraping the traffic exporter every second)
	bash hack/build-tools.sh prometheus
	$(VPY) hack/prometheus.py up

prometheus-down: ## stop the Prometheus test rig
	$(VPY) hack/prometheus.py down

unit: venv collection-link ## unit tests only
	$(VPY) -m pytest tests/unit -q

integration: venv tools collection-link ## integration tests (start the clusters if needed)
	$(VPY) -m pytest tests/integration -q

test: venv tools collection-link ## every test: unit, integration against real local clusters, the version matrix, lint, build
	$(VPY) -m pytest tests -q -p no:cacheprovider --durations=15 -n 2 --dist loadfile
	$(MAKE) --no-print-directory test-matrix sanity lint docs-lint docs changelog-lint ee-check build

SANITY_DIR := $(ROOT)/.build/sanity/ansible_collections/manent/kubernetes
sanity: venv ## ansible-test sanity on a copy of the tracked files (the layout ansible-test needs)
	rm -rf $(SANITY_DIR) && mkdir -p $(SANITY_DIR)
	git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t $(SANITY_DIR)
	mkdir -p $(HOME)/.ansible/test/cache && cp hack/ansible-test-pip-shim.py \
		$(HOME)/.ansible/test/cache/get_pip_$$($(VPY) hack/ansible-test-pip-version.py).py
	cd $(SANITY_DIR) && git init -q . && git add -A && $(VENV)/bin/ansible-test sanity --python $(PYTHON_VERSION) --color no

lint: venv collection-link ## ansible-lint (production profile)
	cd $(ROOT) && $(VENV)/bin/ansible-lint --profile production --offline -q roles playbooks examples

DOCS_DIR := $(ROOT)/.build/docs-lint/ansible_collections/manent/kubernetes
docs-lint: venv ## antsibull-docs lint of module, filter and role docs (on a copy of the tracked files)
	rm -rf $(DOCS_DIR) && mkdir -p $(DOCS_DIR)
	git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t $(DOCS_DIR)
	cd $(DOCS_DIR) && ANSIBLE_COLLECTIONS_PATH=$(ROOT)/.build/docs-lint $(VENV)/bin/antsibull-docs lint-collection-docs --plugin-docs .

docs: venv collection-link ## the docs site (antsibull-docs + Sphinx, warnings are errors) in .build/docs-site/html
	PYTHON=$(PYTHON) bash hack/docs-site.sh

changelog-lint: venv ## antsibull-changelog lint of changelogs/ (add a fragment per user-facing change)
	$(VENV)/bin/antsibull-changelog lint

ee-check: venv ## ansible-builder create on the example execution environment; it must install exactly requirements.txt and bindep.txt
	bash hack/check-ee.sh

test-matrix: venv tools collection-link ## unit tests + deploy/rollback/traffic step per other ansible-core line and Python (hack/test-matrix.txt)
	MAIN_PY=$(VPY) bash hack/test-matrix.sh

build: venv ## build the collection tarball and install it into .build/installed
	rm -f $(ROOT)/.build/manent-kubernetes-*.tar.gz
	$(VENV)/bin/ansible-galaxy collection build --force --output-path $(ROOT)/.build $(ROOT)
	$(VENV)/bin/ansible-galaxy collection install --force -p $(ROOT)/.build/installed $(ROOT)/.build/manent-kubernetes-*.tar.gz

demo: venv tools collection-link ## start the local clusters and deploy the sample application wave by wave
	$(VPY) hack/clusters.py up
	cd $(ROOT) && $(VENV)/bin/ansible-playbook -i .clusters/inventory.yml playbooks/demo.yml

clean: clusters-down prometheus-down ## stop clusters and the Prometheus rig, remove build output
	rm -rf .build

# --- benchmarks (bench/, BENCHMARKS.md; not part of make test) ------------------------------------------
BENCH_VENV ?= $(CACHE)/bench-venv-py$(PYTHON_VERSION)-$(shell sha256sum bench/requirements.txt | cut -c1-12)
BENCH_PY := $(BENCH_VENV)/bin/python
BENCH_ARGS ?=
FLEET_ARGS ?=
.PHONY: bench bench-quick bench-tools bench-fleet

$(BENCH_PY): bench/requirements.txt
	@test -n "$(PYTHON)" || { bash hack/python.sh $(PYTHON_VERSION); exit 1; }
	@test -x $(BENCH_PY) || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_PY) -m pip install -q --disable-pip-version-check -r bench/requirements.txt
	@touch $(BENCH_PY)

bench-tools: tools
	bash hack/build-tools.sh bench

bench: venv bench-tools collection-link $(BENCH_PY) ## manent vs kubectl, Helm 3/4, kubernetes.core at 30/300/3,000 objects -> BENCHMARKS.md, docs/bench.png
	$(BENCH_PY) bench/bench.py run --sizes 30,300,3000 --clusters-python $(VPY) --command-line "make bench$(if $(BENCH_ARGS), BENCH_ARGS='$(BENCH_ARGS)')" $(BENCH_ARGS)

bench-quick: venv bench-tools collection-link $(BENCH_PY) ## the same at 30 and 300 objects only
	$(BENCH_PY) bench/bench.py run --sizes 30,300 --clusters-python $(VPY) --command-line "make bench-quick$(if $(BENCH_ARGS), BENCH_ARGS='$(BENCH_ARGS)')" $(BENCH_ARGS)

# 10, 30 and 100 inventory hosts, each its own cluster behind a loopback proxy of one dedicated API server (started
# here at ports 18400+, proxies at 18500+, stopped at the end) -> the fleet section of BENCHMARKS.md, docs/bench-fleet.png
bench-fleet: venv tools collection-link $(BENCH_PY) ## controller cost per cluster on fleets of 10/30/100 clusters
	$(VPY) hack/clusters.py up --dir $(CACHE)/work/bench-fleet-clusters --base-port 18400 --topology fl-1/fl-1a --controller-qps 200
	$(BENCH_PY) bench/fleet.py run --inventory $(CACHE)/work/bench-fleet-clusters/inventory.yml --keep --args-text "$(FLEET_ARGS)" $(FLEET_ARGS); \
	  rc=$$?; $(VPY) hack/clusters.py down --dir $(CACHE)/work/bench-fleet-clusters; exit $$rc

# --- soak (issue 14: randomized faults on dedicated clusters; not part of make test) ----------------------
SOAK_ROUNDS ?= 25
SOAK_SEED ?=
.PHONY: soak
soak: venv tools collection-link ## randomized fault rounds on dedicated clusters (SOAK_ROUNDS=25, SOAK_SEED= to replay)
	MANENT_SOAK_ROUNDS=$(SOAK_ROUNDS) MANENT_SOAK_SEED=$(SOAK_SEED) $(VPY) -m pytest tests/integration/test_faults.py \
		-q -p no:cacheprovider -k soak
