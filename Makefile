# The project's commands. `make demo` and `make test` are the two a fresh clone needs:
# each installs what it uses (Python tools into .venv from requirements-dev.txt, crates by
# cargo) and starts, then stops, every service it needs.

SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# checkov (make lint) and the SAM CLI (make deploy) pin a boto3 that moto and the bench cannot
# share: each has its own venv, from its own requirements file.
VENV_CHECKOV := .venv-checkov
VENV_SAM := .venv-sam
# The providers' own libraries for tests/providers/sign.py (the presets' signed requests): their
# pydantic and httpx pins must not move moto's in .venv.
VENV_PROVIDERS := .venv-providers
# Powertools for AWS Lambda (Python) for make bench-idempotency: its boto3 pin is not moto's.
VENV_POWERTOOLS := .venv-powertools
# cargo-lambda, zig, cfn-lint and moto come from the venv.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: venv chromium test lint lint-idempotency demo events build deploy destroy bench bench-idempotency simulate audit mutants mutants-idempotency clean

$(VENV)/.installed: requirements-dev.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

$(VENV_CHECKOV)/.installed: requirements-checkov.txt
	python3 -m venv $(VENV_CHECKOV)
	$(VENV_CHECKOV)/bin/pip install --quiet --disable-pip-version-check -r requirements-checkov.txt
	touch $@

$(VENV_SAM)/.installed: requirements-sam.txt
	python3 -m venv $(VENV_SAM)
	$(VENV_SAM)/bin/pip install --quiet --disable-pip-version-check -r requirements-sam.txt
	touch $@

$(VENV_PROVIDERS)/.installed: requirements-providers.txt
	python3 -m venv $(VENV_PROVIDERS)
	$(VENV_PROVIDERS)/bin/pip install --quiet --disable-pip-version-check -r requirements-providers.txt
	touch $@

$(VENV_POWERTOOLS)/.installed: bench/requirements-powertools.txt
	python3 -m venv $(VENV_POWERTOOLS)
	$(VENV_POWERTOOLS)/bin/pip install --quiet --disable-pip-version-check -r bench/requirements-powertools.txt
	touch $@

# checkov offline (--skip-download); a finding is fixed in template.yaml or skipped, with its
# reason, in the resource's Metadata.checkov.skip.
lint: venv $(VENV_CHECKOV)/.installed
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	$(MAKE) --no-print-directory lint-idempotency
	$(VENV)/bin/cfn-lint template.yaml
	$(VENV_CHECKOV)/bin/checkov --quiet --compact --skip-download --framework cloudformation -f template.yaml

# The library as published: its docs without a warning, `cargo package` (which
# builds the packaged crate alone), and a Lambda project outside the workspace
# (examples/outside-workspace/, its own workspace and lockfile) that depends on it by path,
# checked with clippy in this target directory, so it reuses the build of the clippy above.
OUTSIDE := examples/outside-workspace/Cargo.toml
lint-idempotency:
	RUSTDOCFLAGS=-Dwarnings cargo doc -p lambda-idempotency --no-deps --all-features
	cargo package -p lambda-idempotency --allow-dirty
	cargo fmt --manifest-path $(OUTSIDE) -- --check
	CARGO_TARGET_DIR="$${CARGO_TARGET_DIR:-$(CURDIR)/target}" \
		cargo clippy --locked --manifest-path $(OUTSIDE) --all-targets -- -D warnings

# dynalite (a second DynamoDB, for tests/ledger_transitions/) and playwright-core (the
# console's browser test, tests/console.rs), from npm, pinned by
# package-lock.json, into node_modules/.
node_modules/.installed: package.json package-lock.json
	npm ci
	touch $@

# Debian's chromium, for the console's browser test (tests/console.rs drives it headless with
# playwright-core from node_modules); installed once, as root, where it is missing.
chromium:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

# The tests start their own moto server (one per test process, on a free loopback port)
# and it stops with them; the ledger transition tests start a dynalite server the same way.
# .venv-sam: the preflight's tests read samconfig.toml with the SAM CLI's own code.
test: lint node_modules/.installed $(VENV_PROVIDERS)/.installed $(VENV_SAM)/.installed chromium
	cargo test --workspace --all-targets

# The whole inbox on this machine: moto, both functions under `cargo lambda watch`, the sample
# webhooks, a retry storm, late redeliveries, and a result table (README, "Running it locally").
# Fails unless every accepted event had exactly one side effect. ARGS="--events 200 --concurrency 64";
# ARGS=serve: the stack for `cargo lambda invoke`; ARGS=check-events: every events/*.json through it.
#
# Every cargo command started here from the workspace root names a binary, not a package (-p):
# the build then resolves features over the whole workspace, as `cargo test --workspace` and
# `cargo lambda watch` do, and reuses their build (crates/unified-features).
demo: venv
	cargo run --bin demo -- $(ARGS)

# events/: the sample Lambda events, signed now. The Stripe and Standard Webhooks ones carry a
# signed timestamp and are refused 300 s later: run this before invoking those.
events:
	cargo run -q --bin make-events

# Both functions for deployment: release, arm64 (zig cross-compiles; cargo-lambda and zig come
# from the venv), one zip per function at target/lambda/<name>/bootstrap.zip, and their sizes.
# (`sam build` builds the same from template.yaml, BuildMethod rust-cargolambda, where the SAM
# CLI is installed: see the README's "Deploying".)
build: venv
	rustup target add aarch64-unknown-linux-gnu
	cargo lambda build --release --arm64 --output-format zip -p receiver -p consumer
	@for fn in receiver consumer; do \
	  $(PY) -c 'import os, sys; f = "target/lambda/%s/bootstrap.zip" % sys.argv[1]; print("%-9s %6.2f MB  %s" % (sys.argv[1], os.path.getsize(f) / 1e6, f))' $$fn; \
	done

# Deploy to the AWS account of the current credentials (docs/deploying.md): `inbox-ops init`
# writes samconfig.toml first. Installs only what deploying uses (.venv-sam from
# requirements-sam.txt: the SAM CLI, cargo-lambda, zig), and shows each long step's progress:
# the preflight (refuses placeholders, a bad ForwardUrl or WebhookSources, secrets missing,
# invalid or unreadable by the receiver), both functions built as `sam build` builds them
# (cargo lambda, release, arm64: minutes the first time, with cargo's progress; `sam build`
# hides it, then reuses the build), `sam build` and `sam deploy` with samconfig.toml, which shows
# the change set and asks (ARGS=--no-confirm-changeset does not). ARGS go to sam deploy. Not
# part of make test, which rehearses the same path on moto (crates/ops/tests/preflight/rehearsal.rs).
deploy: export PATH := $(CURDIR)/$(VENV_SAM)/bin:$(PATH)
deploy: $(VENV_SAM)/.installed
	rustup target add aarch64-unknown-linux-gnu
	@echo "==> 1/4 inbox-ops preflight (inbox-ops is built first: a minute or two the first time)"
	cargo run --bin inbox-ops -- preflight
	@echo "==> 2/4 the functions: cargo lambda build --release --arm64 (several minutes the first time)"
	cargo lambda build --release --arm64 --bin receiver
	cargo lambda build --release --arm64 --bin consumer
	@echo "==> 3/4 sam build (the same build, reused)"
	$(VENV_SAM)/bin/sam build
	@echo "==> 4/4 sam deploy (the change set, then y to apply it; the stack's events as it goes)"
	$(VENV_SAM)/bin/sam deploy $(ARGS)

# Deletes the stack samconfig.toml names (asks first), then, after you type the stack's name, what
# it retains by design: the ledger table and the payload bucket (`inbox-ops destroy`, the AWS SDK:
# no AWS CLI). ARGS go to it: ARGS="--stack NAME", ARGS="--yes --yes-delete-retained NAME".
destroy:
	cargo run -q --bin inbox-ops -- destroy $(ARGS)

# The three questions for every webhook source, with flags; ARGS="--json", ARGS="--sources FILE".
audit:
	cargo run -q --bin inbox-ops -- audit $(ARGS)

# The deterministic simulation (crates/inbox/tests/simulation/), optimised, over SEEDS seeds;
# SIM_SEED=x replays one seed with its trace.
SEEDS ?= 100000
simulate:
	SIM_SEEDS=$(SEEDS) cargo test -p inbox --test simulation --release -- --nocapture

# Mutation testing (docs/testing.md, "Mutation testing"): cargo-mutants over the ledger's state
# machine, the receiver and the consumer, each mutant against the library's own tests and the
# simulation (no moto; SIM_SEEDS bounds the simulation per mutant). Slow: not in CI's budget.
# MUTANTS_FILES narrows it (e.g. MUTANTS_FILES=crates/inbox/src/ledger/mod.rs); ARGS go to
# cargo mutants (e.g. ARGS=--in-place to reuse target/, ARGS="--shard 1/4").
MUTANTS_VERSION := 27.1.0
MUTANTS_FILES ?= crates/inbox/src/ledger/mod.rs crates/inbox/src/receiver/mod.rs crates/inbox/src/receiver/answer.rs crates/inbox/src/receiver/request.rs crates/inbox/src/receiver/payload.rs crates/inbox/src/consumer/mod.rs crates/inbox/src/consumer/invocation.rs crates/inbox/src/consumer/processor.rs crates/inbox/src/consumer/requeue.rs
MUTANTS_SIM_SEEDS ?= 300
mutants:
	@cargo mutants --version 2>/dev/null | grep -q ' $(MUTANTS_VERSION)$$' \
		|| cargo install --locked cargo-mutants@$(MUTANTS_VERSION)
	SIM_SEEDS=$(MUTANTS_SIM_SEEDS) cargo mutants --package inbox --test-package inbox --test-package devstack \
		$(foreach f,$(MUTANTS_FILES),--file $(f)) $(ARGS) -- --lib --tests

# The same over the lambda-idempotency library (docs/testing.md, "Mutation testing"): every
# file of crates/idempotency/src but dynamodb.rs, each mutant against the crate's own unit and
# integration tests with all its features (the memory store; --cargo-arg, so that the build
# too skips the examples and doctests; no moto). dynamodb.rs is the SDK calls:
# tests/idempotency_library.rs runs the same scenarios on moto and dynalite.
# MUTANTS_IDEMPOTENCY_FILES narrows it; ARGS as above.
MUTANTS_IDEMPOTENCY_FILES ?= $(filter-out %/dynamodb.rs,$(wildcard crates/idempotency/src/*.rs))
mutants-idempotency:
	@cargo mutants --version 2>/dev/null | grep -q ' $(MUTANTS_VERSION)$$' \
		|| cargo install --locked cargo-mutants@$(MUTANTS_VERSION)
	cargo mutants --package lambda-idempotency --test-package lambda-idempotency --all-features \
		--cargo-arg=--lib --cargo-arg=--tests \
		$(foreach f,$(MUTANTS_IDEMPOTENCY_FILES),--file $(f)) $(ARGS)

# Benchmarks (BENCHMARKS.md): criterion benches of the CPU work, then the receiver against a
# Powertools peer on one moto server, init durations and zip sizes (bench/run.sh). Release
# builds with LTO: slow the first time. BENCH_ARGS go to the driver; BENCH_CRITERION=0 skips criterion.
bench: venv
	bash bench/run.sh $(BENCH_ARGS)

# lambda-idempotency beside Powertools' Python and TypeScript idempotency utilities:
# one moto server, a counting proxy, the same handler; DynamoDB calls and round trips per path,
# the bill, init and peak RSS (BENCHMARKS.md). Not part of make test.
bench-idempotency: venv $(VENV_POWERTOOLS)/.installed node_modules/.installed
	bash bench/idempotency/run.sh $(ARGS)

clean:
	cargo clean
	rm -rf $(VENV) .venv-checkov .venv-sam .venv-powertools .local node_modules
