#!/usr/bin/env bash
# Builds the self-contained x86_64 Linux binary: glibc linked statically (crt-static on the
# gnu target), SQLite bundled, host names resolved by storbench itself (crates/resolve), so
# it needs no shared library, no NSS module and no /etc/nsswitch.conf at run time.
#
# --target is given explicitly so RUSTFLAGS reach only the binary, not build scripts and
# proc macros (which cannot be static). Prints the binary's path on stdout.
# TARGET=aarch64-unknown-linux-gnu builds for 64-bit ARM (README: Supported systems).
# Usage: [TARGET=triple] packaging/static.sh [extra cargo build args]
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${TARGET:-x86_64-unknown-linux-gnu}
export RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static"
cargo build --release --locked --target "$TARGET" -p storbench "$@" >&2
dir="${CARGO_TARGET_DIR:-target}/$TARGET/release"
bin="$(cd "$dir" && pwd)/storbench"
# Refuse a binary that would still load something at run time.
if readelf -l "$bin" | grep -q INTERP; then
    echo "static.sh: $bin asks for a dynamic loader" >&2
    exit 1
fi
echo "$bin"
