#!/usr/bin/env python3
"""Runs a command and writes "elapsed user sys peak_pss_kib" to OUT.

    bench/peakmem.py OUT CMD [ARGS...]

Memory is the peak, over 100 ms samples, of the summed proportional set size (Pss) of the
command and all its descendants. fio forks one process per job, and /usr/bin/time's
maximum RSS is that of the single largest process, so it would leave out the other jobs;
Pss counts pages shared between processes (libraries, fio's shared memory) once in total.
CPU is the user and system time of the command and every descendant it waited for.
"""

import os
import sys
import time


def children_of():
    """Maps each PID to the PIDs whose parent it is."""
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may hold spaces; the fields after it are positional.
        ppid = int(stat[stat.rfind(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(name))
    return kids


def tree_pss_kib(root):
    kids = children_of()
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(kids.get(pid, []))
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: peakmem.py OUT CMD [ARGS...]")
    out, cmd = sys.argv[1], sys.argv[2:]
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    peak = 0
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        peak = max(peak, tree_pss_kib(pid))
        time.sleep(0.1)
    elapsed = time.monotonic() - start
    with open(out, "w") as f:
        f.write(f"{elapsed:.2f} {usage.ru_utime:.2f} {usage.ru_stime:.2f} {peak}\n")
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
