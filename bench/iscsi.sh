#!/usr/bin/env bash
# Side-by-side bench: storbench's libiscsi engine and libiscsi's own iscsi-perf on the same
# tgtd LUN, in one run, with ratios.
#
#   1. 4k random read, queue depth 32, RAM-backed LUN (/dev/shm) over loopback:
#      IOPS and client CPU per IO for both (goal: storbench >= 1.0x IOPS at <= CPU/IO).
#   2. 1 MiB sequential read and write, queue depth 8, over loopback: MB/s.
#   3. The same over an emulated 1 Gbit/s link: tgtd in a network namespace behind a veth
#      pair shaped with tbf on both ends (goal: >= 95 % of the 119.5 MB/s payload rate).
#      Needs root; skipped otherwise. The address is used only after `ip route get` shows it
#      goes over our own veth.
#
# Usage: bench/iscsi.sh            (STORBENCH=path/to/storbench RUNTIME=seconds to override)
# Needs: tgt (tgtd, tgtadm), libiscsi-bin (iscsi-perf), python3, /usr/bin/time, iproute2.
# Everything it starts is stopped by PID, and everything it creates is removed, on exit.

set -euo pipefail

STORBENCH=${STORBENCH:-target/release/storbench}
RUNTIME=${RUNTIME:-10}
LUN_MB=${LUN_MB:-256}
IQN=iqn.2026-11.lab.storbench:bench
# 1 Gbit/s as tbf charges it (1514 B per 1448 B of TCP payload).
LINK_PAYLOAD_MBS=119.5

for tool in tgtd tgtadm iscsi-perf python3 /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "bench/iscsi.sh: $tool is missing" >&2; exit 2; }
done
[ -x "$STORBENCH" ] || { echo "bench/iscsi.sh: build first: cargo build --release -p storbench" >&2; exit 2; }

WORK=$(mktemp -d /dev/shm/storbench-iscsi-bench.XXXXXX)
declare -A TGTD_PID=()   # control number -> PID
NS=""
HOST_IF=""

cleanup() {
    for ctl in "${!TGTD_PID[@]}"; do
        tgtadm -C "$ctl" --lld iscsi --mode target --op delete --force --tid 1 >/dev/null 2>&1 || true
        tgtadm -C "$ctl" --mode system --op delete >/dev/null 2>&1 || true
        for _ in $(seq 50); do kill -0 "${TGTD_PID[$ctl]}" 2>/dev/null || break; sleep 0.1; done
        kill -9 "${TGTD_PID[$ctl]}" 2>/dev/null || true
    done
    [ -n "$NS" ] && ip netns del "$NS" 2>/dev/null || true
    [ -n "$HOST_IF" ] && ip link del "$HOST_IF" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_tgtd ADDR PORT CONTROL BACKING [NETNS]
start_tgtd() {
    local addr=$1 port=$2 ctl=$3 backing=$4 ns=${5:-}
    if [ -n "$ns" ]; then
        ip netns exec "$ns" tgtd -f -C "$ctl" --iscsi "portal=$addr:$port" >"$WORK/tgtd-$ctl.log" 2>&1 &
    else
        tgtd -f -C "$ctl" --iscsi "portal=$addr:$port" >"$WORK/tgtd-$ctl.log" 2>&1 &
    fi
    TGTD_PID[$ctl]=$!
    for _ in $(seq 100); do
        tgtadm -C "$ctl" --mode system --op show >/dev/null 2>&1 && break
        sleep 0.1
    done
    tgtadm -C "$ctl" --lld iscsi --mode target --op new --tid 1 --targetname "$IQN"
    tgtadm -C "$ctl" --lld iscsi --mode logicalunit --op new --tid 1 --lun 1 \
        --backing-store "$backing" --bstype rdwr
    tgtadm -C "$ctl" --lld iscsi --mode target --op bind --tid 1 --initiator-address ALL
}

# timed OUTFILE CMD...: runs CMD, stdout to OUTFILE, CPU seconds (user+sys) to OUTFILE.cpu
timed() {
    local out=$1; shift
    /usr/bin/time -f '%U %S' -o "$out.time" "$@" >"$out" 2>"$out.err" || {
        echo "bench/iscsi.sh: failed: $*" >&2; cat "$out.err" >&2; exit 1; }
    awk '{ print $1 + $2 }' "$out.time" >"$out.cpu"
}

# storbench_run NAME URL RW BS DEPTH -> prints "iops mbs cpu_us_per_io"
storbench_run() {
    local name=$1 url=$2 rw=$3 bs=$4 depth=$5 out="$WORK/$1"
    timed "$out" "$STORBENCH" --no-save fio --name="$name" --ioengine=libiscsi --filename="$url" \
        --rw="$rw" --bs="$bs" --iodepth="$depth" --runtime="$RUNTIME" --time_based \
        --allow-destructive --output-format=json
    python3 - "$out" "$(cat "$out.cpu")" <<'EOF'
import json, sys
job = json.load(open(sys.argv[1]))["jobs"][0]
d = job["read"] if job["read"]["io_bytes"] else job["write"]
ios = d["total_ios"] or 1
print(f'{d["iops"]:.0f} {d["bw_bytes"] / 1e6:.1f} {float(sys.argv[2]) / ios * 1e6:.2f}')
EOF
}

# perf_run NAME URL BLOCKS512 DEPTH [-r] -> prints "iops mbs cpu_us_per_io"
perf_run() {
    local name=$1 url=$2 blocks=$3 depth=$4 random=${5:-} out="$WORK/$1"
    # shellcheck disable=SC2086
    timed "$out" iscsi-perf -t "$RUNTIME" -m "$depth" -b "$blocks" $random "$url"
    python3 - "$out" "$(cat "$out.cpu")" "$blocks" "$RUNTIME" <<'EOF'
import re, sys
text = open(sys.argv[1], errors="replace").read().replace("\r", "\n")
iops = [int(m) for m in re.findall(r"iops average (\d+)", text)]
iops = iops[-1] if iops else 0
ios = max(iops * int(sys.argv[4]), 1)
print(f"{iops} {iops * int(sys.argv[3]) * 512 / 1e6:.1f} {float(sys.argv[2]) / ios * 1e6:.2f}")
EOF
}

ratio() { python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); print(f'{a/b:.2f}x' if b else 'n/a')" "$1" "$2"; }

echo "storbench iSCSI bench: $RUNTIME s per test, $LUN_MB MiB RAM-backed LUN, $(nproc) CPUs"
BACKING="$WORK/lun.img"
dd if=/dev/urandom of="$BACKING" bs=1M count="$LUN_MB" status=none
PORT=$(free_port)
CTL=$((2000 + $$ % 20000))
start_tgtd 127.0.0.1 "$PORT" "$CTL" "$BACKING"
URL="iscsi://127.0.0.1:$PORT/$IQN/1"

echo
echo "== 4k random read, QD32, loopback =="
read -r s_iops _ s_cpu < <(storbench_run rr4k "$URL" randread 4k 32)
read -r p_iops _ p_cpu < <(perf_run perf-rr4k "$URL" 8 32 -r)
printf '  %-10s %10s IOPS  %8s us CPU/IO\n' storbench "$s_iops" "$s_cpu" iscsi-perf "$p_iops" "$p_cpu"
echo "  ratio: IOPS $(ratio "$s_iops" "$p_iops"), CPU per IO $(ratio "$s_cpu" "$p_cpu") (iscsi-perf's random LBAs are 512-byte aligned)"

echo
echo "== 1 MiB sequential, QD8, loopback =="
read -r _ s_read _ < <(storbench_run sr1m "$URL" read 1m 8)
read -r _ s_write _ < <(storbench_run sw1m "$URL" write 1m 8)
read -r _ p_read _ < <(perf_run perf-sr1m "$URL" 2048 8)
printf '  read:  storbench %8s MB/s   iscsi-perf %8s MB/s   ratio %s\n' "$s_read" "$p_read" "$(ratio "$s_read" "$p_read")"
printf '  write: storbench %8s MB/s   (iscsi-perf cannot write)\n' "$s_write"

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
    echo
    echo "== 1 Gbit/s link: skipped (needs root, ip and tc) =="
    exit 0
fi

echo
echo "== 1 MiB sequential, QD8, over a 1 Gbit/s veth (tbf both ends) =="
id=$(( $$ % 10000 ))
NS="sbbench$id"; HOST_IF="sbbh$id"; NS_IF="sbbn$id"
block=$(( (id % 16384) * 4 ))
HOST_ADDR=$(python3 -c "import ipaddress,sys; print(ipaddress.ip_address('10.252.0.0') + $block + 1)")
NS_ADDR=$(python3 -c "import ipaddress,sys; print(ipaddress.ip_address('10.252.0.0') + $block + 2)")
ip netns add "$NS"
ip link add "$HOST_IF" type veth peer name "$NS_IF"
ip link set "$NS_IF" netns "$NS"
ip addr add "$HOST_ADDR/30" dev "$HOST_IF"
ip link set "$HOST_IF" up
ip netns exec "$NS" ip addr add "$NS_ADDR/30" dev "$NS_IF"
ip netns exec "$NS" ip link set "$NS_IF" up
ip netns exec "$NS" ip link set lo up
if ! ip route get "$NS_ADDR" | grep -q "dev $HOST_IF "; then
    echo "bench/iscsi.sh: $NS_ADDR is not routed over $HOST_IF; refusing to send anything" >&2
    exit 1
fi
tc qdisc add dev "$HOST_IF" root handle 1: tbf rate 1gbit burst 128kb latency 10ms
ip netns exec "$NS" tc qdisc add dev "$NS_IF" root handle 1: tbf rate 1gbit burst 128kb latency 10ms
CTL2=$((CTL + 1))
start_tgtd "$NS_ADDR" 3260 "$CTL2" "$BACKING" "$NS"
URL2="iscsi://$NS_ADDR:3260/$IQN/1"
read -r _ s_read _ < <(storbench_run nr1m "$URL2" read 1m 8)
read -r _ s_write _ < <(storbench_run nw1m "$URL2" write 1m 8)
read -r _ p_read _ < <(perf_run perf-nr1m "$URL2" 2048 8)
pct() { python3 -c "import sys; print(f'{float(sys.argv[1]) / $LINK_PAYLOAD_MBS * 100:.1f} %')" "$1"; }
printf '  read:  storbench %8s MB/s (%s of link)   iscsi-perf %8s MB/s (%s)\n' \
    "$s_read" "$(pct "$s_read")" "$p_read" "$(pct "$p_read")"
printf '  write: storbench %8s MB/s (%s of link)\n' "$s_write" "$(pct "$s_write")"
