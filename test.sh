#!/usr/bin/env bash
# Runs storbench's whole test suite on a fresh Debian machine: installs the system packages
# the tests need (the real peers: fio, bonnie++, tgtd, nfs-ganesha, rpcbind, Samba, libiscsi and
# libnfs tools, Chromium for the report test), then runs every test with cargo-nextest.
# The tests start and stop their own servers (on private ports) by PID. Then every cargo-fuzz
# target is fuzzed for a short time (FUZZ_SECONDS each, default 10; docs/fuzzing.md).
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(fio bonnie++ tgt libiscsi-bin nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils nbdkit samba smbclient
          iproute2 e2fsprogs xfsprogs btrfs-progs util-linux python3-six python3-venv chromium
          groff-base tmux zsh fish openmpi-bin libopenmpi-dev libclang-dev clang snmpd strace python3-pandas
          slurmd slurmctld slurm-client munge)

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "test.sh: installing ${missing[*]}" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# fio-plot from PyPI (bench-fio, fio-plot) for the drop-in fio test (crates/cli/tests/
# fio_dropin.rs), in a venv next to the test binaries, where that test looks for it.
fio_plot_venv="${CARGO_TARGET_DIR:-target}/fio-plot-venv"
if [ ! -x "$fio_plot_venv/bin/bench-fio" ]; then
    python3 -m venv "$fio_plot_venv"
    "$fio_plot_venv/bin/pip" install -q fio-plot
fi

if ! command -v cargo-nextest >/dev/null 2>&1; then
    cargo install --locked cargo-nextest
fi
# Declared dependencies no crate uses (it reads the sources, so it needs no network).
if ! command -v cargo-machete >/dev/null 2>&1; then
    cargo install --locked cargo-machete
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
    cargo install --locked cargo-fuzz
fi

# Each step's time goes to stderr, so a slow run shows where its time went.
step() {
    local name=$1 start=$SECONDS
    shift
    "$@"
    echo "test.sh: $name took $((SECONDS - start)) s" >&2
}

step machete cargo machete
step fmt cargo fmt --all -- --check
# Multi-host runs are the cli's `mpi` feature (docs/multihost.md): the workspace is linted,
# built and tested once, with it. A build without it (the self-contained binary below) is
# what the tests of a refused launcher start run (static_binary.rs).
FEATURES=(--features storbench/mpi)
step clippy cargo clippy --workspace --all-targets "${FEATURES[@]}" --locked -- -D warnings
# The self-contained binary, built once here (unoptimised: packaging/static.sh): the
# install tests (static_binary.rs) call the same script and find it up to date.
export STORBENCH_STATIC_PROFILE=static-test
step static-binary packaging/static.sh >/dev/null
export STORBENCH_REQUIRE_BROWSER=1
step tests cargo nextest run --workspace "${FEATURES[@]}" --locked --no-fail-fast "$@"
FUZZ_SECONDS=${FUZZ_SECONDS:-10} step fuzz fuzz/run.sh
