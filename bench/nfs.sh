#!/usr/bin/env bash
# Side-by-side NFS bench: storbench's user-space NFSv3 client (the `nfs` engine) against
# libnfs's tools (Debian libnfs-utils: nfs-cat, nfs-cp) on the same nfs-ganesha, in one run,
# interleaved run by run, printing medians and ratios. The "client" rows compare the
# client library's NFSv4.1 session against its NFSv3 transport (crates/nfs/examples/nfsperf,
# no engine or runner), sequential 1 MiB and random 4 KiB QD32 reads of the same file. The
# "v4" rows run the `nfs` engine over NFSv4.1 (version=4.1) and over v3 back to back in each
# round (1 MiB sequential reads, 4 KiB QD32 random reads), against libnfs's nfs-cat with
# version=4 (skipped, with its error, where that tool cannot read the file over v4); their
# ratio to v3 is the median of the rounds' ratios.
#
#   bench/nfs.sh                 # loopback tests, then the 1 Gbit/s namespace tests (root)
#   SLOW=0 bench/nfs.sh          # loopback only
#   LOOP=0 bench/nfs.sh          # the 1 Gbit/s namespace tests only
#   RUNS=5 SIZE_MB=1024 STORBENCH=target/release/storbench bench/nfs.sh
#   NFSPERF=target/release/examples/nfsperf   # the client rows; skipped if it is not built
#                               (cargo build --release -p storbench-nfs --example nfsperf)
#
# Needs: nfs-ganesha, nfs-ganesha-vfs, rpcbind, libnfs-utils, python3, iproute2 (SLOW=1).
# Everything it starts is stopped by PID; the namespace and veth pair it makes are deleted.
# The namespace server is contacted only after `ip route get` shows the route goes over
# our own veth.
set -euo pipefail

STORBENCH=${STORBENCH:-target/release/storbench}
RUNS=${RUNS:-3}
SIZE_MB=${SIZE_MB:-1024}
SLOW=${SLOW:-1}
LOOP=${LOOP:-1}
QD=${QD:-8}
NS=sbnfs
HOST_IF=sbnfs-h
NS_IF=sbnfs-n
HOST_IP=10.211.0.1
NS_IP=10.211.0.2
RATE=${RATE:-1gbit}
# Extra URL options for storbench (e.g. SB_OPTS='&nconnect=2').
SB_OPTS=${SB_OPTS:-}
NFSPERF=${NFSPERF:-target/release/examples/nfsperf}

BENCH=nfs.sh
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

work=$(mktemp -d /tmp/storbench-nfsbench.XXXXXX)
pids=()
made_ns=0

cleanup() {
    set +e
    for ((i=${#pids[@]}-1; i>=0; i--)); do
        kill "${pids[i]}" 2>/dev/null
    done
    for p in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null
    done
    [ "$made_ns" = 1 ] && remove_shaped_ns "$NS" "$HOST_IF"
    rm -rf "$work" /dev/shm/storbench-nfsbench-src.bin /dev/shm/storbench-nfsbench-slow.*
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in ganesha.nfsd rpcbind nfs-cat nfs-cp nfs-ls python3; do
    command -v "$tool" >/dev/null || die "$tool not found (apt-get install nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils python3)"
done
[ -x "$STORBENCH" ] || die "$STORBENCH not found: cargo build --release -p storbench (or set STORBENCH=)"
"$STORBENCH" fio --help >/dev/null 2>&1 || die "$STORBENCH has no working 'fio' subcommand yet"

cpu_ticks() { awk '{print $14+$15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

ganesha_conf() { # dir bind_addr nfs_port mount_port
    mkdir -p "$1/export" "$1/recovery"
    cat > "$1/ganesha.conf" <<CONF
NFS_CORE_PARAM { Protocols = 3, 4; NFS_Port = $3; MNT_Port = $4; Bind_addr = $2; Enable_NLM = false; Enable_RQUOTA = false; Enable_UDP = false; Mount_Path_Pseudo = true; }
NFSV4 { Graceless = true; RecoveryRoot = $1/recovery; }
EXPORT { Export_Id = 1; Path = $1/export; Pseudo = /export; Access_Type = RW; Squash = No_Root_Squash; Protocols = 3, 4; Transports = TCP; SecType = sys; FSAL { Name = VFS; } }
CONF
}

wait_mount() { # url
    for _ in $(seq 150); do
        nfs-ls "$1" >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    die "ganesha did not serve $1 within 30 s"
}

# ---------- loopback server ----------
if ! (exec 3<>/dev/tcp/127.0.0.1/111) 2>/dev/null; then
    rpcbind -f & pids+=($!)
    for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/111) 2>/dev/null && break; sleep 0.1; done
fi
LO=$work/lo
NFSP=$(free_port); MNTP=$(free_port)
ganesha_conf "$LO" 127.0.0.1 "$NFSP" "$MNTP"
ganesha.nfsd -F -f "$LO/ganesha.conf" -L "$LO/ganesha.log" -p "$LO/ganesha.pid" </dev/null >/dev/null 2>&1 & pids+=($!)
GPID=$!
LIBNFS_Q="version=3&nfsport=$NFSP&mountport=$MNTP"
SB_Q="port=$NFSP&mountport=$MNTP$SB_OPTS"
wait_mount "nfs://127.0.0.1/export?$LIBNFS_Q"

log "preparing a ${SIZE_MB} MiB random source file"
head -c $((SIZE_MB << 20)) /dev/urandom > /dev/shm/storbench-nfsbench-src.bin
cp /dev/shm/storbench-nfsbench-src.bin "$LO/export/big.bin"
sync

# Raw results (one line per run) are kept after the script ends.
RESULTS=$(mktemp /tmp/storbench-nfsbench-results.XXXXXX)
log "raw results: $RESULTS"
LOAD_BEFORE=$(load)
CONDITIONS="$(nproc) CPUs, kernel $(uname -r), $(ganesha.nfsd -v 2>&1 | grep -o 'Release = V[0-9.]*' | head -1 | sed 's/Release = //;s/^/ganesha /'), $("$STORBENCH" --version 2>/dev/null | head -1)"
# record TEST TOOL MB/s CLIENT_CPU% SERVER_CPU% IOPS
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$RESULTS"; }

# Runs "$@" and prints: wall seconds, client CPU seconds, server CPU seconds.
measure() { measure_with cpu_ticks "$@"; }

seq_tests() { # label server_ip server_pid export_dir libnfs_query storbench_query
    local label=$1 ip=$2 spid=$3 exp=$4 lq=$5 sq=$6
    local mb=$SIZE_MB bytes=$((SIZE_MB << 20))
    for run in $(seq "$RUNS"); do
        read -r wall cpu scpu < <(measure "$spid" bash -c "nfs-cat 'nfs://$ip/export/big.bin?$lq' > /dev/null")
        record "$label read 1M" libnfs-nfs-cat "$(mb_per_s "$bytes" "$wall")" "$(cpu_pct "$cpu" "$wall")" "$(cpu_pct "$scpu" "$wall")" -
        for qd in 1 "$QD"; do
            read -r wall cpu scpu < <(measure "$spid" "$STORBENCH" --no-save fio --name=r --ioengine=nfs \
                "--filename=nfs://$ip/export/big.bin?$sq" --rw=read --bs=1M --size=${mb}M --iodepth=$qd --output-format=json)
            record "$label read 1M" "storbench-qd$qd" "$(sb_json 'd["bw_bytes"]/1e6')" "$(cpu_pct "$cpu" "$wall")" "$(cpu_pct "$scpu" "$wall")" -
        done
        rm -f "$exp"/w.*
        read -r wall cpu scpu < <(measure "$spid" nfs-cp /dev/shm/storbench-nfsbench-src.bin "nfs://$ip/export/w.libnfs.$run?$lq")
        record "$label write 1M" libnfs-nfs-cp "$(mb_per_s "$bytes" "$wall")" "$(cpu_pct "$cpu" "$wall")" "$(cpu_pct "$scpu" "$wall")" -
        cmp -s /dev/shm/storbench-nfsbench-src.bin "$exp/w.libnfs.$run" || die "nfs-cp copy differs"
        for qd in 1 "$QD"; do
            read -r wall cpu scpu < <(measure "$spid" "$STORBENCH" --no-save fio --name=w --ioengine=nfs \
                "--filename=nfs://$ip/export/w.sb.$run.$qd?$sq" --rw=write --bs=1M --size=${mb}M --iodepth=$qd --end_fsync=1 --output-format=json)
            record "$label write 1M" "storbench-qd$qd" "$(sb_json 'd["bw_bytes"]/1e6')" "$(cpu_pct "$cpu" "$wall")" "$(cpu_pct "$scpu" "$wall")" -
        done
        rm -f "$exp"/w.*
    done
}

rand_tests() { # label ip spid query
    for run in $(seq "$RUNS"); do
        read -r wall cpu scpu < <(measure "$3" "$STORBENCH" --no-save fio --name=rr --ioengine=nfs \
            "--filename=nfs://$2/export/big.bin?$4" --rw=randread --bs=4k --size=${SIZE_MB}M --iodepth=32 \
            --runtime=10 --time_based --output-format=json)
        local iops
        iops=$(sb_json 'd["iops"]')
        record "$1 randread 4k qd32" storbench "$(sb_json 'd["bw_bytes"]/1e6')" "$(cpu_pct "$cpu" "$wall")" "$(cpu_pct "$scpu" "$wall")" "$iops"
    done
}

v4_tests() { # label ip spid libnfs_v4_query storbench_v4_query storbench_v3_query
    local label=$1 ip=$2 spid=$3 lq=$4 sq=$5 q3=$6 bytes=$((SIZE_MB << 20)) cat_ok=0
    # One whole read tells whether nfs-cat reaches this server over v4 (a probe cut short
    # by a closed pipe would fail by SIGPIPE under pipefail, whatever the tool can do).
    if nfs-cat "nfs://$ip/export/big.bin?$lq" 2>"$work/cat4.err" >/dev/null; then
        cat_ok=1
    else
        log "nfs-cat does not read over NFSv4 here ($(head -1 "$work/cat4.err")): the v4 rows have no libnfs figure"
    fi
    # Each round reads with v3 and v4.1 back to back, so the ratio compares runs that
    # shared the machine's load.
    for run in $(seq "$RUNS"); do
        if [ "$cat_ok" = 1 ]; then
            read -r wall cpu scpu < <(measure "$spid" bash -c "nfs-cat 'nfs://$ip/export/big.bin?$lq' > /dev/null")
            record "$label v4 read 1M" libnfs-nfs-cat-v4 "$(mb_per_s "$bytes" "$wall")" "$(cpu_pct "$cpu" "$wall")" "$(cpu_pct "$scpu" "$wall")" -
        fi
        local v q
        for v in 3 4.1; do
            q=$sq; [ "$v" = 3 ] && q=$q3
            read -r wall cpu scpu < <(measure "$spid" "$STORBENCH" --no-save fio --name=r --ioengine=nfs \
                "--filename=nfs://$ip/export/big.bin?$q" --rw=read --bs=1M --size=${SIZE_MB}M --iodepth=$QD --output-format=json)
            record "$label v4 read 1M" "storbench-v$v-qd$QD" "$(sb_json 'd["bw_bytes"]/1e6')" "$(cpu_pct "$cpu" "$wall")" "$(cpu_pct "$scpu" "$wall")" -
        done
        for v in 3 4.1; do
            q=$sq; [ "$v" = 3 ] && q=$q3
            read -r wall cpu scpu < <(measure "$spid" "$STORBENCH" --no-save fio --name=rr --ioengine=nfs \
                "--filename=nfs://$ip/export/big.bin?$q" --rw=randread --bs=4k --size=${SIZE_MB}M --iodepth=32 \
                --runtime=10 --time_based --output-format=json)
            record "$label v4 randread 4k qd32" "storbench-v$v" "$(sb_json 'd["bw_bytes"]/1e6')" "$(cpu_pct "$cpu" "$wall")" "$(cpu_pct "$scpu" "$wall")" "$(sb_json 'd["iops"]')"
        done
    done
}

# A figure from nfsperf's last output line: MB/s or IOPS.
perf_field() { sed -n "s|.*: \([0-9.]*\) MB/s, \([0-9]*\) IOPS.*|\\$1|p" "$work/out"; }

client_tests() { # label ip spid v3_query v4_query
    if [ ! -x "$NFSPERF" ]; then
        log "skipping the v3/v4.1 client rows: $NFSPERF not built"
        return
    fi
    local bytes=$((SIZE_MB << 20)) v q
    for run in $(seq "$RUNS"); do
        for v in 3 4.1; do
            q=$4; [ "$v" = 4.1 ] && q=$5
            read -r wall cpu scpu < <(measure "$3" "$NFSPERF" "nfs://$2/export/big.bin?$q" read 1048576 "$QD" "$bytes")
            record "$1 client read 1M" "client-v$v" "$(perf_field 1)" "$(cpu_pct "$cpu" "$wall")" "$(cpu_pct "$scpu" "$wall")" -
            read -r wall cpu scpu < <(measure "$3" "$NFSPERF" "nfs://$2/export/big.bin?$q" randread 4096 32 $((256 << 20)))
            record "$1 client randread 4k" "client-v$v" "$(perf_field 1)" "$(cpu_pct "$cpu" "$wall")" "$(cpu_pct "$scpu" "$wall")" "$(perf_field 2)"
        done
    done
}

if [ "$LOOP" = 1 ]; then
    log "loopback: sequential 1 MiB reads and writes, $RUNS runs"
    seq_tests lo 127.0.0.1 "$GPID" "$LO/export" "$LIBNFS_Q" "$SB_Q"
    log "loopback: 4k random reads at iodepth 32"
    rand_tests lo 127.0.0.1 "$GPID" "$SB_Q"
    log "loopback: the nfs engine over NFSv4.1, $RUNS runs"
    v4_tests lo 127.0.0.1 "$GPID" "version=4&nfsport=$NFSP" "port=$NFSP&version=4.1$SB_OPTS" "$SB_Q"
    log "loopback: the client library over NFSv3 and NFSv4.1"
    client_tests lo 127.0.0.1 "$GPID" "$SB_Q" "port=$NFSP&version=4.1$SB_OPTS"
fi

# ---------- 1 Gbit/s link: server in a namespace behind a shaped veth pair ----------
if [ "$SLOW" = 1 ]; then
    make_shaped_ns "$NS" "$HOST_IF" "$NS_IF" "$HOST_IP" "$NS_IP" "$RATE"
    # The link test measures the link: its export lives in tmpfs, so the server's disk
    # (and the COMMIT at the end of the write test) does not cap it.
    SL=$(mktemp -d /dev/shm/storbench-nfsbench-slow.XXXXXX)
    ganesha_conf "$SL" "$NS_IP" 2049 20048
    cp /dev/shm/storbench-nfsbench-src.bin "$SL/export/big.bin"
    # ganesha registers with rpcbind through /run/rpcbind.sock: give the namespace its own.
    ip netns exec "$NS" unshare -m sh -c "mount -t tmpfs tmpfs /run && mkdir -p /run/rpcbind && \
        (rpcbind -f &) && sleep 0.5 && exec ganesha.nfsd -F -f '$SL/ganesha.conf' -L '$SL/ganesha.log' -p '$SL/ganesha.pid'" \
        </dev/null >/dev/null 2>&1 & pids+=($!)
    wait_mount "nfs://$NS_IP/export?version=3&nfsport=2049&mountport=20048"
    SPID=$(pgrep -f "$SL/ganesha.conf" | head -1)
    log "1 Gbit/s ($RATE tbf, veth): sequential 1 MiB reads and writes, $RUNS runs"
    seq_tests 1gbit "$NS_IP" "$SPID" "$SL/export" "version=3&nfsport=2049&mountport=20048" "port=2049&mountport=20048$SB_OPTS"
    log "1 Gbit/s: the nfs engine over NFSv4.1, $RUNS runs"
    v4_tests 1gbit "$NS_IP" "$SPID" "version=4&nfsport=2049" "port=2049&version=4.1$SB_OPTS" "port=2049&mountport=20048$SB_OPTS"
fi

# ---------- summary ----------
print_conditions "$CONDITIONS" "$LOAD_BEFORE"
python3 - "$RESULTS" "$RATE" <<'PY'
import sys, statistics, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
by = collections.OrderedDict()
for test, tool, mbs, ccpu, scpu, iops in rows:
    by.setdefault(test, collections.OrderedDict()).setdefault(tool, []).append((float(mbs), float(ccpu), float(scpu), iops))
# Payload a shaped link carries: tbf charges 1514 B per 1448 B of TCP payload.
link = 125.0 * 1448 / 1514 if sys.argv[2] == "1gbit" else None
print(f"{'test':<24} {'tool':<18} {'MB/s median [min..max]':<28} {'client CPU':>10} {'server CPU':>10} {'IOPS':>9}  ratio")
for test, tools in by.items():
    base = None
    for tool, vals in tools.items():
        mb = [v[0] for v in vals]
        med = statistics.median(mb)
        ratio = ""
        if " v4 " in test:
            # The v4.1 rows against the v3 rows of the same rounds (median of the rounds'
            # ratios), and against libnfs's v4 median where nfs-cat read over v4.
            if tool.startswith("storbench-v4"):
                v3 = next((v for t, v in tools.items() if t.startswith("storbench-v3")), None)
                if v3:
                    ratio = f"{statistics.median(a[0] / b[0] for a, b in zip(vals, v3)):.2f}x v3 (same rounds)"
                cat = tools.get("libnfs-nfs-cat-v4")
                if cat:
                    ratio += f"  {med / statistics.median(c[0] for c in cat):.2f}x libnfs v4"
        else:
            if tool.startswith("libnfs") or tool == "client-v3" or (tool == "storbench" and "randread" in test):
                base, base_name = med, "libnfs" if tool.startswith("libnfs") else "v3"
            if base and not tool.startswith("libnfs") and tool not in ("client-v3", "storbench"):
                ratio = f"{med / base:.2f}x {base_name}"
        if link and test.startswith("1gbit"):
            ratio += f"  {100 * med / link:.1f}% of link payload ({link:.1f} MB/s)"
        iops = vals[0][3]
        iops = f"{statistics.median(float(v[3]) for v in vals):.0f}" if iops != "-" else "-"
        print(f"{test:<24} {tool:<18} {med:8.1f} [{min(mb):.1f}..{max(mb):.1f}]{'':<6} "
              f"{statistics.median(v[1] for v in vals):9.0f}% {statistics.median(v[2] for v in vals):9.0f}% {iops:>9}  {ratio}")
PY
