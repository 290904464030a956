//! What goes into write buffers: random, zeros, compressible, patterned, deduplicable.

use super::{Category as C, Kind as K, OptDef, flag, val};
use crate::build::JobBuilder;
use crate::spec::{DedupeMode, JobSpec, SizeSpec};
use crate::units::{parse_bool, parse_percent, parse_size};

/// The longest pattern fio accepts.
const MAX_PATTERN: usize = 512;

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "zero_buffers",
        K::Flag,
        C::Buffers,
        "",
        "Fill buffers with zeros (compresses and dedupes perfectly: flatters ZFS and btrfs)",
        |b, v| {
            b.spec.buffers.zero_buffers = flag(v)?;
            Ok(())
        },
    ),
    OptDef::new(
        "refill_buffers",
        K::Flag,
        C::Buffers,
        "",
        "Refill buffers with new random data on every write",
        |b, v| {
            b.spec.buffers.refill_buffers = flag(v)?;
            b.refill_set = true;
            Ok(())
        },
    ),
    OptDef::new(
        "scramble_buffers",
        K::Bool,
        C::Buffers,
        "1",
        "Change a little of each buffer on every write (defeats naive dedupe, not compression)",
        |b, v| {
            b.spec.buffers.scramble_buffers = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "buffer_compress_percentage",
        K::Percent,
        C::Buffers,
        "",
        "Make buffers compress to about this percentage (turns refill_buffers on)",
        |b, v| {
            b.spec.buffers.compress_percentage = parse_percent(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "buffer_compress_chunk",
        K::Size,
        C::Buffers,
        "512",
        "Size of the alternating random and compressible regions (0: one per block)",
        |b, v| {
            b.spec.buffers.compress_chunk = parse_size(val(v)?, b.spec.kb_base)?;
            Ok(())
        },
    ),
    OptDef::new(
        "buffer_pattern",
        K::Pattern,
        C::Buffers,
        "",
        "Fill buffers with this pattern: 0xHEX, \"text\", or a decimal number, concatenated",
        apply_pattern,
    )
    .note("A 'file' part (pattern read from a file) is not supported."),
    OptDef::new(
        "dedupe_percentage",
        K::Percent,
        C::Buffers,
        "",
        "Make this percentage of written buffers copies of earlier ones (turns refill_buffers on)",
        |b, v| {
            b.spec.buffers.dedupe_percentage = parse_percent(val(v)?)?;
            b.spec.buffers.refill_buffers = true;
            Ok(())
        },
    ),
    OptDef::new(
        "dedupe_mode",
        K::Choice(DEDUPE_MODES),
        C::Buffers,
        "repeat",
        "Where a deduplicated write's data comes from",
        |b, v| {
            b.spec.buffers.dedupe_mode = match val(v)? {
                "repeat" => DedupeMode::Repeat,
                "working_set" => DedupeMode::WorkingSet,
                other => return Err(format!("'{other}' is not one of repeat, working_set")),
            };
            Ok(())
        },
    )
    .note("`working_set` needs `size`, one file per job, and `dedupe_percentage` plus `dedupe_working_set_percentage` at most 100, as fio checks."),
    OptDef::new(
        "dedupe_working_set_percentage",
        K::Percent,
        C::Buffers,
        "5",
        "Share of size whose first unique writes are the dedupe working set",
        |b, v| {
            b.spec.buffers.dedupe_working_set_percentage = parse_percent(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "dedupe_global",
        K::Bool,
        C::Buffers,
        "0",
        "Share the dedupe working set among the jobs that set this",
        |b, v| {
            b.spec.buffers.dedupe_global = parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .note("The working set is spread evenly over the clones of the stonewall group that set it, as fio spreads it over its jobs."),
];

const DEDUPE_MODES: &[(&str, &str)] = &[
    ("repeat", "Repeat the previous unique write"),
    (
        "working_set",
        "Repeat one of the first unique writes, drawn uniformly",
    ),
];

/// fio's checks of the dedupe working set, and its size in buffers of the smallest write
/// block size.
pub(crate) fn fix_dedupe(s: &mut JobSpec) -> Result<(), String> {
    let b = &s.buffers;
    if b.dedupe_percentage == 0 || b.dedupe_mode != DedupeMode::WorkingSet {
        return Ok(());
    }
    let Some(SizeSpec::Bytes(size)) = s.size else {
        return Err("dedupe_mode=working_set needs size= set to a number of bytes".into());
    };
    if s.nrfiles != 1 {
        return Err(format!(
            "dedupe_mode=working_set supports one file per job, not {}",
            s.nrfiles
        ));
    }
    if b.dedupe_percentage + b.dedupe_working_set_percentage > 100 {
        return Err(format!(
            "dedupe_percentage={} cannot be reached with {}% of size reserved as the \
             dedupe working set",
            b.dedupe_percentage, b.dedupe_working_set_percentage
        ));
    }
    let bs = s.bs[1].min().max(1);
    s.buffers.dedupe_working_set_pages =
        size * u64::from(b.dedupe_working_set_percentage) / 100 / bs;
    Ok(())
}

/// fio's rules at parse time: a pattern replaces scrambling and zeros, and buffers are
/// refilled when reads or compression would otherwise spoil the pattern.
fn apply_pattern(b: &mut JobBuilder, v: Option<&str>) -> Result<(), String> {
    let pattern = parse_pattern(val(v)?)?;
    let buf = &mut b.spec.buffers;
    buf.pattern = pattern;
    buf.refill_buffers = buf.compress_percentage > 0 || b.spec.rw.kind.reads();
    buf.scramble_buffers = false;
    buf.zero_buffers = false;
    Ok(())
}

/// Parses fio's pattern syntax into bytes.
pub(crate) fn parse_pattern(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        rest = if let Some(r) = rest.strip_prefix('"') {
            let end = r.find('"').ok_or("unterminated \"text\" in pattern")?;
            out.extend_from_slice(&r.as_bytes()[..end]);
            &r[end + 1..]
        } else if rest.starts_with('\'') {
            return Err("patterns read from files ('file') are not supported by storbench".into());
        } else if rest.starts_with("0x") || rest.starts_with("0X") {
            hex_part(&rest[2..], &mut out)?
        } else if rest.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
            decimal_part(rest, &mut out)?
        } else if rest.starts_with(char::is_whitespace) {
            rest.trim_start()
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            return Err(format!("unexpected '{c}' in pattern"));
        };
        if out.len() > MAX_PATTERN {
            return Err(format!("pattern longer than {MAX_PATTERN} bytes"));
        }
    }
    if out.is_empty() {
        return Err("empty pattern".into());
    }
    Ok(out)
}

/// Hex digits in written order; an odd count makes the first digit a byte of its own.
fn hex_part<'a>(s: &'a str, out: &mut Vec<u8>) -> Result<&'a str, String> {
    let mut len = s.bytes().take_while(u8::is_ascii_hexdigit).count();
    // `0xff0x14` is two numbers: stop before the next `0x`.
    if len < s.len() && len > 0 && s[len - 1..].starts_with("0x") {
        len -= 1;
    }
    if len == 0 {
        return Err("0x needs hex digits".into());
    }
    let digits = &s[..len];
    let (head, tail) = digits.split_at(len % 2);
    if !head.is_empty() {
        out.push(u8::from_str_radix(head, 16).map_err(|e| e.to_string())?);
    }
    for i in (0..tail.len()).step_by(2) {
        out.push(u8::from_str_radix(&tail[i..i + 2], 16).map_err(|e| e.to_string())?);
    }
    Ok(&s[len..])
}

/// A decimal number becomes its 32-bit little-endian bytes without high zero bytes (0 is
/// one zero byte), as fio stores it.
fn decimal_part<'a>(s: &'a str, out: &mut Vec<u8>) -> Result<&'a str, String> {
    let sign = usize::from(s.starts_with('-'));
    let mut len = sign + s[sign..].bytes().take_while(u8::is_ascii_digit).count();
    if let Some(i) = s[..len].find("0x").filter(|i| *i > sign) {
        len = i;
    }
    let v: i64 = s[..len]
        .parse()
        .map_err(|_| format!("'{}' is not a number", &s[..len]))?;
    let v = i32::try_from(v).map_err(|_| format!("{v} does not fit in 32 bits"))?;
    if v == 0 {
        out.push(0);
    } else {
        let mut u = v as u32;
        while u != 0 {
            out.push((u & 0xff) as u8);
            u >>= 8;
        }
    }
    Ok(&s[len..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_follow_fio() {
        assert_eq!(
            parse_pattern("0xdeadface"),
            Ok(vec![0xde, 0xad, 0xfa, 0xce])
        );
        assert_eq!(parse_pattern("0xabc"), Ok(vec![0x0a, 0xbc]));
        assert_eq!(parse_pattern("\"abcd\""), Ok(b"abcd".to_vec()));
        assert_eq!(parse_pattern("-12"), Ok(vec![0xf4, 0xff, 0xff, 0xff]));
        assert_eq!(parse_pattern("0"), Ok(vec![0]));
        assert_eq!(parse_pattern("258"), Ok(vec![2, 1]));
        assert_eq!(
            parse_pattern("0xdeadface\"ab\"-12"),
            Ok(vec![
                0xde, 0xad, 0xfa, 0xce, b'a', b'b', 0xf4, 0xff, 0xff, 0xff
            ])
        );
        assert_eq!(parse_pattern("0xff0x14"), Ok(vec![0xff, 0x14]));
        assert!(parse_pattern("'file'").is_err());
        assert!(parse_pattern("\"open").is_err());
        assert!(parse_pattern("zz").is_err());
        assert!(parse_pattern("").is_err());
        assert!(parse_pattern(&format!("0x{}", "ab".repeat(600))).is_err());
    }
}
