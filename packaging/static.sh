#!/usr/bin/env bash
# Builds the self-contained x86_64 Linux binary: glibc linked statically (crt-static on the
# gnu target), SQLite bundled, host names resolved by storbench itself (crates/resolve), so
# it needs no shared library, no NSS module and no /etc/nsswitch.conf at run time.
#
# --target is given explicitly so RUSTFLAGS reach only the binary, not build scripts and
# proc macros (which cannot be static). Prints the binary's path on stdout.
# TARGET=aarch64-unknown-linux-gnu builds for 64-bit ARM (README: Supported systems).
# STORBENCH_STATIC_PROFILE=static-test builds the same binary without optimisation (Cargo.toml): test.sh uses
# it, because the tests check that the binary is self-contained and works, not its speed,
# and an optimised build of every dependency for a second target costs many minutes.
# Usage: [TARGET=triple] [STORBENCH_STATIC_PROFILE=release|static-test] packaging/static.sh [extra cargo args]
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${TARGET:-x86_64-unknown-linux-gnu}
export RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static"
PROFILE=${STORBENCH_STATIC_PROFILE:-release}
cargo build --profile "$PROFILE" --locked --target "$TARGET" -p storbench "$@" >&2
dir="${CARGO_TARGET_DIR:-target}/$TARGET/$PROFILE"
bin="$(cd "$dir" && pwd)/storbench"
# Refuse a binary that would still load something at run time.
if readelf -l "$bin" | grep -q INTERP; then
    echo "static.sh: $bin asks for a dynamic loader" >&2
    exit 1
fi
echo "$bin"
