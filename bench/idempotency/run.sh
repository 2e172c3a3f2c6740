#!/usr/bin/env bash
# make bench-idempotency (BENCHMARKS.md, "Idempotency library beside Powertools (issue 36)"):
# builds the library's peer (crates/idempotency/examples/bench_peer.rs, release), then runs the
# three peers against one moto server behind the counting proxy (bench/idempotency/run.py).
# Needs .venv (moto), .venv-powertools and node_modules: `make bench-idempotency` installs them.
# Arguments go to run.py (--runs N, --out FILE, --peers python,typescript,rust).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --quiet -p lambda-idempotency --features dynamodb --example bench_peer
target="${CARGO_TARGET_DIR:-target}"
exec .venv/bin/python bench/idempotency/run.py --rust-bin "$target/release/examples/bench_peer" "$@"
