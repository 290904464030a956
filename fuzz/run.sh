#!/usr/bin/env bash
# Coverage-guided fuzzing of every cargo-fuzz target for a bounded time, on a stable
# toolchain (RUSTC_BOOTSTRAP=1 lets stable take the -Z flags cargo-fuzz passes).
#
#   fuzz/run.sh [CRATE:TARGET ...]      default: every target in fuzz/Cargo.toml
#
# Environment:
#   FUZZ_SECONDS     seconds per target (default 20; docs/fuzzing.md for long runs)
#   FUZZ_SANITIZER   address (default) or none
#   FUZZ_JOBS        targets fuzzed side by side (default: the CPU count)
#   FUZZ_TARGET_DIR  cargo target dir for the instrumented build (default
#                    $CARGO_TARGET_DIR/fuzz or target/fuzz): it shares nothing with
#                    normal builds, so it is kept apart
#
# All targets are one package (fuzz/Cargo.toml, bin CRATE_TARGET), built once; each target's
# file, corpus and regressions stay with its crate in crates/CRATE/fuzz/. Inputs that reach
# new coverage are merged into crates/CRATE/fuzz/corpus/TARGET (libFuzzer's -merge=1 keeps
# only those that add coverage; the seeds stay as they are). An input that crashes, hangs
# (more than 10 s) or runs out of memory is copied to crates/CRATE/fuzz/regressions/TARGET,
# which the crate's tests/fuzz_corpus.rs replays in the normal suite, and the script exits 1
# after fuzzing the remaining targets.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# Every target listed in fuzz/Cargo.toml, as CRATE:TARGET.
listed() {
    sed -n 's|.*name = "\([a-z0-9]*\)_\([a-z0-9_]*\)", path = "\.\./crates/\1/fuzz/fuzz_targets/\2\.rs".*|\1:\2|p' \
        fuzz/Cargo.toml
}
mapfile -t ALL < <(listed)
# A target file written but not listed would silently never be fuzzed.
for file in crates/*/fuzz/fuzz_targets/*.rs; do
    [ -e "$file" ] || continue
    crate=${file#crates/}
    crate=${crate%%/*}
    target=$(basename "$file" .rs)
    if [[ " ${ALL[*]} " != *" $crate:$target "* ]]; then
        echo "fuzz: $file is not in fuzz/Cargo.toml; add to its bin list:" >&2
        echo "    { name = \"${crate}_$target\", path = \"../$file\", test = false, doc = false, bench = false }," >&2
        exit 2
    fi
done

seconds=${FUZZ_SECONDS:-20}
sanitizer=${FUZZ_SANITIZER:-address}
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-${CARGO_TARGET_DIR:-$PWD/target}/fuzz}
export RUSTC_BOOTSTRAP=1

if ! command -v cargo-fuzz >/dev/null 2>&1; then
    cargo install --locked cargo-fuzz
fi

targets=("$@")
((${#targets[@]})) || targets=("${ALL[@]}")
for item in "${targets[@]}"; do
    if [[ " ${ALL[*]} " != *" $item "* ]]; then
        echo "fuzz: no target $item; the targets: ${ALL[*]}" >&2
        exit 2
    fi
done

start=$SECONDS
cargo fuzz build --sanitizer="$sanitizer"
echo "fuzz: built ${#ALL[@]} targets in $((SECONDS - start)) s" >&2

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Fuzzes one target; a crash marks it in $scratch/failed.
fuzz_one() {
    local item=$1 crate target bin dir new
    crate=${item%%:*}
    target=${item#*:}
    bin=${crate}_$target
    dir=$root/crates/$crate/fuzz
    local fuzz=(cargo fuzz run --sanitizer="$sanitizer" "$bin")
    new=$scratch/$bin
    rm -rf "$new" "fuzz/artifacts/$bin"
    mkdir -p "$new" "$dir/corpus/$target"
    echo "fuzz: $crate:$target for $seconds s" >&2
    # New inputs go to the first directory, the scratch one; the kept corpus is read.
    if ! "${fuzz[@]}" "$new" "$dir/corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -print_final_stats=1 >"$scratch/$bin.log" 2>&1; then
        tail -30 "$scratch/$bin.log" >&2
        mkdir -p "$dir/regressions/$target"
        cp "fuzz/artifacts/$bin"/* "$dir/regressions/$target/" 2>/dev/null || true
        echo "fuzz: $crate:$target FAILED; input kept in $dir/regressions/$target" >&2
        echo "$item" >>"$scratch/failed"
    fi
    if [ -n "$(ls -A "$new")" ]; then
        "${fuzz[@]}" "$dir/corpus/$target" "$new" -- -merge=1 -timeout=10 \
            >"$scratch/$bin.merge.log" 2>&1 || tail -5 "$scratch/$bin.merge.log" >&2
    fi
    echo "fuzz: $crate:$target corpus now $(ls "$dir/corpus/$target" | wc -l) inputs" >&2
}

# One lane per CPU (FUZZ_JOBS, default the CPU count): each libFuzzer process uses one CPU,
# so the targets take their time side by side instead of one after another.
lanes=${FUZZ_JOBS:-$(nproc)}
for ((lane = 0; lane < lanes; lane++)); do
    (
        for ((i = lane; i < ${#targets[@]}; i += lanes)); do
            fuzz_one "${targets[$i]}"
        done
    ) &
done
wait
failed=()
[ -f "$scratch/failed" ] && mapfile -t failed <"$scratch/failed"

if ((${#failed[@]})); then
    echo "fuzz: crashes in ${failed[*]}" >&2
    exit 1
fi
