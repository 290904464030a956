# Shared by the side-by-side protocol benches (bench/nfs.sh, bench/smb.sh): logging, time
# and CPU accounting of one measured command, rates and shares as printed numbers,
# storbench's JSON figures, the conditions line, and the shaped namespace link.
#
# Sourced, not run. The caller sets BENCH (its name, for messages) and `work` (a scratch
# directory it removes), and defines the CPU sampler it hands to `measure_with`.

log() { printf '%s\n' "$*" >&2; }
die() { log "$BENCH: $*"; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
hz=$(getconf CLK_TCK)
load() { cut -d' ' -f1-3 /proc/loadavg; }

# Arithmetic the shell cannot do: `calc EXPR` prints EXPR evaluated by python3.
calc() { python3 -c "print($1)"; }
# MB/s of BYTES moved in WALL seconds.
mb_per_s() { calc "$1/$2/1e6"; }
# CPU seconds over WALL seconds as a percentage of one CPU.
cpu_pct() { calc "100*$1/$2"; }

# Runs CMD...; prints wall seconds, the command's CPU seconds (user+system, time(1)) and
# the server's CPU seconds over it (SAMPLER ARG prints the server's clock ticks).
measure_with() { # sampler sampler_arg cmd...
    local sampler=$1 arg=$2; shift 2
    local s0 t0 t1 s1 cpu
    s0=$("$sampler" "$arg"); t0=$(now)
    /usr/bin/time -o "$work/time" -f '%U %S' "$@" > "$work/out" 2>"$work/err" || {
        cat "$work/err" "$work/out" >&2; die "failed: $*"; }
    cpu=$(tail -1 "$work/time")
    t1=$(now); s1=$("$sampler" "$arg")
    python3 -c "u,s=map(float,'$cpu'.split()); print($t1-$t0, u+s, ($s1-$s0)/$hz)"
}

# A figure of the first job in storbench's fio JSON output ($work/out): EXPR over d (the
# job's read part, or its write part when it read nothing) and job.
sb_json() { # expr
    python3 - "$work/out" "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
job = j["jobs"][0]
d = job["read"] if job["read"]["io_bytes"] else job["write"]
print(eval(sys.argv[2], {}, {"d": d, "job": job}))
PY
}

# The namespace NS behind a veth pair (HOST_IF here, NS_IF there), both ends shaped to RATE
# by tbf; refuses to go on unless the route to NS_IP leaves over HOST_IF. Sets made_ns=1
# as soon as the namespace exists, so the caller's cleanup removes it.
make_shaped_ns() { # ns host_if ns_if host_ip ns_ip rate
    local ns=$1 hif=$2 nif=$3 hip=$4 nip=$5 rate=$6
    [ "$(id -u)" = 0 ] || die "the shaped-link part needs root (SLOW=0 skips it)"
    ip netns list | grep -qw "$ns" && die "netns $ns already exists; not touching it"
    ip netns add "$ns"; made_ns=1
    ip link add "$hif" type veth peer name "$nif" netns "$ns"
    ip addr add "$hip/30" dev "$hif"; ip link set "$hif" up
    ip -n "$ns" addr add "$nip/30" dev "$nif"; ip -n "$ns" link set "$nif" up; ip -n "$ns" link set lo up
    tc qdisc add dev "$hif" root tbf rate "$rate" burst 128kb latency 10ms
    ip netns exec "$ns" tc qdisc add dev "$nif" root tbf rate "$rate" burst 128kb latency 10ms
    ip route get "$nip" | grep -q "dev $hif" || die "$nip is not routed over $hif; refusing to send anything"
}

# The processes left in namespace NS are stopped (TERM, then KILL), then the veth pair and
# the namespace are deleted.
remove_shaped_ns() { # ns host_if
    ip netns pids "$1" 2>/dev/null | xargs -r kill 2>/dev/null
    sleep 0.5
    ip netns pids "$1" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip link del "$2" 2>/dev/null
    ip netns del "$1" 2>/dev/null
}

# The summary's conditions line: figures from a busy machine say little.
print_conditions() { # what_ran load_before
    printf 'conditions: %s; load average %s at the start, %s at the end\n' "$1" "$2" "$(load)"
}
