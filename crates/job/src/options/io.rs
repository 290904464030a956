//! Job identity and grouping, IO direction and depth, block sizes.

use super::{Category as C, Kind as K, OptDef, engine, flag, val};
use crate::build::JobBuilder;
use crate::spec::{Rw, RwKind};
use crate::units::{
    parse_bool, parse_percent, parse_size, parse_size_range, parse_u32, split_dirs,
};

pub(super) const JOB: &[OptDef] = &[
    OptDef::new(
        "name",
        K::Str,
        C::Job,
        "",
        "Name of the job; on the command line each --name starts a new job",
        |b, v| {
            b.spec.name = val(v)?.to_string();
            Ok(())
        },
    ),
    OptDef::new(
        "description",
        K::Str,
        C::Job,
        "",
        "Free text describing the job, printed with its results",
        |b, v| {
            b.spec.description = Some(val(v)?.to_string());
            Ok(())
        },
    ),
    OptDef::new(
        "numjobs",
        K::Int,
        C::Job,
        "1",
        "Run this many identical clones of the job",
        |b, v| {
            let n = parse_u32(val(v)?, b.spec.kb_base)?;
            if n == 0 {
                return Err("numjobs must be at least 1".into());
            }
            b.spec.numjobs = n;
            Ok(())
        },
    ),
    OptDef::new(
        "thread",
        K::Flag,
        C::Job,
        "",
        "Run clones as threads instead of processes",
        |b, v| {
            b.spec.thread = flag(v)?;
            Ok(())
        },
    )
    .aliases(&["threads"])
    .note("Without it, a posixaio clone runs in a process of its own, as fio's does: glibc serves POSIX AIO from one pool of helper threads per process, shared by every job in it. Other engines run their clones as threads, which costs them nothing measurable. fio 3.33 also takes `threads=1` (and refuses a value that is not a number), so storbench does."),
    OptDef::new(
        "exitall",
        K::Flag,
        C::Job,
        "",
        "When this job ends, end the jobs running with it",
        |b, v| {
            b.spec.exitall = flag(v)?;
            Ok(())
        },
    )
    .note("The jobs it ends are those exit_what names (by default its reporting group's); they end without an error, as fio's."),
    OptDef::new(
        "exitall_on_error",
        K::Flag,
        C::Job,
        "",
        "When this job fails, end the jobs running with it",
        |b, v| {
            b.spec.exitall_on_error = flag(v)?;
            Ok(())
        },
    ),
    OptDef::new(
        "exit_what",
        K::Choice(EXIT_WHAT_VALUES),
        C::Job,
        "group",
        "Which jobs exitall and exitall_on_error end",
        |b, v| b.spec.errors.parse_exit_what(val(v)?),
    )
    .note("group: the jobs of the same reporting group; stonewall: every job running (the next stonewall batch still runs); all: every job, later batches included, as fio's."),
    OptDef::new(
        "continue_on_error",
        K::Choice(CONTINUE_VALUES),
        C::Job,
        "none",
        "Go past IO or verify errors of these types, counting them",
        |b, v| b.spec.errors.parse_continue(val(v)?),
    )
    .note("As fio: only EIO and EILSEQ (a bad block) are gone past unless ignore_error lists others; an errored IO counts as issued with no bytes and no latency; the job shows `total_err` and `first_error` (JSON) and an `errors` line, its err= is the first error, and the exit status stays 0 when no error stopped a job."),
    OptDef::new(
        "ignore_error",
        K::Str,
        C::Job,
        "",
        "Errors to go past, per type: read,write,verify lists of NAME:NUMBER (EIO:28)",
        |b, v| b.spec.errors.parse_ignore(val(v)?),
    )
    .note("fio's names EPERM to ERANGE, or numbers; a list given makes the job continue past errors of its type, as fio's does."),
    OptDef::new(
        "error_dump",
        K::Bool,
        C::Job,
        "0",
        "Log every IO error, also those gone past",
        |b, v| {
            b.spec.errors.dump = crate::units::parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .note("Each error as fio's line on stderr: `fio: io_u error on file F: TEXT: read offset=N, buflen=N`."),
    OptDef::new(
        "stonewall",
        K::Flag,
        C::Job,
        "",
        "Wait for every earlier job to finish before starting; starts a new reporting group",
        |b, v| {
            b.spec.stonewall = flag(v)?;
            Ok(())
        },
    )
    .aliases(&["wait_for_previous"]),
    OptDef::new(
        "new_group",
        K::Flag,
        C::Job,
        "",
        "Start a new reporting group without waiting for earlier jobs",
        |b, v| {
            b.new_group = flag(v)?;
            Ok(())
        },
    ),
];

const RW_VALUES: &[(&str, &str)] = &[
    ("read", "Sequential reads"),
    ("write", "Sequential writes"),
    ("trim", "Sequential trims (devices and LUNs)"),
    ("randread", "Random reads"),
    ("randwrite", "Random writes"),
    ("randtrim", "Random trims (devices and LUNs)"),
    ("rw", "Sequential mixed reads and writes"),
    ("readwrite", "Same as rw"),
    ("randrw", "Random mixed reads and writes"),
    (
        "trimwrite",
        "Sequential trim, then write of the same blocks",
    ),
    (
        "randtrimwrite",
        "Random trim, then write of the same blocks",
    ),
];

/// fio's `continue_on_error` values.
const CONTINUE_VALUES: &[(&str, &str)] = &[
    ("none", "Exit when an error is encountered"),
    ("read", "Continue on read errors only"),
    ("write", "Continue on write errors only"),
    ("io", "Continue on any IO errors"),
    ("verify", "Continue on verify errors only"),
    ("all", "Continue on all io and verify errors"),
    ("0", "Alias for 'none'"),
    ("1", "Alias for 'all'"),
];

/// fio's `exit_what` values.
const EXIT_WHAT_VALUES: &[(&str, &str)] = &[
    ("group", "The jobs of the same group (exitall's default)"),
    (
        "stonewall",
        "Every job running now; the next stonewall batch still runs",
    ),
    ("all", "Every job"),
];

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "rw",
        K::Choice(RW_VALUES),
        C::Io,
        "read",
        "IO direction; ':N' gets a new random offset every N IOs, or for sequential IO skips N bytes after each IO",
        apply_rw,
    )
    .aliases(&["readwrite"])
    .note("A negative ':N' is fio's backward sequential IO (`rw=read:-8k`): each IO starts that far before the end of the previous one, the first at the region's start, and a step past the start wraps to that far before the region's end, as in fio."),
    OptDef::new(
        "rwmixread",
        K::Percent,
        C::Io,
        "50",
        "Percentage of a mixed workload that is reads",
        |b, v| {
            b.spec.rwmixread = parse_percent(val(v)?)?;
            Ok(())
        },
    )
    .note("As in fio, rwmixread and rwmixwrite each set both: the one given last wins."),
    OptDef::new(
        "rwmixwrite",
        K::Percent,
        C::Io,
        "50",
        "Percentage of a mixed workload that is writes",
        |b, v| {
            b.spec.rwmixread = 100 - parse_percent(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "ioengine",
        K::Engine,
        C::Io,
        crate::catalogue::DEFAULT_ENGINE,
        "How IO is issued",
        |b, v| {
            b.spec.ioengine = engine::parse_engine(val(v)?)?.to_string();
            Ok(())
        },
    )
    .note("Only the engines listed are available; other fio engines are refused with an error."),
    OptDef::new(
        "iodepth",
        K::Int,
        C::Io,
        "1",
        "IOs kept in flight per job clone (no effect on synchronous engines)",
        |b, v| {
            let n = parse_u32(val(v)?, b.spec.kb_base)?;
            if n == 0 {
                return Err("iodepth must be at least 1".into());
            }
            b.spec.iodepth = n;
            Ok(())
        },
    ),
    OptDef::new(
        "iodepth_batch",
        K::Int,
        C::Io,
        "1",
        "IOs to submit at once (0 or more than iodepth means iodepth)",
        |b, v| {
            b.spec.iodepth_batch_submit = parse_u32(val(v)?, b.spec.kb_base)?;
            Ok(())
        },
    )
    .aliases(&["iodepth_batch_submit"]),
    OptDef::new(
        "iodepth_batch_complete_min",
        K::Int,
        C::Io,
        "1",
        "Least number of completions to wait for at once",
        |b, v| {
            b.spec.iodepth_batch_complete_min = parse_u32(val(v)?, b.spec.kb_base)?;
            Ok(())
        },
    )
    .aliases(&["iodepth_batch_complete"]),
    OptDef::new(
        "iodepth_batch_complete_max",
        K::Int,
        C::Io,
        "",
        "Most completions to reap at once (default: iodepth_batch_complete_min)",
        |b, v| {
            b.spec.iodepth_batch_complete_max = parse_u32(val(v)?, b.spec.kb_base)?;
            Ok(())
        },
    ),
    OptDef::new(
        "direct",
        K::Bool,
        C::Io,
        "0",
        "Use O_DIRECT (bypass the page cache)",
        |b, v| {
            b.spec.direct = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "buffered",
        K::Bool,
        C::Io,
        "1",
        "Use buffered IO (the opposite of direct)",
        |b, v| {
            b.spec.direct = !parse_bool(val(v)?)?;
            Ok(())
        },
    ),
];

fn apply_rw(b: &mut JobBuilder, v: Option<&str>) -> Result<(), String> {
    let v = val(v)?;
    let (word, suffix) = match v.split_once(':') {
        Some((w, s)) => (w.trim(), Some(s.trim())),
        None => (v.trim(), None),
    };
    let kind = rw_kind(word).ok_or_else(|| {
        format!("'{word}' is not an IO direction (read, write, randread, randwrite, rw, randrw, trim, randtrim, trimwrite, randtrimwrite)")
    })?;
    let mut rw = Rw {
        kind,
        nr: 1,
        hole: 0,
        back: 0,
    };
    match suffix {
        Some(s) if kind.is_random() => {
            rw.nr = u64::from(parse_u32(s, b.spec.kb_base)?);
            if rw.nr == 0 {
                return Err("the ':N' suffix must be at least 1".into());
            }
        }
        Some(s) if s.starts_with('-') => {
            // fio seeks backwards by that much after each IO; not "a negative number".
            rw.back = parse_size(&s[1..], b.spec.kb_base)?;
            if rw.back == 0 {
                return Err(format!("':{s}': a backward step of 0 bytes"));
            }
        }
        Some(s) => rw.hole = parse_size(s, b.spec.kb_base)?,
        None => {}
    }
    b.spec.rw = rw;
    Ok(())
}

fn rw_kind(word: &str) -> Option<RwKind> {
    Some(match word {
        "read" => RwKind::Read,
        "write" => RwKind::Write,
        "trim" => RwKind::Trim,
        "randread" => RwKind::RandRead,
        "randwrite" => RwKind::RandWrite,
        "randtrim" => RwKind::RandTrim,
        "rw" | "readwrite" => RwKind::ReadWrite,
        "randrw" => RwKind::RandRw,
        "trimwrite" => RwKind::TrimWrite,
        "randtrimwrite" => RwKind::RandTrimWrite,
        _ => return None,
    })
}

pub(super) const BLOCK_SIZES: &[OptDef] = &[
    OptDef::new(
        "bs",
        K::SizeDirs,
        C::BlockSize,
        "4096",
        "Block size, or read,write[,trim] sizes (bs=8k,32k: reads 8k, writes and trims 32k)",
        apply_bs,
    )
    .aliases(&["blocksize"])
    .note("fio also splits a single value at ':' or '-' (bs=4k-8k means reads 4k, writes 8k); storbench refuses that form and points to bsrange."),
    OptDef::new(
        "bsrange",
        K::SizeRangeDirs,
        C::BlockSize,
        "",
        "Block sizes drawn from lo-hi (multiples of lo), per direction read,write,trim",
        |b, v| {
            let kb = b.spec.kb_base;
            for (d, part) in split_dirs(val(v)?)?.into_iter().enumerate() {
                if let Some(p) = part {
                    let (lo, hi) = parse_size_range(p, kb)?;
                    if lo == 0 {
                        return Err("block sizes must be at least 1 byte".into());
                    }
                    b.bsrange[d] = Some((lo, hi));
                }
            }
            Ok(())
        },
    )
    .aliases(&["blocksize_range"]),
    OptDef::new(
        "bssplit",
        K::Split,
        C::BlockSize,
        "",
        "Weighted block sizes, e.g. 4k/60:64k/40; per direction with ','",
        apply_bssplit,
    )
    .note("Weights adding up to more than 100 are refused (fio accepts some such lists); a list adding up to less than 100 gives the rest to its heaviest entry, which is what fio's selection does. On a random job that covers its range once (the random map), fio shortens an IO that would overlap blocks already done, so it issues more, smaller IOs than the weights say; on one file storbench follows fio's map, generators and seeds draw for draw (876 IOs for 4k/50:64k/50 over 16 MiB, 750 for a second job, as fio). Over several files, or without randrepeat, storbench keeps the drawn sizes: the bytes agree with fio's and the IO count follows the weights. Sequential jobs draw from storbench's generator, so their IO count is a random draw too."),
    OptDef::new(
        "blockalign",
        K::SizeDirs,
        C::BlockSize,
        "",
        "Boundary random offsets are aligned to, or read,write[,trim] (default: the smallest block size)",
        |b, v| {
            let kb = b.spec.kb_base;
            for (d, part) in split_dirs(val(v)?)?.into_iter().enumerate() {
                if let Some(p) = part {
                    let n = parse_size(p, kb)?;
                    if n == 0 {
                        return Err("an alignment of 0 bytes: give 1 or more".into());
                    }
                    b.spec.blockalign[d] = Some(n);
                }
            }
            Ok(())
        },
    )
    .aliases(&["ba"])
    .note("As in fio, random offsets are multiples of it; storbench aligns every direction to the smallest alignment given or implied (fio keeps one per direction)."),
];

fn apply_bs(b: &mut JobBuilder, v: Option<&str>) -> Result<(), String> {
    let v = val(v)?;
    if !v.contains(',') && !v.starts_with('(') && v.contains(['-', ':']) {
        return Err(format!(
            "bs takes read,write,trim sizes; for a range of sizes use bsrange={v}"
        ));
    }
    let kb = b.spec.kb_base;
    for (d, part) in split_dirs(v)?.into_iter().enumerate() {
        if let Some(p) = part {
            let size = parse_size(p, kb)?;
            if size == 0 {
                return Err("block sizes must be at least 1 byte".into());
            }
            b.bs[d] = size;
        }
    }
    Ok(())
}

/// Most entries fio accepts in one bssplit list.
const BSSPLIT_MAX: usize = 64;

fn apply_bssplit(b: &mut JobBuilder, v: Option<&str>) -> Result<(), String> {
    let v = val(v)?;
    let parts: Vec<&str> = v.split(',').collect();
    let lists: [&str; 3] = match parts.as_slice() {
        [all] => [all, all, all],
        [r, w] => [r, w, w],
        [r, w, t] => [r, w, t],
        _ => return Err("at most three lists: read,write,trim".into()),
    };
    for (d, list) in lists.into_iter().enumerate() {
        if !list.trim().is_empty() {
            b.bssplit[d] = Some(parse_split_list(list.trim(), b.spec.kb_base)?);
        }
    }
    Ok(())
}

/// `4k/30:8k/70` → sizes with weights summing to 100. Entries without a weight share what
/// the others leave.
fn parse_split_list(list: &str, kb_base: u32) -> Result<Vec<(u64, u32)>, String> {
    let mut given: Vec<(u64, Option<u32>)> = Vec::new();
    for entry in list.split(':').take_while(|e| !e.trim().is_empty()) {
        if given.len() == BSSPLIT_MAX {
            return Err(format!("at most {BSSPLIT_MAX} entries"));
        }
        let (size, weight) = match entry.split_once('/') {
            Some((s, w)) => (s, Some(parse_percent(w)?).filter(|w| *w > 0)),
            None => (entry, None),
        };
        let size = parse_size(size.trim(), kb_base)?;
        if size == 0 {
            return Err("block sizes must be at least 1 byte".into());
        }
        given.push((size, weight));
    }
    let sum: u32 = given.iter().filter_map(|(_, w)| *w).sum();
    if sum > 100 {
        return Err(format!("weights add up to {sum}, more than 100"));
    }
    let missing = given.iter().filter(|(_, w)| w.is_none()).count() as u32;
    let share = (100 - sum).checked_div(missing).unwrap_or(0);
    let mut out: Vec<(u64, u32)> = given
        .into_iter()
        .map(|(s, w)| (s, w.unwrap_or(share)))
        .filter(|(_, w)| *w > 0)
        .collect();
    let total: u32 = out.iter().map(|(_, w)| w).sum();
    let heaviest = out
        .iter()
        .enumerate()
        .max_by_key(|(i, (_, w))| (*w, *i))
        .map(|(i, _)| i)
        .ok_or("no block size with a weight above 0")?;
    out[heaviest].1 += 100 - total;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_lists() {
        assert_eq!(
            parse_split_list("4k/60:64k/40", 1024),
            Ok(vec![(4096, 60), (65536, 40)])
        );
        assert_eq!(
            parse_split_list("4k:8k:16k", 1024),
            Ok(vec![(4096, 33), (8192, 33), (16384, 34)])
        );
        assert_eq!(
            parse_split_list("4k/50:8k", 1024),
            Ok(vec![(4096, 50), (8192, 50)])
        );
        assert_eq!(
            parse_split_list("4k/50:8k/30", 1024),
            Ok(vec![(4096, 70), (8192, 30)])
        );
        assert_eq!(parse_split_list("4k", 1024), Ok(vec![(4096, 100)]));
        assert!(parse_split_list("4k/60:8k/60", 1024).is_err());
        assert_eq!(
            parse_split_list("4k/60:8k/40:16k", 1024),
            Ok(vec![(4096, 60), (8192, 40)])
        );
        assert!(parse_split_list("4q/100", 1024).is_err());
    }
}
