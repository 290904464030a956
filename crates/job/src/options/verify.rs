//! fio's data verification: `verify` and the options that shape it. What fio 3.33 does
//! with them after parsing (interval defaults, an implied `verify` for `verify_pattern`,
//! what storbench refuses) is in [`fix_verify`].

use super::{Category as C, Kind as K, OptDef, flag, val};
use crate::spec::{JobSpec, VerifyKind};
use crate::units::{parse_bool, parse_size, parse_u32};

/// fio's `verify=` values for `--cmdhelp` and the docs.
const VERIFY_VALUES: &[(&str, &str)] = &[
    ("0", "Don't verify"),
    ("md5", "md5 of each block's data"),
    (
        "crc64",
        "crc64 (fio's: Jones polynomial, reflected, no inversion)",
    ),
    ("crc32", "crc32 (fio's: MSB-first, no inversion)"),
    (
        "crc32c",
        "crc32c (Castagnoli), hardware accelerated where the CPU has it",
    ),
    ("crc32c-intel", "Same as crc32c"),
    ("crc16", "crc16"),
    ("crc7", "crc7"),
    ("sha1", "sha1"),
    ("sha256", "sha256 as fio 3.33 stores it"),
    ("sha512", "sha512 as fio 3.33 stores it (see the note)"),
    ("sha3-224", "sha3-224"),
    ("sha3-256", "sha3-256"),
    ("sha3-384", "sha3-384"),
    ("sha3-512", "sha3-512"),
    ("xxhash", "xxhash (XXH32)"),
    (
        "meta",
        "The header alone (offset, sequence number, header crc)",
    ),
    ("pattern", "verify_pattern alone, no header"),
    ("null", "Pretend to verify"),
];

/// The longest pattern fio accepts.
const MAX_PATTERN: usize = 512;

/// Bytes `%o` occupies in a pattern (fio pastes the 64-bit offset).
const OFFSET_FMT_LEN: usize = 8;

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "verify",
        K::Choice(VERIFY_VALUES),
        C::Verify,
        "0",
        "Write blocks with fio's verify header and checksum and check them when read",
        |b, v| {
            let v = val(v)?;
            let kind = VerifyKind::NAMES
                .iter()
                .find(|(n, _)| *n == v)
                .map(|(_, k)| *k)
                .ok_or_else(|| {
                    let names: Vec<&str> = VerifyKind::NAMES.iter().map(|(n, _)| *n).collect();
                    format!("unknown verify type '{v}' (one of {})", names.join(", "))
                })?;
            b.spec.verify.kind = kind;
            b.verify_set = true;
            Ok(())
        },
    )
    .note(
        "Blocks are laid out as fio 3.33 lays them out (40-byte header, then the checksum), so \
         either tool verifies the other's data; the first bad block stops the job with fio's \
         message and err=84 (EILSEQ), as fio does. Written data is storbench's own random \
         data, not fio's (only checksums and headers are compared). sha512 follows fio 3.33, \
         which never finishes that hash: its 128 stored bytes are copies of data bytes, so it \
         finds little; use sha256, sha3-512 or crc32c. A mixed job (rw=rw, randrw) verifies \
         as fio's does: its own reads are not checked, its writes are read back and checked \
         after the mix (or during it with verify_backlog), in fio's order: write order for \
         a random job with its random map, else offset order; their headers carry fio's \
         seeds, which fio checks in a mix, so a sequential mix written by either tool \
         verifies in the other (a random mix's offsets are each tool's own). Trims (trimwrite, \
         randtrimwrite) work as fio's: written blocks are checked, trimmed ones too with \
         trim_verify_zero. Refused with verify, for now: write jobs with time_based, \
         loops > 1 or io_size above size without verify_backlog (fio verifies after every \
         pass; verify_backlog checks each pass's blocks as it goes).",
    ),
    OptDef::new(
        "do_verify",
        K::Bool,
        C::Verify,
        "1",
        "Read the written blocks back and check them after the writes",
        |b, v| {
            b.spec.verify.do_verify = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "verify_interval",
        K::Size,
        C::Verify,
        "",
        "Put a header every this many bytes of a block (default: the write block size)",
        |b, v| {
            let n = parse_size(val(v)?, b.spec.kb_base)?;
            if n < 80 {
                return Err(format!("verify_interval={n} is below fio's minimum of 80"));
            }
            b.spec.verify.interval = n;
            b.verify_given.push("verify_interval");
            Ok(())
        },
    ),
    OptDef::new(
        "verify_offset",
        K::Size,
        C::Verify,
        "",
        "Swap the header with the bytes this far into each interval",
        |b, v| {
            let n = parse_size(val(v)?, b.spec.kb_base)?;
            if n < 40 {
                return Err(format!("verify_offset={n} is below fio's minimum of 40"));
            }
            b.spec.verify.offset = n;
            b.verify_given.push("verify_offset");
            Ok(())
        },
    ),
    OptDef::new(
        "verify_pattern",
        K::Pattern,
        C::Verify,
        "",
        "Fill and check blocks with this pattern: 0xHEX, \"text\", decimal, %o (the offset)",
        |b, v| {
            let (pattern, offsets) = parse_verify_pattern(val(v)?)?;
            b.spec.verify.pattern = pattern;
            b.spec.verify.pattern_offsets = offsets;
            Ok(())
        },
    ),
    OptDef::new(
        "verify_fatal",
        K::Bool,
        C::Verify,
        "0",
        "Stop at the first bad header of a block rather than checking its others",
        |b, v| {
            b.spec.verify.fatal = parse_bool(val(v)?)?;
            if b.spec.verify.fatal {
                b.verify_given.push("verify_fatal");
            }
            Ok(())
        },
    )
    .note("storbench reports the first bad interval of a block either way; the job stops there, as fio's does."),
    OptDef::new(
        "verify_dump",
        K::Bool,
        C::Verify,
        "0",
        "On a verify failure, write the block read and the block expected to files in the working directory",
        |b, v| {
            b.spec.verify.dump = parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .note("Named as fio names them: FILE.OFFSET.received, FILE.OFFSET.expected (FILE the basename of the job's file, OFFSET the failed interval's), FILE.OFFSET.hdr_fail for a bad header. The expected block is rebuilt as fio rebuilds it: a pattern, with or without fio's header; for a checksum kind (crc*, md5, sha*, xxhash, meta), fio's random data from the seed in the block's header, then the headers (timed at the read) and checksums. With verify_dump a write job writes fio's random data, as fio does, so either tool rebuilds the other's blocks; with buffer_compress_percentage the data is not fio's and only the received block is dumped."),
    OptDef::new(
        "verify_async",
        K::Int,
        C::Verify,
        "0",
        "Threads that check read-back blocks, off the IO thread",
        |b, v| {
            parse_u32(val(v)?, b.spec.kb_base)?;
            Ok(())
        },
    )
    .note("Accepted: storbench checks each block in the worker as its read completes, with the same result and message as fio's helper threads; only where the checking's CPU time is spent differs."),
    OptDef::new(
        "verify_state_save",
        K::Bool,
        C::Verify,
        "1",
        "Leave fio's verify state file when a verifying write job ends",
        |b, v| {
            b.spec.verify.state_save = parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .note("As fio: `local-NAME-N-verify.state` in the working directory (N: the clone's number over the run), in fio's layout, so either tool loads the other's; never written through a symbolic link. Unlike fio, a verify_only run leaves the file as the writes left it (fio rewrites it from its dry run, so that a second verify_only run of fio checks every block)."),
    OptDef::new(
        "verify_state_load",
        K::Bool,
        C::Verify,
        "0",
        "Read the verify state file and stop verifying where the writes stopped",
        |b, v| {
            b.spec.verify.state_load = parse_bool(val(v)?)?;
            if b.spec.verify.state_load {
                b.verify_given.push("verify_state_load");
            }
            Ok(())
        },
    )
    .note("For the verify of a write job (verify_only, or do_verify): the blocks after the last write the state says completed are not checked, as fio's verify_state_should_stop. A missing or foreign file is a one-line error before any IO. A read job with it is refused."),
    OptDef::new(
        "verify_backlog",
        K::Int,
        C::Verify,
        "",
        "Verify written blocks during the writes, each time this many are waiting",
        |b, v| {
            b.spec.verify.backlog = parse_size(val(v)?, b.spec.kb_base)?;
            b.verify_given.push("verify_backlog");
            Ok(())
        },
    )
    .note("As fio: once this many written blocks wait (and the last IO was a write), the oldest are read back and checked, verify_backlog_batch of them; they count as the job's reads, not towards its size; what is still waiting at the end is checked after the writes (do_verify). A time_based write job verifies only this way."),
    OptDef::new(
        "verify_backlog_batch",
        K::Int,
        C::Verify,
        "",
        "Blocks checked each time the backlog is due (default: verify_backlog)",
        |b, v| {
            b.spec.verify.backlog_batch = parse_u32(val(v)?, b.spec.kb_base)?;
            b.verify_given.push("verify_backlog_batch");
            Ok(())
        },
    ),
    OptDef::new(
        "experimental_verify",
        K::Bool,
        C::Verify,
        "0",
        "Verify by replaying the write offsets instead of logging them",
        |b, v| {
            b.spec.verify.experimental = parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .note("Accepted: storbench checks the same blocks with the same messages from its write log, which costs no allocation per IO; only how the offsets are remembered differs from fio's. Refused with trimwrite and randtrimwrite, where fio 3.33's replay checks each trimmed block for zeros after its write and so fails on the first block."),
    OptDef::new(
        "trim_percentage",
        K::Int,
        C::Verify,
        "0",
        "Percentage of the verified writes to trim afterwards (with trim_backlog)",
        |b, v| {
            let n = parse_u32(val(v)?, b.spec.kb_base)?;
            if n > 100 {
                return Err(format!("trim_percentage={n} is above 100"));
            }
            b.spec.verify.trim.percentage = n;
            if n > 0 {
                b.verify_given.push("trim_percentage");
            }
            Ok(())
        },
    )
    .note("As fio: each write logged for verification is chosen with this probability, by fio's own generator and seed, so the same blocks are trimmed; only a job whose rw trims (trimwrite, randtrimwrite) may use it with trim_backlog, as fio 3.33 aborts otherwise."),
    OptDef::new(
        "trim_backlog",
        K::Int,
        C::Verify,
        "",
        "Trim the chosen written blocks each time this many are logged",
        |b, v| {
            b.spec.verify.trim.backlog = parse_size(val(v)?, b.spec.kb_base)?;
            if b.spec.verify.trim.backlog > 0 {
                b.verify_given.push("trim_backlog");
            }
            Ok(())
        },
    )
    .note("As fio: when the logged blocks are a multiple of it (and the last IO was no read), the oldest chosen blocks are trimmed, trim_backlog_batch of them (fio trims one more when the batch starts); these trims count as the job's trims, not towards its size. With an engine that queues its IO (nbd, libaio, io_uring …) fio 3.33 also counts them against a trimwrite's budget and may end its writes early; storbench ends them at the job's size."),
    OptDef::new(
        "trim_backlog_batch",
        K::Int,
        C::Verify,
        "",
        "Blocks trimmed each time the trim backlog is due (default: trim_backlog)",
        |b, v| {
            b.spec.verify.trim.batch = parse_u32(val(v)?, b.spec.kb_base)?;
            b.verify_given.push("trim_backlog_batch");
            Ok(())
        },
    ),
    OptDef::new(
        "trim_verify_zero",
        K::Bool,
        C::Verify,
        "1",
        "Check that a trimmed block reads back as zeros",
        |b, v| {
            b.spec.verify.trim.zero = parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .note("As fio: a trimmed block that reads back non-zero is fio's `trim: verify failed at file F offset O, length L, block offset B` (B: the first non-zero byte) and err=84; with 0 the trimmed blocks are not read back at all. On a block device a trim is BLKDISCARD; on a regular file storbench punches a hole (which reads back zeros), where fio 3.33's sync engines fail the trim with err=25 (ENOTTY)."),
    OptDef::new(
        "verify_only",
        K::Flag,
        C::Verify,
        "",
        "Check data an earlier run wrote: a write job reads and checks instead of writing",
        |b, v| {
            b.spec.verify.only = flag(v)?;
            if b.spec.verify.only {
                b.verify_given.push("verify_only");
            }
            Ok(())
        },
    ),
];

/// fio's `verify_pattern`: its pattern syntax, where `%o` stands for the 8 bytes of each
/// IO's offset.
pub(crate) fn parse_verify_pattern(s: &str) -> Result<(Vec<u8>, Vec<usize>), String> {
    let mut out = Vec::new();
    let mut offsets = Vec::new();
    for (i, part) in s.split("%o").enumerate() {
        if i > 0 {
            offsets.push(out.len());
            out.extend_from_slice(&[0; OFFSET_FMT_LEN]);
        }
        if !part.trim().is_empty() {
            out.extend(super::buffers::parse_pattern(part)?);
        }
    }
    if out.len() > MAX_PATTERN {
        return Err(format!("pattern longer than {MAX_PATTERN} bytes"));
    }
    if out.is_empty() {
        return Err("empty pattern".into());
    }
    Ok((out, offsets))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// fio's fix-ups of the verify options (init.c), and storbench's refusals: verify
/// options that would do nothing without `verify`, and what storbench does not do yet.
pub(crate) fn fix_verify(
    s: &mut JobSpec,
    verify_set: bool,
    given: &[&'static str],
) -> Result<(), String> {
    let random_map = s.random_map();
    let v = &mut s.verify;
    if !verify_set && !v.pattern.is_empty() {
        v.kind = VerifyKind::PatternHdr;
    }
    if !v.active() {
        if let Some(name) = given.first() {
            return Err(format!(
                "{name} needs verify= (one of md5, crc32c, sha256, …); without it fio does nothing with it"
            ));
        }
        return Ok(());
    }
    let kind = v.kind;
    if matches!(kind, VerifyKind::Pattern) && v.pattern.is_empty() {
        return Err("verify=pattern needs verify_pattern".into());
    }
    let rw = s.rw.kind;
    let trim = &v.trim;
    if trim.percentage > 0 && trim.backlog > 0 && !rw.trims() && rw.writes() {
        return Err(format!(
            "trim_percentage with trim_backlog needs a job that trims (rw=trimwrite or \
             randtrimwrite), not rw={}: fio 3.33 aborts on it",
            rw.fio_name()
        ));
    }
    if v.experimental && rw.trims() && rw.writes() {
        return Err(format!(
            "experimental_verify with rw={} is not supported: fio 3.33 replays each trim as a \
             check for zeros after the block's write, so its verify fails on the first block",
            rw.fio_name()
        ));
    }
    let backlogs = v.backlog > 0 || trim.percentage > 0 && trim.backlog > 0;
    if backlogs && rw.writes() && rw.is_random() && !random_map {
        return Err(
            "verify_backlog or trim_backlog in a random job without fio's random map \
             (norandommap, a non-uniform random_distribution, random_generator=lfsr) is not \
             supported by storbench yet: fio takes that backlog in offset order and drops \
             blocks written again"
                .into(),
        );
    }
    // io_size above size= makes several passes too, but where random writes without a
    // random map never end a pass: fio then writes io_size in one.
    let passes = match (s.io_size, s.size) {
        (Some(io), Some(crate::spec::SizeSpec::Bytes(size))) => {
            io > size && !(rw.is_random() && s.norandommap)
        }
        _ => false,
    };
    if rw.writes()
        && v.do_verify
        && (s.time_based || s.loops > 1 || passes)
        && v.backlog == 0
        && !v.only
    {
        return Err(
            "verify of a write job with time_based, loops > 1 or io_size above size is not \
             supported by storbench yet (fio verifies after every pass)"
                .into(),
        );
    }
    if v.state_load && !rw.writes() {
        return Err(
            "verify_state_load with a read job is not supported by storbench; give the \
             write job with verify_only"
                .into(),
        );
    }
    let (wmin, wmax) = (s.bs[1].min(), s.bs[1].max());
    let rmin = s.bs[0].min();
    if wmin != wmax && v.interval == 0 {
        v.interval = wmin;
    }
    if v.interval > wmin {
        v.interval = wmin;
    } else if rw.reads() && v.interval > rmin {
        v.interval = rmin;
    }
    if v.interval == 0 || !wmin.is_multiple_of(v.interval) || !wmax.is_multiple_of(v.interval) {
        v.interval = gcd(wmin, wmax);
    }
    let interval = if rw.reads() {
        v.interval.min(rmin)
    } else {
        v.interval
    };
    let hdr = kind.header_len() as u64;
    if interval <= hdr {
        return Err(format!(
            "verify={}: blocks of {interval} bytes are too small for its {hdr}-byte header",
            name_of(kind)
        ));
    }
    if v.offset > 0 && (v.offset < hdr || v.offset + hdr > interval) {
        return Err(format!(
            "verify_offset={} must leave room for the {hdr}-byte header within the \
             {interval}-byte interval, after it",
            v.offset
        ));
    }
    Ok(())
}

fn name_of(kind: VerifyKind) -> &'static str {
    VerifyKind::NAMES
        .iter()
        .find(|(_, k)| *k == kind)
        .map_or("pattern", |(n, _)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_patterns_with_offsets() {
        assert_eq!(
            parse_verify_pattern("0xdeadbeef"),
            Ok((vec![0xde, 0xad, 0xbe, 0xef], vec![]))
        );
        let (p, o) = parse_verify_pattern("\"ab\"%o0x01").unwrap();
        assert_eq!(p.len(), 11);
        assert_eq!(o, vec![2]);
        assert_eq!(p[10], 1);
        assert_eq!(parse_verify_pattern("%o").unwrap().1, vec![0]);
        assert!(parse_verify_pattern("").is_err());
        assert!(parse_verify_pattern("zz").is_err());
    }

    #[test]
    fn kinds_round_trip_their_fio_numbers() {
        for (_, k) in VerifyKind::NAMES {
            assert_eq!(VerifyKind::from_id(*k as u8), Some(*k));
        }
        assert_eq!(VerifyKind::Md5.header_len(), 56);
        assert_eq!(VerifyKind::Crc32c.header_len(), 44);
        assert_eq!(VerifyKind::Pattern.header_len(), 0);
    }
}
