//! docs/fio-compat.md, generated from the option table so the page cannot drift from the
//! code (a test compares the checked-in file with this text).

mod examples;

use std::fmt::Write;

use crate::catalogue::ENGINES;
use crate::flags::GLOBAL_FLAGS;
use crate::options::{self, Category, Kind, OptDef};

/// How storbench reads fio input differently from fio 3.33, and why.
const DIFFERENCES: &[&str] = &[
    "Values fio silently misreads are refused with a message saying what fio would have done: fractional sizes and times (`1.5k` is 1 byte to fio, `runtime=1.5` is 1 s), unknown unit suffixes (`4q` is 4 bytes to fio, `10sec` is 10 µs), negative numbers, spaces inside a number.",
    "`bs=4k-8k` (fio: reads 4k, writes 8k) is refused with a pointer to `bsrange`; per-direction values are written `bs=4k,8k`.",
    "Parenthesised arithmetic `(…)` works everywhere a number is expected (Debian's fio 3.33 is built without it). Unit suffixes inside follow the same kb_base rules as outside; in time expressions a unit anywhere makes unit-less numbers microseconds, and with no unit at all the result is in the option's own unit (seconds for `runtime`), as fio computes it. storbench keeps microsecond precision where fio truncates to whole seconds.",
    "`$ncpus`, `$mb_memory` and `$pagesize` also work on the command line (fio 3.33 expands them in job files only). As in fio, a value with one of them and `+ - * /` is computed in whole numbers without units (`size=$mb_memory*2` is bytes, not megabytes).",
    "Command-line options before the first `--name` apply to every job file given; fio 3.33 applies them to the first job file only. storbench prints a warning when this matters.",
    "A boolean option written alone on a job-file line (`direct`) means `=1`; fio refuses it.",
    "Engine options (`hipri`, `nfs_url`, …) may come before `--ioengine` on the command line; they are checked against the job's final engine.",
    "Option names must be written in full; fio's command line also accepts unambiguous prefixes.",
    "`bssplit` weights adding up to more than 100, `percentile_list` values of 0 or more than 20 values, and `nrfiles=0` are refused (fio accepts or half-accepts them).",
    "In `filename` and `directory`, a `:` inside a URL (a port, an IQN) does not split the list; only a `:` followed by another `scheme://` does. `\\:` is a literal colon, as in fio.",
    "fio's warnings are kept as warnings (for example `time_based` without `runtime` runs until `size` is done); `--warnings-fatal` makes them errors. storbench adds one: an `iodepth` above 1 with a synchronous engine, where it has no effect.",
    "As in fio, a job file line is cut at its first `;` or `#`, every section whose name starts with `global` is a global section, `kb_base` is applied first within a section, and job-file `include` paths are tried as written, then next to the including file.",
    "Job files and included files must be regular files of at most 1 MiB (standard input, `-`, too is read up to 1 MiB): fio reads `/dev/zero` or `include /dev/zero` until memory runs out.",
    "A symbolic link at a file name storbench makes in `directory=` (`jobname.N.M`, when no `filename=` is given) is refused, naming it, and those names are opened with `O_NOFOLLOW`; fio follows the link and lays out, writes and (with `unlink`) removes whatever it points to. Name a file through a link with `filename=`.",
    "Before laying out files in a local directory, storbench checks that they fit in the file system's free space (on tmpfs, also in available memory), counting what existing files already hold, and refuses the job if not; fio writes until ENOSPC. A file whose lay-out fails half-way is removed even without `unlink`.",
    "Per-IO logs (`log_avg_msec=0`) and the histogram log are written while the jobs run, by one writer thread per group of jobs started together; fio keeps every sample in memory until the job ends. The IO thread only copies each IO into a buffer allocated before the start (a 48-byte record; 4 buffers of 2048 records per job clone, plus 4 histogram snapshots of 15 KiB: about 500 KiB a clone, counted in the memory check below), so memory stays bounded however long a job runs. If the writer falls behind, the IO thread waits for a free buffer, and a wait of 1 ms or more is reported as a warning with its length. The report's `bw` statistics stay per `bwavgtime` window (fio's count one sample per IO when the bandwidth log is per IO).",
    "Jobs of the `cpuio` and `exec` engines have no file, as in fio, whatever `filename`, `size` or `rw` say, and each of their IOs is a read of 0 bytes. Their start lines (`name (noop): ioengine=cpuio, cpuload=50, cpucycle=50000`, exec's `program=` and `Saving output of` lines) are printed with the normal output only, so a JSON document on stdout stays parseable (fio prints them before it). An exec job without `runtime` ends when its program does (fio signals it at once and never ends); at the job's end the program gets SIGTERM and `grace_time` to exit, the job waiting only as long as it takes (fio sleeps the whole grace time), and what is left of its process group then gets SIGKILL and is reaped (fio leaves the program's own children and a zombie). A program that exits early, or must be killed, is noted with its status in the report.",
    "A run whose IO buffers (`numjobs` x `iodepth` x the largest `bs`, one buffer for synchronous engines) and per-clone statistics (about 448 KiB each) exceed the available memory (MemAvailable, or the room under the cgroup's memory limit if smaller) is refused before anything is laid out; fio allocates until the OOM killer acts. A worker thread that cannot be started ends the run with an error.",
];

/// The whole page.
pub fn fio_compat_markdown() -> String {
    let mut out = String::new();
    out.push_str(
        "# fio compatibility\n\n\
         <!-- Generated from crates/job/src/options/ and crates/job/src/catalogue.rs by `UPDATE_DOCS=1 cargo test -p storbench-job --test docs`; do not edit. -->\n\n\
         `storbench fio` reads fio 3.33 command lines and job files. Precedence is fio's: a job \
         section's own options, then the `[global]` sections above it, then the command-line \
         options before the first `--name`, then fio's defaults. Several job files are separate \
         reporting groups with a stonewall between them. Every option below means what it \
         means in fio's HOWTO; notes say where storbench differs. Any other fio option is \
         refused with an error naming it, never ignored.\n\n\
         Units follow fio: under the default `kb_base=1024`, `4k` = `4kb` = `4ki` = 4096 bytes \
         but `4KiB` = 4000; under `kb_base=1000`, `4k` = 4000 and `4KiB` = 4096. Times are \
         seconds unless suffixed with `us`, `ms`, `s`, `m`, `h` or `d`.\n\n\
         Run through a link named `fio` (the Debian package installs \
         `/usr/lib/storbench/bin/fio`), storbench is `storbench fio`, for tools that run fio \
         themselves: `fio --version` prints `fio-3.33 (storbench VERSION)`, and the outputs \
         name their program so (JSON `fio version`, the terse line's second field), so callers \
         that check for `fio-3` accept it while the results say which program ran.\n\n",
    );
    options_section(&mut out);
    engines_section(&mut out);
    flags_section(&mut out);
    out.push_str("## Where storbench reads input differently from fio 3.33\n\n");
    for d in DIFFERENCES {
        let _ = writeln!(out, "- {d}");
    }
    out.push('\n');
    unsupported_section(&mut out);
    examples::section(&mut out);
    out
}

fn options_section(out: &mut String) {
    out.push_str("## Supported options\n\n");
    for cat in Category::ALL {
        let _ = writeln!(out, "### {}\n", cat.title());
        out.push_str("| option | type | default | what it does | notes |\n|---|---|---|---|---|\n");
        for o in options::all().filter(|o| o.category == cat) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                name_cell(o),
                cell(o.kind.describe()),
                if o.default.is_empty() {
                    "—".to_string()
                } else {
                    format!("`{}`", o.default)
                },
                cell(o.help),
                cell(&notes(o)),
            );
        }
        out.push('\n');
    }
}

fn name_cell(o: &OptDef) -> String {
    let mut s = format!("`{}`", o.name);
    for a in o.aliases {
        let _ = write!(s, " (`{a}`)");
    }
    s
}

fn notes(o: &OptDef) -> String {
    let mut parts = Vec::new();
    if !o.engines().is_empty() {
        parts.push(format!("Engines: {}.", o.engines().join(", ")));
    }
    if let Kind::Choice(values) = o.kind {
        let v: Vec<String> = values.iter().map(|(v, _)| format!("`{v}`")).collect();
        parts.push(format!("Values: {}.", v.join(", ")));
    }
    if !o.note.is_empty() {
        parts.push(o.note.to_string());
    }
    parts.join(" ")
}

/// Escapes what would break a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn engines_section(out: &mut String) {
    out.push_str("## Engines\n\n| ioengine | what it does | queue depth |\n|---|---|---|\n");
    for e in ENGINES {
        let mut name = format!("`{}`", e.name);
        for a in e.aliases {
            let _ = write!(name, " (`{a}`)");
        }
        let depth = if e.synchronous {
            "no (synchronous)"
        } else {
            "yes"
        };
        let _ = writeln!(out, "| {name} | {} | {depth} |", cell(e.about));
    }
    out.push_str(NETWORK_ENGINES);
    out.push_str(NET_ENGINE);
}

/// How the net engines meet a fio peer.
const NET_ENGINE: &str = "### `net` and `netsplice`: a stream to or from a fio peer

fio's network engine, the same on the wire, so either end may be fio 3.33 or storbench:
a TCP `listen`er waits for one connection on `port` (on every address) and a sender
connects to `hostname:port`; with `protocol=udp` or `unix` the reader (`rw=read`) waits
for the writer. A UDP writer starts with fio's open message and stamps fio's sequence
trailer into the last 24 bytes of each datagram (`bs` of 24 or more, no `verify`), from
which the reader counts datagrams lost (`drop_ios`, `dropped=` in the normal output);
every end sends fio's close message when it closes, and a reader that receives it, or
the end of the stream, ends its job as if its `size` were reached. `pingpong` answers
each IO with the same payload in the other direction; `nodelay`, `window_size`, `mss`,
`interface` and `ttl` set the socket options fio sets. `net` reports in bits as fio does
(unless `unit_base=8`); `netsplice` is the same code, reporting in bytes.

Where storbench differs: each read fills its whole block (fio counts a block a short read
left unfinished as an IO of its own, `short=`, and leaves its bytes out of `io=`); a
sender whose peer closed or reset the connection ends its job there (fio 3.33 dies of
SIGPIPE); a Unix reader replaces only an old socket at its path and removes its socket
when it ends (fio unlinks whatever the path names); `numjobs` above 1 is refused (fio
gives each clone the next port: give each stream a job section with its own port); the
sender's payload is zeros, not fio's random buffers. fio 3.33's own Unix-socket writer
ends with error 106 (EISCONN: it sends its close message with an address on a connected
socket), so its reader, fio or storbench, sees only the end of the stream.

";

/// What the options about durability mean where there is no kernel page cache in between.
const NETWORK_ENGINES: &str = "
### `sync`, `direct` and `fsync` on the network engines

storbench's NFS and iSCSI clients keep no cache, so every read and write reaches the server
whatever `direct` says; `direct=1` is accepted and changes nothing.

- **nfs**: writes are `UNSTABLE`; `fsync`/`fdatasync` points (`fsync=N`, `end_fsync=1`,
  `fsync_on_close=1`) and the end of the job send `COMMIT`. With `sync=1` every WRITE is
  `FILE_SYNC` and no COMMIT is needed. Details, and how writes survive a server restart:
  [nfs.md](nfs.md).
- **libiscsi**: `sync=1` sets FUA on every WRITE(16); `fsync`/`fdatasync` send
  SYNCHRONIZE CACHE(16); trims are UNMAP (thin-provisioned LUNs only). Details:
  [iscsi.md](iscsi.md).

";

fn flags_section(out: &mut String) {
    out.push_str("## Global flags\n\n| flag | supported | what it does |\n|---|---|---|\n");
    for f in GLOBAL_FLAGS {
        let _ = writeln!(
            out,
            "| `--{}` | {} | {} |",
            f.name,
            if f.supported { "yes" } else { "no" },
            cell(f.help)
        );
    }
    out.push_str("\n`--minimal` is `--output-format=terse`; `--terse-version` accepts 3 only.\n\n");
}

/// Values and combinations of supported options that storbench refuses, with the reason
/// (fio 3.33 runs them, or misreads them).
const REFUSED_COMBINATIONS: &[&str] = &[
    "`verify_backlog` or `trim_backlog` in a random write job without fio's random map (`norandommap`, a non-uniform `random_distribution`, `random_generator=lfsr`): fio then takes the backlog in offset order and drops blocks written again, which storbench's write log (kept in write order) does not reproduce yet.",
    "Verify of a write job with `time_based`, `loops` above 1 or `io_size` above `size` without `verify_backlog`: fio verifies after every pass over the file; storbench verifies once, after the writes.",
    "`experimental_verify` with `rw=trimwrite` or `randtrimwrite`: fio 3.33 replays each trim as a check for zeros after the block's write, so its verify fails on the first block.",
    "`trim_percentage` with `trim_backlog` in a job whose `rw` does not trim: fio 3.33 aborts on it.",
    "`openfiles` below `nrfiles` with `verify_backlog`: fio opens the file of each block it checks past `openfiles` while the writes go on, which storbench does not reproduce.",
    "`fill_device` without `size=` in a mixed job (`rw=rw`, `randrw`): fio 3.33 fills the file, then reads past its end (rw ends with EIO, randrw does no IO).",
    "`verify_state_load` with a read job: give the write job with `verify_only`, as the state file belongs to it.",
    "`io_size` as a percentage, `sync=dsync` (O_DSYNC), `file_service_type` of `zipf`, `pareto`, `normal` or `gauss` and a `:N` switch count other than 1, `random_distribution`'s `:center` parameter, `buffer_pattern` read from a file: not implemented.",
    "`log_compression` other than 0, `log_store_compressed=1`, `log_unix_epoch=1`, and `log_max_value=1` with `write_lat_log`: storbench writes plain-text logs timed from the job's start, and its latency logs hold means.",
    "`cpuload` of 0 or above 100 and `cpuchunks=0` (fio takes 0 as an error, above 100 as 100, and spins without pause at 0), a cpuio job without `cpuload` and an exec job without `program` (fio fails them when they start): refused before the run. An exec `program` that cannot be found or run is one line before any job starts (fio's forked job runs on as a copy of fio).",
];

fn unsupported_section(out: &mut String) {
    out.push_str(
        "## fio options storbench does not support\n\n\
         These fio 3.33 option names (and aliases, options of fio engines storbench does \
         not have, and options of fio's tiobench and act profiles) are refused with `fio option 'NAME' is not supported by storbench`, grouped by why:\n\n",
    );
    grouped(out, options::UNSUPPORTED.groups());
    out.push_str(
        "\n## Values and combinations storbench refuses\n\n\
         Options storbench supports, refused with a one-line error in these cases:\n\n",
    );
    for c in REFUSED_COMBINATIONS {
        out.push_str(&format!("- {c}\n"));
    }
    out.push_str(
        "\n## fio engines storbench does not have\n\n\
         Refused with `fio's NAME engine is not supported by storbench`, grouped by why; \
         external engines (`external:…`) too, as storbench loads no plugins:\n\n",
    );
    grouped(out, options::UNSUPPORTED_ENGINES.groups());
}

/// One line per group: its names, then its reason.
fn grouped(out: &mut String, groups: &[(&str, &[&str])]) {
    for (why, names) in groups {
        out.push_str(&format!("- {}: {why}\n", backticked(names)));
    }
}

fn backticked(names: &[&str]) -> String {
    let mut sorted = names.to_vec();
    sorted.sort_unstable();
    sorted
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
