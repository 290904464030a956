//! Files, devices and URLs: names, sizes, offsets, and the file life cycle.

use super::{Category as C, Kind as K, OptDef, val};
use crate::spec::{FadviseHint, Fallocate, FileService, SizeSpec};
use crate::units::{
    SizeOrPercent, parse_bool, parse_size, parse_size_or_percent, parse_u32, split_range,
};

const FILE_SERVICE: &[(&str, &str)] = &[
    ("roundrobin", "Take turns between the files"),
    ("sequential", "Finish one file before the next"),
    ("random", "Pick a file at random for each IO"),
];

const FALLOCATE: &[(&str, &str)] = &[
    ("none", "Do not preallocate"),
    (
        "native",
        "Preallocate with fallocate(), silently skipped if unsupported",
    ),
    ("posix", "Preallocate with posix_fallocate()"),
    ("keep", "fallocate() with FALLOC_FL_KEEP_SIZE"),
    ("truncate", "Extend with ftruncate()"),
    ("0", "Same as none"),
    ("1", "Same as posix"),
];

const FADVISE_HINT: &[(&str, &str)] = &[
    ("0", "Give no hint"),
    ("1", "Random for rand* workloads, sequential otherwise"),
    ("random", "Always POSIX_FADV_RANDOM"),
    ("sequential", "Always POSIX_FADV_SEQUENTIAL"),
];

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "filename",
        K::Str,
        C::Files,
        "",
        "File, block device or URL (see --enghelp) to use; ':' separates several, '\\:' is a literal colon",
        |b, v| {
            b.spec.filenames = split_targets(val(v)?)?;
            Ok(())
        },
    )
    .note("A ':' inside a URL (port, IQN) does not split the list; only a ':' followed by another scheme:// does."),
    OptDef::new(
        "directory",
        K::Str,
        C::Files,
        "",
        "Directory (or URL of a file server) for generated file names; ':' separates several, handed out to clones in turn",
        |b, v| {
            b.spec.directories = split_targets(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "filename_format",
        K::Str,
        C::Files,
        "$jobname.$jobnum.$filenum",
        "How generated file names are formed",
        |b, v| {
            b.spec.filename_format = val(v)?.to_string();
            Ok(())
        },
    ),
    OptDef::new(
        "size",
        K::SizeOrPercent,
        C::Files,
        "",
        "Bytes of IO per job clone (split over its files), or N% of the file or device",
        |b, v| {
            b.spec.size = match parse_size_or_percent(val(v)?, b.spec.kb_base)? {
                SizeOrPercent::Bytes(0) => None,
                SizeOrPercent::Bytes(n) => Some(SizeSpec::Bytes(n)),
                SizeOrPercent::Percent(0) => return Err("size must be above 0%".into()),
                SizeOrPercent::Percent(p) => Some(SizeSpec::Percent(f64::from(p))),
            };
            Ok(())
        },
    ),
    OptDef::new(
        "filesize",
        K::SizeRange,
        C::Files,
        "",
        "Size of each file, or a lo-hi range to pick sizes from",
        |b, v| {
            let v = val(v)?;
            let kb = b.spec.kb_base;
            let (lo, hi) = match split_range(v) {
                Some((lo, hi)) => (parse_size(lo, kb)?, parse_size(hi, kb)?),
                None => (parse_size(v, kb)?, parse_size(v, kb)?),
            };
            if lo.min(hi) == 0 {
                return Err("filesize must be at least 1 byte".into());
            }
            b.spec.filesize = Some((lo.min(hi), lo.max(hi)));
            Ok(())
        },
    ),
    OptDef::new(
        "nrfiles",
        K::Int,
        C::Files,
        "1",
        "Files per job clone (ignored when filename lists the files)",
        |b, v| {
            let n = parse_u32(val(v)?, b.spec.kb_base)?;
            if n == 0 {
                return Err("nrfiles must be at least 1".into());
            }
            b.spec.nrfiles = n;
            Ok(())
        },
    )
    .aliases(&["nr_files"]),
    OptDef::new(
        "file_service_type",
        K::Choice(FILE_SERVICE),
        C::Files,
        "roundrobin",
        "Which file the next IO goes to",
        |b, v| {
            let v = val(v)?;
            let (word, nr) = match v.split_once(':') {
                Some((w, n)) => (w, Some(n)),
                None => (v, None),
            };
            if let Some(n) = nr
                && parse_u32(n, 1024)? != 1
            {
                return Err("a ':N' switch count other than 1 is not supported by storbench".into());
            }
            b.spec.file_service = match word {
                "roundrobin" => FileService::RoundRobin,
                "sequential" => FileService::Sequential,
                "random" => FileService::Random,
                "zipf" | "pareto" | "normal" | "gauss" => {
                    return Err(format!("fio's '{word}' file service is not supported by storbench (see docs/fio-compat.md)"));
                }
                _ => return Err(format!("'{word}' is not one of roundrobin, sequential, random")),
            };
            Ok(())
        },
    )
    .note("zipf, pareto, normal and a ':N' switch count are not supported."),
    OptDef::new(
        "offset",
        K::SizeOrPercent,
        C::Files,
        "0",
        "Start IO at this byte offset, or at N% of the file or device",
        |b, v| {
            b.spec.offset = match parse_size_or_percent(val(v)?, b.spec.kb_base)? {
                SizeOrPercent::Bytes(n) => SizeSpec::Bytes(n),
                SizeOrPercent::Percent(100) => {
                    return Err("an offset of 100% leaves nothing to do".into());
                }
                SizeOrPercent::Percent(p) => SizeSpec::Percent(f64::from(p)),
            };
            Ok(())
        },
    )
    .aliases(&["fileoffset"]),
    OptDef::new(
        "offset_increment",
        K::SizeOrPercent,
        C::Files,
        "0",
        "Each clone starts this far after the previous one: bytes, or N% of the file's size (clone N at offset + N * increment)",
        |b, v| {
            b.spec.offset_increment = match parse_size_or_percent(val(v)?, b.spec.kb_base)? {
                SizeOrPercent::Bytes(n) => SizeSpec::Bytes(n),
                SizeOrPercent::Percent(p) => SizeSpec::Percent(f64::from(p)),
            };
            Ok(())
        },
    )
    .note("With a percentage in offset or offset_increment, the start is rounded up to the smallest block size, as in fio."),
    OptDef::new(
        "invalidate",
        K::Bool,
        C::Files,
        "1",
        "Drop the file's page cache before the job (BLKFLSBUF for devices), and again where fio does: on reopening a file that is done or starting a new loop, and for buffered IO when a time-based job wraps in place (a pass over its one file, a full random map)",
        |b, v| {
            b.spec.invalidate = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "fadvise_hint",
        K::Choice(FADVISE_HINT),
        C::Files,
        "1",
        "Tell the kernel the access pattern with posix_fadvise when the job opens its files",
        |b, v| {
            b.spec.fadvise_hint = match val(v)? {
                "0" => FadviseHint::None,
                "1" => FadviseHint::Pattern,
                "random" => FadviseHint::Random,
                "sequential" => FadviseHint::Sequential,
                other => {
                    return Err(format!(
                        "'{other}' is not one of 0, 1, random, sequential"
                    ));
                }
            };
            Ok(())
        },
    )
    .note("Buffered random reads depend on it: without the hint the kernel reads ahead around each miss. With ioengine=mmap it also sets each mapping's madvise; no effect with the network engines."),
    OptDef::new(
        "create_on_open",
        K::Bool,
        C::Files,
        "0",
        "Create files when the job opens them, not in a lay-out phase before",
        |b, v| {
            b.spec.create_on_open = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "create_only",
        K::Bool,
        C::Files,
        "0",
        "Lay the files out and end the job without IO (the files are kept for later jobs)",
        |b, v| {
            b.spec.create_only = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "fill_device",
        K::Bool,
        C::Files,
        "0",
        "Write until the file system or device is full (ENOSPC or EDQUOT ends the job without an error)",
        |b, v| {
            b.spec.fill_device = parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .aliases(&["fill_fs"])
    .note("Without size= a file's region has no end: the job writes until ENOSPC; a device's region is the device, whose data is checked before any write as in every job. In a job that reads and does not write, as fio: the file is laid out until the storage is full (or to size= where there is room) and the job reads what it holds. A mix (rw, randrw) without size= is refused: fio 3.33 reads past the end of the file it filled (rw ends with EIO, randrw does no IO)."),
    OptDef::new(
        "pre_read",
        K::Bool,
        C::Files,
        "0",
        "Read the files into the page cache before the job starts (not timed); clears invalidate",
        |b, v| {
            b.spec.pre_read = parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .note("Local files and devices only, as fio reads them with read(2); a URL target is refused."),
    OptDef::new(
        "openfiles",
        K::Int,
        C::Files,
        "nrfiles",
        "Files a clone keeps open at once: the others wait until an open one is done",
        |b, v| {
            b.spec.openfiles = match parse_u32(val(v)?, b.spec.kb_base)? {
                0 => None,
                n => Some(n),
            };
            Ok(())
        },
    )
    .note("With verify, as fio: the verify after the writes opens each file again as it reaches its blocks and keeps it open to the job's end. With verify_backlog it is refused: fio then opens a checked block's file past openfiles while the writes go on."),
    OptDef::new(
        "unique_filename",
        K::Bool,
        C::Files,
        "1",
        "In a multi-host run, generated file names carry the host's rank so hosts never share a file; 0 lets them share",
        |b, v| {
            b.spec.unique_filename = parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .note("fio prefixes the names of a client's files with its address in --client mode; storbench's multi-host runs put the rank into fio's default name instead (docs/multihost.md). A single-host run is the same either way."),
    OptDef::new(
        "create_serialize",
        K::Bool,
        C::Files,
        "1",
        "Lay the files of a job's clones out one after the other (storbench always does, before the run)",
        |_, v| {
            parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .note("fio 0 lets each clone lay its own files out in parallel; the files and the measurement are the same, so both values are accepted."),
    OptDef::new(
        "allow_mounted_write",
        K::Bool,
        C::Files,
        "0",
        "Let a job write to a mounted device (0 only: storbench refuses that in every job)",
        |_, v| {
            if parse_bool(val(v)?)? {
                return Err("allow_mounted_write=1 is refused: storbench never writes to a \
                            mounted device; unmount it first"
                    .into());
            }
            Ok(())
        },
    )
    .note("fio refuses a write job on a mounted device unless this is set; storbench refuses it always, so only 0 is accepted."),
    OptDef::new(
        "overwrite",
        K::Bool,
        C::Files,
        "0",
        "Lay the file out in full before writing (always done when the job reads)",
        |b, v| {
            b.spec.overwrite = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "unlink",
        K::Bool,
        C::Files,
        "0",
        "Delete the job's files when it is done",
        |b, v| {
            b.spec.unlink = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "fallocate",
        K::Choice(FALLOCATE),
        C::Files,
        "native",
        "How files are preallocated when laid out",
        |b, v| {
            b.spec.fallocate = match val(v)? {
                "none" | "0" => Fallocate::None,
                "native" => Fallocate::Native,
                "posix" | "1" => Fallocate::Posix,
                "keep" => Fallocate::Keep,
                "truncate" => Fallocate::Truncate,
                other => {
                    return Err(format!(
                        "'{other}' is not one of none, native, posix, keep, truncate"
                    ));
                }
            };
            Ok(())
        },
    ),
];

/// Splits fio's `:`-separated list. `\:` is a literal colon. In a URL (`scheme://…`) a
/// colon belongs to the URL (port, IQN) unless another `scheme://` follows it.
/// fio's `filename`/`directory` list, each entry parsed as a [`Target`] here, where it is
/// read: a malformed URL, or one of a scheme storbench does not reach, is one line.
fn split_targets(s: &str) -> Result<Vec<crate::target::Target>, String> {
    split_paths(s)?
        .iter()
        .map(|t| crate::target::Target::parse(t))
        .collect()
}

pub(crate) fn split_paths(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("\\:") {
            cur.push(':');
            rest = after;
            continue;
        }
        rest = &rest[c.len_utf8()..];
        if c != ':' {
            cur.push(c);
            continue;
        }
        let scheme_sep = rest.starts_with("//");
        if !scheme_sep && is_our_scheme(&cur) {
            return Err(missing_slashes(&cur));
        }
        let inside_url = cur.contains("://");
        if scheme_sep || (inside_url && !starts_with_url(rest)) {
            cur.push(':');
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    Ok(out)
}

/// A catalogue protocol's scheme (`nfs`) as a whole list item: a URL typed with one slash
/// or none (`nfs:/h/e`) would otherwise become a local directory `nfs` and a second path.
fn is_our_scheme(item: &str) -> bool {
    crate::catalogue::protocols().any(|p| p.scheme.eq_ignore_ascii_case(item))
}

#[cold]
fn missing_slashes(scheme: &str) -> String {
    format!(
        "'{scheme}:' must be followed by two slashes, as in {scheme}://host/…; \
         for a local path named {scheme}, write ./{scheme}"
    )
}

/// `nfs://…`, `iscsi://…`: letters, digits, `+.-` then `://`.
fn starts_with_url(s: &str) -> bool {
    match s.find("://") {
        Some(i) if i > 0 => s[..i]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-')),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lists_and_escapes() {
        assert_eq!(
            split_paths("/dev/sdb:/dev/sdc").unwrap(),
            ["/dev/sdb", "/dev/sdc"]
        );
        assert_eq!(split_paths(r"F\:\file").unwrap(), [r"F:\file"]);
        assert_eq!(split_paths(":a::b:").unwrap(), ["a", "b"]);
        assert_eq!(split_paths("one").unwrap(), ["one"]);
    }

    #[test]
    fn urls_keep_their_colons() {
        assert_eq!(
            split_paths("iscsi://127.0.0.1:3260/iqn.2026-11.lab:disk/1").unwrap(),
            ["iscsi://127.0.0.1:3260/iqn.2026-11.lab:disk/1"]
        );
        assert_eq!(
            split_paths(r"iscsi\://127.0.0.1/iqn.2016-02.com.fio\:system\:fio/1").unwrap(),
            ["iscsi://127.0.0.1/iqn.2016-02.com.fio:system:fio/1"]
        );
        assert_eq!(
            split_paths("nfs://h:2049/e/a:nfs://h2/e/b:/local").unwrap(),
            ["nfs://h:2049/e/a", "nfs://h2/e/b:/local"]
        );
        assert_eq!(
            split_paths("/local:nfs://h/e/x").unwrap(),
            ["/local", "nfs://h/e/x"]
        );
    }

    #[test]
    fn a_url_with_one_slash_is_refused_not_split() {
        for typed in [
            "nfs:/127.0.0.1/export",
            "/a:NFS:/h/e",
            "iscsi:h/iqn/1",
            "nfs:",
        ] {
            let err = split_paths(typed).unwrap_err();
            assert!(err.contains("two slashes"), "{typed}: {err}");
        }
        assert_eq!(split_paths("./nfs:/b").unwrap(), ["./nfs", "/b"]);
        assert_eq!(split_paths(r"nfs\:/x").unwrap(), ["nfs:/x"]);
    }
}
