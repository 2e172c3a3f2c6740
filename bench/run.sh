#!/usr/bin/env bash
# `make bench` (see BENCHMARKS.md): everything measured in one run.
#
# 1. criterion benches of the handlers' CPU work without I/O (`cargo bench -p bench --benches`);
#    BENCH_CRITERION=0 skips them.
# 2. the release binaries (`cargo build --release`: LTO, slow the first time);
# 3. the release zips for arm64 (`cargo lambda build --release --arm64 --output-format zip`,
#    cargo-lambda and zig from the venv); if arm64 cannot be built, why, and x86_64 instead;
# 4. the driver (crates/bench): one moto server, the receiver (with its consumer, fed by the
#    driver playing the SQS event source mapping) and the Powertools peer
#    (bench/powertools_handler.py) under the same workload, init durations, zip sizes; the
#    tables are printed and written to target/bench/report.md.
# Arguments go to the driver (e.g. --deliveries 4000 --events 2000 --concurrency 16).
# CARGO_TARGET_DIR, where set, is where the binaries, the zips and the report are (else target/).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
target="${CARGO_TARGET_DIR:-target}"
out="$target/bench"
mkdir -p "$out"

if [ "${BENCH_CRITERION:-1}" != 0 ]; then
  echo "bench: criterion (cargo bench -p bench --benches)" >&2
  cargo bench -p bench --benches 2>&1 | tee "$out/criterion.txt"
fi

echo "bench: release binaries" >&2
cargo build --release -p receiver -p consumer

zip_dir="$target/lambda-arm64"
note="arm64, cargo lambda build --release --arm64 --output-format zip"
if ! rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu; then
  rustup target add aarch64-unknown-linux-gnu >"$out/zip-build.log" 2>&1 || true
fi
echo "bench: release zips (arm64)" >&2
if ! cargo lambda build --release --arm64 --output-format zip -p receiver -p consumer \
    --lambda-dir "$zip_dir" >"$out/zip-build.log" 2>&1; then
  why=$(grep -iE "error|not installed|failed" "$out/zip-build.log" | head -3 | tr '\n' ' ' | tr '|' '/')
  echo "bench: the arm64 build failed: $why; measuring x86_64 instead" >&2
  zip_dir="$target/lambda-x86_64"
  note="x86_64, because the arm64 build failed: ${why:-see $out/zip-build.log}"
  cargo lambda build --release --x86-64 --output-format zip -p receiver -p consumer \
    --lambda-dir "$zip_dir" >>"$out/zip-build.log" 2>&1
fi

echo "bench: the comparison" >&2
cargo run -q -p bench -- \
  --receiver "$target/release/receiver" --consumer "$target/release/consumer" \
  --zip "receiver=$zip_dir/receiver/bootstrap.zip" --zip "consumer=$zip_dir/consumer/bootstrap.zip" \
  --zip-note "$note" --out "$out/report.md" "$@"
