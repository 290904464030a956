#!/usr/bin/env bash
# Coverage-guided fuzzing of every cargo-fuzz target for a bounded time, on a stable
# toolchain (RUSTC_BOOTSTRAP=1 lets stable take the -Z flags cargo-fuzz passes).
#
#   fuzz/run.sh [CRATE:TARGET ...]      default: every target below
#
# Environment:
#   FUZZ_SECONDS     seconds per target (default 20; docs/fuzzing.md for long runs)
#   FUZZ_SANITIZER   address (default) or none
#   FUZZ_TARGET_DIR  cargo target dir for the instrumented builds (default
#                    $CARGO_TARGET_DIR/fuzz or target/fuzz): they share nothing with
#                    normal builds, so they are kept apart
#
# Inputs that reach new coverage are merged into crates/CRATE/fuzz/corpus/TARGET (libFuzzer's
# -merge=1 keeps only those that add coverage; the seeds stay as they are). An input that
# crashes, hangs (more than 10 s) or runs out of memory is copied to
# crates/CRATE/fuzz/regressions/TARGET, which the crate's tests/fuzz_corpus.rs replays in the
# normal suite, and the script exits 1 after fuzzing the remaining targets.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL=(job:job_file job:fio_args nfs:replies nfs:url iscsi:decoders iscsi:url smb:replies smb:url store:import)
seconds=${FUZZ_SECONDS:-20}
sanitizer=${FUZZ_SANITIZER:-address}
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-${CARGO_TARGET_DIR:-$PWD/target}/fuzz}
export RUSTC_BOOTSTRAP=1

if ! command -v cargo-fuzz >/dev/null 2>&1; then
    cargo install --locked cargo-fuzz
fi

targets=("$@")
((${#targets[@]})) || targets=("${ALL[@]}")

built=" "
failed=()
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

for item in "${targets[@]}"; do
    crate=${item%%:*}
    target=${item#*:}
    dir=crates/$crate/fuzz
    fuzz=(cargo fuzz run --sanitizer="$sanitizer" "$target")
    if [[ $built != *" $crate "* ]]; then
        start=$SECONDS
        (cd "$dir" && cargo fuzz build --sanitizer="$sanitizer")
        echo "fuzz: built $dir in $((SECONDS - start)) s" >&2
        built+="$crate "
    fi
    new=$scratch/$target
    rm -rf "$new" "$dir/artifacts/$target"
    mkdir -p "$new" "$dir/corpus/$target"
    echo "fuzz: $crate:$target for $seconds s" >&2
    # New inputs go to the first directory, the scratch one; the kept corpus is read.
    if ! (cd "$dir" && "${fuzz[@]}" "$new" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -print_final_stats=1); then
        mkdir -p "$dir/regressions/$target"
        cp "$dir/artifacts/$target"/* "$dir/regressions/$target/" 2>/dev/null || true
        echo "fuzz: $crate:$target FAILED; input kept in $dir/regressions/$target" >&2
        failed+=("$item")
    fi
    if [ -n "$(ls -A "$new")" ]; then
        (cd "$dir" && "${fuzz[@]}" "corpus/$target" "$new" -- -merge=1 -timeout=10) \
            >"$scratch/merge.log" 2>&1 || tail -5 "$scratch/merge.log" >&2
    fi
    echo "fuzz: $crate:$target corpus now $(ls "$dir/corpus/$target" | wc -l) inputs" >&2
done

if ((${#failed[@]})); then
    echo "fuzz: crashes in ${failed[*]}" >&2
    exit 1
fi
