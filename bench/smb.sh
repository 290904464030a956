#!/usr/bin/env bash
# Side-by-side SMB bench: storbench's user-space SMB2/3 client (the `smb` engine) against
# Samba's own `smbclient` (get/put) on the same smbd, in one run, interleaved run by run,
# printing medians, client CPU per byte and per IO, and ratios.
#
#   bench/smb.sh                 # loopback tests, then the 1 Gbit/s namespace tests (root)
#   SLOW=0 bench/smb.sh          # loopback only
#   LOOP=0 bench/smb.sh          # the 1 Gbit/s namespace tests only
#   RUNS=5 SIZE_MB=1024 STORBENCH=target/release/storbench bench/smb.sh
#
# Needs: samba, smbclient, python3, iproute2 (SLOW=1). smbd runs with a private
# configuration, passdb and state under a temporary directory, in its own process group,
# and is stopped by that group's PID; the namespace and veth pair it makes are deleted.
# The namespace server is contacted only after `ip route get` shows the route goes over our
# own veth. The password is passed through the environment, never on a command line.
set -euo pipefail

STORBENCH=${STORBENCH:-target/release/storbench}
RUNS=${RUNS:-3}
SIZE_MB=${SIZE_MB:-512}
SLOW=${SLOW:-1}
LOOP=${LOOP:-1}
QD=${QD:-8}
NS=sbsmb$$
HOST_IF=sbsmbh$$
NS_IF=sbsmbn$$
HOST_IP=10.212.0.1
NS_IP=10.212.0.2
RATE=${RATE:-1gbit}

BENCH=smb.sh
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

work=$(mktemp -d /tmp/storbench-smbbench.XXXXXX)
src=/dev/shm/storbench-smbbench-src.$$
groups=()
shares=()
made_ns=0

cleanup() {
    set +e
    for g in "${groups[@]}"; do kill -TERM -- "-$g" 2>/dev/null; done
    for g in "${groups[@]}"; do
        for _ in $(seq 50); do kill -0 -- "-$g" 2>/dev/null || break; sleep 0.1; done
        kill -KILL -- "-$g" 2>/dev/null
    done
    [ "$made_ns" = 1 ] && remove_shaped_ns "$NS" "$HOST_IF"
    rm -rf "$work" "$src" "${shares[@]}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in smbd smbpasswd smbclient python3; do
    command -v "$tool" >/dev/null || die "$tool not found (apt-get install samba smbclient python3)"
done
[ -x "$STORBENCH" ] || die "$STORBENCH not found: cargo build --release -p storbench (or set STORBENCH=)"

USER_NAME=$(id -un)
export PASSWD="Sb-bench-$$-$RANDOM"
export STORBENCH_SMB_PASSWORD=$PASSWD

smb_conf() { # dir bind_addr port signing
    mkdir -p "$1"/{share,priv,lock,state,cache,pid,log,ncalrpc}
    cat > "$1/smb.conf" <<CONF
[global]
server role = standalone server
smb ports = $3
interfaces = $2
bind interfaces only = yes
disable netbios = yes
private dir = $1/priv
passdb backend = tdbsam:$1/priv/passdb.tdb
lock directory = $1/lock
state directory = $1/state
cache directory = $1/cache
pid directory = $1/pid
ncalrpc dir = $1/ncalrpc
log file = $1/log/log.%m
log level = 0
load printers = no
printing = bsd
printcap name = /dev/null
disable spoolss = yes
server signing = $4
[share]
path = $1/share
read only = no
valid users = $USER_NAME
CONF
    printf '%s\n%s\n' "$PASSWD" "$PASSWD" | smbpasswd -c "$1/smb.conf" -s -a "$USER_NAME" >/dev/null
}

# Sets G to the new smbd's process group. Not run as $(start_smbd …): a subshell's
# `groups+=` would be lost, and cleanup would leave smbd running.
start_smbd() { # dir [netns]
    if [ -n "${2:-}" ]; then
        setsid ip netns exec "$2" smbd --foreground --no-process-group --configfile="$1/smb.conf" \
            </dev/null >/dev/null 2>&1 &
    else
        setsid smbd --foreground --no-process-group --configfile="$1/smb.conf" </dev/null >/dev/null 2>&1 &
    fi
    G=$!
    groups+=("$G")
}

wait_smb() { # dir ip port
    for _ in $(seq 100); do
        smbclient "//$2/share" -p "$3" -s "$1/smb.conf" -U "$USER_NAME" -c ls >/dev/null 2>&1 && return 0
        sleep 0.2
    done
    die "smbd did not serve //$2/share on port $3 within 20 s"
}

# CPU (user+system, clock ticks) of smbd's whole process group: its per-client children do
# the work, and once they exit and are reaped their time is in smbd's cutime/cstime.
group_cpu() {
    local g=$1 t=0 p
    for p in $(pgrep -g "$g"); do
        t=$((t + $(awk '{print $14+$15+$16+$17}' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
    echo "$t"
}

RESULTS=$(mktemp /tmp/storbench-smbbench-results.XXXXXX)
log "raw results: $RESULTS"
LOAD_BEFORE=$(load)
CONDITIONS="$(nproc) CPUs, kernel $(uname -r), $(smbd --version), $("$STORBENCH" --version 2>/dev/null | head -1)"
# record TEST TOOL MB/s CLIENT_CPU_S SERVER_CPU_S BYTES IOS
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$RESULTS"; }

# Runs "$@"; prints wall seconds, client CPU seconds, server group CPU seconds.
measure() { measure_with group_cpu "$@"; }

seq_tests() { # label dir ip port group url_query smbclient_extra
    local label=$1 dir=$2 ip=$3 port=$4 g=$5 q=$6 extra=$7
    local bytes=$((SIZE_MB << 20))
    local url="smb://$USER_NAME@$ip:$port/share"
    local sc=(smbclient "//$ip/share" -p "$port" -s "$dir/smb.conf" -U "$USER_NAME" $extra)
    for run in $(seq "$RUNS"); do
        read -r wall cpu scpu < <(measure "$g" "${sc[@]}" -c "get big.bin /dev/null")
        record "$label read 1M" smbclient "$(mb_per_s "$bytes" "$wall")" "$cpu" "$scpu" "$bytes" -
        for qd in 1 "$QD"; do
            read -r wall cpu scpu < <(measure "$g" "$STORBENCH" --no-save fio --name=r --ioengine=smb \
                "--filename=$url/big.bin$q" --rw=read --bs=1M --size=${SIZE_MB}M --iodepth=$qd --output-format=json)
            record "$label read 1M" "storbench-qd$qd" "$(sb_json 'd["bw_bytes"]/1e6')" "$cpu" "$scpu" "$bytes" -
        done
        read -r wall cpu scpu < <(measure "$g" "${sc[@]}" -c "put $src w.smbclient.$run")
        record "$label write 1M" smbclient "$(mb_per_s "$bytes" "$wall")" "$cpu" "$scpu" "$bytes" -
        cmp -s "$src" "$dir/share/w.smbclient.$run" || die "smbclient put copy differs"
        rm -f "$dir"/share/w.*
        for qd in 1 "$QD"; do
            read -r wall cpu scpu < <(measure "$g" "$STORBENCH" --no-save fio --name=w --ioengine=smb \
                "--filename=$url/w.sb.$run.$qd$q" --rw=write --bs=1M --size=${SIZE_MB}M --iodepth=$qd \
                --end_fsync=1 --output-format=json)
            record "$label write 1M" "storbench-qd$qd" "$(sb_json 'd["bw_bytes"]/1e6')" "$cpu" "$scpu" "$bytes" -
        done
        rm -f "$dir"/share/w.*
    done
}

rand_tests() { # label ip port group query
    for run in $(seq "$RUNS"); do
        read -r wall cpu scpu < <(measure "$4" "$STORBENCH" --no-save fio --name=rr --ioengine=smb \
            "--filename=smb://$USER_NAME@$2:$3/share/big.bin$5" --rw=randread --bs=4k --size=${SIZE_MB}M \
            --iodepth=32 --runtime=10 --time_based --output-format=json)
        record "$1 randread 4k qd32" storbench "$(sb_json 'd["bw_bytes"]/1e6')" "$cpu" "$scpu" \
            "$(sb_json 'd["io_bytes"]')" "$(sb_json 'd["total_ios"]')"
    done
}

log "preparing a ${SIZE_MB} MiB random source file"
head -c $((SIZE_MB << 20)) /dev/urandom > "$src"

if [ "$LOOP" = 1 ]; then
    # The share lives in tmpfs, as on the link test: a shared VM's disk would decide the
    # write figures (storbench ends its writes with FLUSH, which smbd turns into fsync).
    LO=$(mktemp -d /dev/shm/storbench-smbbench-lo.XXXXXX)
    shares+=("$LO")
    PORT=$(free_port)
    smb_conf "$LO" 127.0.0.1 "$PORT" auto
    cp "$src" "$LO/share/big.bin"
    start_smbd "$LO"
    wait_smb "$LO" 127.0.0.1 "$PORT"
    log "loopback: sequential 1 MiB reads and writes, $RUNS runs"
    seq_tests lo "$LO" 127.0.0.1 "$PORT" "$G" "" ""
    log "loopback: 4k random reads at iodepth 32"
    rand_tests lo 127.0.0.1 "$PORT" "$G" ""
fi

# ---------- 1 Gbit/s link: smbd in a namespace behind a shaped veth pair ----------
if [ "$SLOW" = 1 ]; then
    make_shaped_ns "$NS" "$HOST_IF" "$NS_IF" "$HOST_IP" "$NS_IP" "$RATE"
    # The share lives in tmpfs, so the server's disk does not cap the link test.
    SL=$(mktemp -d /dev/shm/storbench-smbbench-slow.XXXXXX)
    shares+=("$SL")
    smb_conf "$SL" "$NS_IP" 445 auto
    cp "$src" "$SL/share/big.bin"
    start_smbd "$SL" "$NS"
    wait_smb "$SL" "$NS_IP" 445
    log "1 Gbit/s ($RATE tbf, veth): sequential 1 MiB reads and writes, unsigned then signed"
    seq_tests 1gbit "$SL" "$NS_IP" 445 "$G" "" ""
    seq_tests 1gbit-signed "$SL" "$NS_IP" 445 "$G" "?sign=1" "--option=clientsigning=required"
    rm -rf "$SL"
fi

# ---------- summary ----------
print_conditions "$CONDITIONS" "$LOAD_BEFORE"
python3 - "$RESULTS" "$RATE" <<'PY'
import sys, math, statistics, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
by = collections.OrderedDict()
for test, tool, mbs, ccpu, scpu, nbytes, ios in rows:
    by.setdefault(test, collections.OrderedDict()).setdefault(tool, []).append(
        (float(mbs), float(ccpu), float(scpu), float(nbytes), ios))
# Payload a shaped link carries: tbf charges 1514 B per 1448 B of TCP payload.
link = 125.0 * 1448 / 1514 if sys.argv[2] == "1gbit" else None
T95 = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23]

def ratio(a, b):
    """Median of the same-round ratios a[i]/b[i] and the 95 % interval of their geometric
    mean (t interval of the log ratios): rounds were interleaved, so each ratio compares
    the two tools under the same load."""
    r = [x / y for x, y in zip(a, b) if x > 0 and y > 0]
    if not r:
        return "-"
    logs = [math.log(x) for x in r]
    m = statistics.mean(logs)
    half = 0.0
    if len(r) > 1:
        half = T95[min(len(r) - 2, len(T95) - 1)] * statistics.stdev(logs) / math.sqrt(len(r))
    return f"{statistics.median(r):.2f}x [{math.exp(m - half):.2f}..{math.exp(m + half):.2f}]"

print(f"{'test':<24} {'tool':<15} {'MB/s median [min..max]':<24} {'CPU ms/GB':>9} {'IOPS':>7} {'CPU us/IO':>9}  "
      "same-round ratios to smbclient: MB/s, CPU/byte (median [95% CI])")
for test, tools in by.items():
    base = tools.get("smbclient")
    for tool, vals in tools.items():
        mb = [v[0] for v in vals]
        med = statistics.median(mb)
        per_gb = [1e3 * v[1] / (v[3] / 1e9) for v in vals]
        note = ""
        if base and tool != "smbclient":
            note = (f"MB/s {ratio(mb, [v[0] for v in base])}, CPU/byte "
                    f"{ratio(per_gb, [1e3 * v[1] / (v[3] / 1e9) for v in base])}")
        if link and test.startswith("1gbit"):
            note += f"  {100 * med / link:.1f}% of link payload ({link:.1f} MB/s) [{100 * min(mb) / link:.1f}..{100 * max(mb) / link:.1f}]"
        if vals[0][4] != "-":
            iops = statistics.median(float(v[4]) / 10.0 for v in vals)
            cpu_io = statistics.median(1e6 * v[1] / float(v[4]) for v in vals)
            extra = f"{iops:7.0f} {cpu_io:9.1f}"
        else:
            extra = f"{'-':>7} {'-':>9}"
        print(f"{test:<24} {tool:<15} {med:7.1f} [{min(mb):.1f}..{max(mb):.1f}]{'':<3} {statistics.median(per_gb):9.0f} {extra}  {note}")
PY
