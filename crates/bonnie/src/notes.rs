//! The notes every bonnie result carries: where storbench deliberately differs from
//! bonnie++ 2.00a, and what makes the figures less trustworthy. Reporters print them above
//! the table, so a reader never mistakes an improved run for a like-for-like one.

use storbench_model::result::Note;

use crate::config::{Config, Host, info, warning};
use crate::flags::Flags;

pub fn for_config(cfg: &Config, f: &Flags, host: &Host) -> Vec<Note> {
    let mut notes = Vec::new();
    // The small files of `-n N:max` get the same data as the block writes.
    if cfg.io_tests() || cfg.max_size > 0 {
        notes.push(buffers(cfg));
    }
    if cfg.direct {
        notes.push(info(
            "bonnie.direct",
            "-D: O_DIRECT for block write, rewrite, block read and seeks (bonnie++ 2.00a used it \
             only while creating the file); the per-char and file tests stay buffered, as \
             1-byte and odd-sized IO cannot bypass the cache"
                .into(),
        ));
    }
    if cfg.fsync_each {
        notes.push(info(
            "bonnie.fsync-each",
            "-b: fsync after every block write, rewrite, seek update, per-char chunk and created \
             file, and a directory fsync after each create and delete (bonnie++ 2.00a synced \
             only in the seek and file tests)"
                .into(),
        ));
    }
    notes.extend(cache_warning(cfg, host));
    notes.extend(network_per_char(cfg, f));
    if f.user.is_some() || f.group.is_some() {
        notes.push(info(
            "bonnie.user",
            "-u/-g accepted for compatibility; storbench runs as the user that started it".into(),
        ));
    }
    if cfg.concurrency > 1 {
        notes.push(info(
            "bonnie.concurrency",
            format!(
                "-c {0}: {0} copies ran each test at the same time, each on its own file and \
                 directory; rates are totals over all copies (bonnie++ 2.00a only recorded -c)",
                cfg.concurrency
            ),
        ));
    }
    notes
}

fn buffers(cfg: &Config) -> Note {
    if cfg.compressible {
        warning(
            "bonnie.compressible",
            "--compressible: block writes and file data use bonnie++'s near-zero buffers; \
             compressing or deduplicating file systems (ZFS, btrfs) shrink them, inflating \
             Block, Rewrite and the creates of files with data"
                .into(),
        )
    } else {
        info(
            "bonnie.incompressible",
            "block writes and file data are incompressible, unique per chunk and per file \
             (bonnie++ writes near-zero buffers that ZFS and btrfs compress away); \
             --compressible restores bonnie++'s"
                .into(),
        )
    }
}

fn cache_warning(cfg: &Config, host: &Host) -> Option<Note> {
    let total = cfg.file_mib * u64::from(cfg.concurrency);
    if !cfg.io_tests() {
        return None;
    }
    if cfg.target.is_network() {
        return Some(info(
            "limit.server-cache",
            format!(
                "over {} storbench keeps no client cache; the server's page cache can still \
                 serve reads of a file smaller than twice the server's RAM",
                protocol(cfg)
            ),
        ));
    }
    if host.ram_mib == 0 || total >= host.ram_mib * 2 {
        return None;
    }
    Some(warning(
        "warn.small-file",
        format!(
            "the test file ({total} MiB) is smaller than twice this machine's RAM ({} MiB): \
             rewrite, reads and seeks can be served from the page cache",
            host.ram_mib
        ),
    ))
}

fn network_per_char(cfg: &Config, f: &Flags) -> Option<Note> {
    if !cfg.target.is_network() || !cfg.io_tests() {
        return None;
    }
    let proto = protocol(cfg);
    // The code stays `bonnie.nfs-per-char` for every protocol: stored results and scripts
    // look it up by that name.
    Some(match (&f.char_io, cfg.char_io_mib) {
        (None, _) => info(
            "bonnie.nfs-per-char",
            format!(
                "per-char tests skipped over {proto}: without a client cache each byte would be \
                 one request and measure only round trips; -f <MiB> runs them anyway"
            ),
        ),
        (_, 0) => return None,
        (_, mib) => warning(
            "bonnie.nfs-per-char",
            format!(
                "-f {mib}: per-char tests over {proto} send one request per byte; they measure \
                 round-trip latency, not what bonnie++ on a kernel mount measures"
            ),
        ),
    })
}

/// The network target's protocol, as the catalogue names it.
fn protocol(cfg: &Config) -> String {
    cfg.target
        .protocol_name()
        .unwrap_or_else(|| "the network".into())
}
