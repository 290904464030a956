//! fio's number syntax: byte sizes under `kb_base`, durations, percentages, ranges,
//! booleans, and per-direction lists (`read,write,trim`).
//!
//! The unit rules are fio's, checked against fio 3.33 (`--debug=parse`): under the default
//! `kb_base=1024`, `k`, `kb`, `ki` all mean 1024 and `kib` means 1000 (fio inverts the IEC
//! forms "for compatibility"); under `kb_base=1000` it is the other way round, except that
//! the short `ki` follows kb_base. Suffixes are case-insensitive and `b` always means bytes.
//!
//! Where fio silently misreads input (`1.5k` becomes 1 byte, `4q` becomes 4, `10sec` becomes
//! 10 µs) storbench refuses it with a message that says what fio would have done.

use crate::expr::{self, ExprUnits};

/// Microseconds per second: the default unit of `runtime`, `ramp_time`, `startdelay`.
pub const SECOND_US: u64 = 1_000_000;

/// The multiplier of a size suffix (`""`, `b`, `k`, `KiB`, `mb`, …), or `None`.
pub fn size_multiplier(suffix: &str, kb_base: u32) -> Option<u64> {
    let s = suffix.to_ascii_lowercase();
    if s.is_empty() || s == "b" {
        return Some(1);
    }
    let mut chars = s.chars();
    let power = match chars.next()? {
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        'p' => 5,
        _ => return None,
    };
    let rest = chars.as_str();
    let base: u64 = match rest {
        "" | "b" | "i" => u64::from(kb_base),
        "ib" if kb_base == 1000 => 1024,
        "ib" => 1000,
        _ => return None,
    };
    base.checked_pow(power)
}

/// Microseconds per unit for a time suffix, or `None`.
pub fn time_multiplier_us(suffix: &str) -> Option<u64> {
    Some(match suffix.to_ascii_lowercase().as_str() {
        "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "s" => SECOND_US,
        "m" => 60 * SECOND_US,
        "h" => 3600 * SECOND_US,
        "d" => 86_400 * SECOND_US,
        _ => return None,
    })
}

/// A number split into its digits and its unit suffix.
struct Split<'a> {
    digits: &'a str,
    fraction: Option<&'a str>,
    suffix: &'a str,
}

fn split_number(s: &str) -> Result<Split<'_>, String> {
    if s.is_empty() {
        return Err("empty value".into());
    }
    if s.starts_with('-') {
        return Err("negative values are not accepted".into());
    }
    let s = s.strip_prefix('+').unwrap_or(s);
    let int_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if int_end == 0 && !s.starts_with('.') {
        return Err("expected a number".into());
    }
    let (digits, rest) = s.split_at(int_end);
    let (fraction, suffix) = match rest.strip_prefix('.') {
        Some(r) => {
            let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            (Some(&r[..end]), &r[end..])
        }
        None => (None, rest),
    };
    if suffix.contains(char::is_whitespace) {
        return Err("unexpected space inside the value".into());
    }
    Ok(Split {
        digits,
        fraction,
        suffix,
    })
}

fn parse_hex(s: &str) -> Option<Result<u64, String>> {
    let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    Some(u64::from_str_radix(hex, 16).map_err(|_| format!("'{s}' is not a hex number")))
}

/// A byte count: `4096`, `4k`, `1.5`-free, `0x1000`, or `(expression)`.
pub fn parse_size(s: &str, kb_base: u32) -> Result<u64, String> {
    let s = s.trim();
    if s.starts_with('(') {
        return eval_whole(s, ExprUnits::Size { kb_base });
    }
    if let Some(hex) = parse_hex(s) {
        return hex;
    }
    let n = split_number(s)?;
    let mult = size_multiplier(n.suffix, kb_base).ok_or_else(|| {
        format!(
            "'{}' is not a size unit (use k, m, g, t, p, optionally followed by b, i or ib)",
            n.suffix
        )
    })?;
    if let Some(frac) = n.fraction {
        return Err(fraction_error(n.digits, frac, mult, "b"));
    }
    let v: u64 = n
        .digits
        .parse()
        .map_err(|_| "number too large".to_string())?;
    v.checked_mul(mult).ok_or_else(|| "value too large".into())
}

/// fio truncates at the decimal point; say so, and offer the exact integer when there is one.
fn fraction_error(digits: &str, frac: &str, mult: u64, unit: &str) -> String {
    let text = format!("{digits}.{frac}");
    let exact = text.parse::<f64>().ok().map(|f| f * mult as f64);
    let fio_reads = if digits.is_empty() { "0" } else { digits };
    match exact {
        Some(x) if x.fract() == 0.0 && x < 1e18 => format!(
            "fractional values are not accepted (fio would silently read this as {fio_reads}); write {}{unit} instead",
            x as u64
        ),
        _ => format!(
            "fractional values are not accepted (fio would silently read this as {fio_reads}); use a smaller unit"
        ),
    }
}

fn eval_whole(s: &str, units: ExprUnits) -> Result<u64, String> {
    let e = expr::eval(s, units)?;
    to_u64(e.exact, e.value)
}

fn to_u64(exact: Option<i128>, value: f64) -> Result<u64, String> {
    match exact {
        Some(i) if i < 0 => Err(format!("expression gives a negative value ({i})")),
        Some(i) => u64::try_from(i).map_err(|_| "value too large".into()),
        None if value < 0.0 => Err(format!("expression gives a negative value ({value})")),
        None if value >= u64::MAX as f64 => Err("value too large".into()),
        None => Ok(value as u64),
    }
}

/// `N%` or a byte count; for `size` and `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeOrPercent {
    Bytes(u64),
    Percent(u32),
}

pub fn parse_size_or_percent(s: &str, kb_base: u32) -> Result<SizeOrPercent, String> {
    let s = s.trim();
    let Some(num) = s.strip_suffix('%') else {
        return parse_size(s, kb_base).map(SizeOrPercent::Bytes);
    };
    let n = split_number(num)?;
    if n.fraction.is_some() {
        return Err(format!(
            "whole percentages only (fio would silently read this as {}%)",
            n.digits
        ));
    }
    if !n.suffix.is_empty() {
        return Err("a percentage is a plain number followed by %".into());
    }
    let p: u32 = n.digits.parse().map_err(|_| "percentage too large")?;
    if p > 100 {
        return Err(format!("{p}% is more than 100%"));
    }
    Ok(SizeOrPercent::Percent(p))
}

/// A duration in microseconds; a number without unit is in `default_unit_us`.
/// In an expression, a unit anywhere makes unit-less numbers microseconds (fio's rule).
pub fn parse_time_us(s: &str, default_unit_us: u64) -> Result<u64, String> {
    let s = s.trim();
    if s.starts_with('(') {
        let e = expr::eval(s, ExprUnits::Time)?;
        let scale = if e.units_given { 1 } else { default_unit_us };
        let exact = e.exact.and_then(|i| i.checked_mul(i128::from(scale)));
        return to_u64(exact, e.value * scale as f64);
    }
    let n = split_number(s)?;
    let mult = if n.suffix.is_empty() {
        default_unit_us
    } else {
        time_multiplier_us(n.suffix).ok_or_else(|| {
            format!(
                "'{}' is not a time unit (use us, ms, s, m, h or d)",
                n.suffix
            )
        })?
    };
    if let Some(frac) = n.fraction {
        return Err(time_fraction_error(n.digits, frac, n.suffix, mult));
    }
    let v: u64 = n
        .digits
        .parse()
        .map_err(|_| "number too large".to_string())?;
    v.checked_mul(mult)
        .ok_or_else(|| "duration too large".into())
}

/// Like [`fraction_error`], suggesting the value in ms or µs.
fn time_fraction_error(digits: &str, frac: &str, suffix: &str, mult: u64) -> String {
    let fio_reads = if digits.is_empty() { "0" } else { digits };
    let head = format!(
        "fractional values are not accepted (fio would silently read this as {fio_reads}{suffix})"
    );
    let exact = format!("{digits}.{frac}").parse::<f64>().unwrap_or(0.0) * mult as f64;
    if exact.fract() != 0.0 || exact >= 1e15 {
        return format!("{head}; use a smaller unit");
    }
    let us = exact as u64;
    if us.is_multiple_of(1000) {
        format!("{head}; write {}ms instead", us / 1000)
    } else {
        format!("{head}; write {us}us instead")
    }
}

/// An integer option: fio reads these like sizes, so `iodepth=1k` is 1024.
pub fn parse_u64(s: &str, kb_base: u32) -> Result<u64, String> {
    parse_size(s, kb_base)
}

pub fn parse_u32(s: &str, kb_base: u32) -> Result<u32, String> {
    let v = parse_u64(s, kb_base)?;
    u32::try_from(v).map_err(|_| format!("{v} is too large (at most {})", u32::MAX))
}

/// A whole number from 0 to `max`.
pub fn parse_small(v: &str, max: u8) -> Result<u8, String> {
    match v.trim().parse::<u8>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(format!("'{v}' is not a whole number from 0 to {max}")),
    }
}

/// A whole percentage, 0 to 100.
pub fn parse_percent(s: &str) -> Result<u32, String> {
    let p = parse_u32(s, 1024)?;
    if p > 100 {
        return Err(format!("{p} is more than 100 percent"));
    }
    Ok(p)
}

/// fio's booleans are numbers: 0 is false, anything else true.
pub fn parse_bool(s: &str) -> Result<bool, String> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(s.bytes().any(|b| b != b'0'));
    }
    Err("expected 0 or 1".into())
}

/// A decimal number (percentiles, distribution parameters).
pub fn parse_float(s: &str) -> Result<f64, String> {
    let s = s.trim();
    if s.starts_with('(') {
        return Ok(expr::eval(s, ExprUnits::Plain)?.value);
    }
    let ok = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'));
    match s.parse::<f64>() {
        Ok(f) if ok && f.is_finite() => Ok(f),
        _ => Err(format!("'{s}' is not a number")),
    }
}

/// Splits `lo-hi` or `lo:hi` (fio accepts both) at the first separator outside parentheses.
pub fn split_range(s: &str) -> Option<(&str, &str)> {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            '-' | ':' if depth == 0 && i > 0 => return Some((&s[..i], &s[i + 1..])),
            _ => {}
        }
    }
    None
}

/// `lo-hi` as two sizes, swapped into order as fio does.
pub fn parse_size_range(s: &str, kb_base: u32) -> Result<(u64, u64), String> {
    let (lo, hi) = split_range(s).ok_or("expected a range such as 4k-64k")?;
    let (lo, hi) = (parse_size(lo, kb_base)?, parse_size(hi, kb_base)?);
    Ok((lo.min(hi), lo.max(hi)))
}

/// fio's `read,write,trim` form: up to three comma-separated values, each may be empty
/// (keep what that direction had). When fewer than three are given, the directions not
/// named take the last value given (`bs=8k,32k` also sets trim to 32k); a trailing comma
/// (`bs=8k,32k,`) leaves the rest alone.
pub fn split_dirs(s: &str) -> Result<[Option<&str>; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err("at most three values: read,write,trim".into());
    }
    let mut out = [None; 3];
    for (i, p) in parts.iter().enumerate() {
        if !p.is_empty() {
            out[i] = Some(*p);
        }
    }
    if let Some(last) = parts.last().filter(|p| !p.is_empty()) {
        for slot in out.iter_mut().skip(parts.len()) {
            *slot = Some(*last);
        }
    }
    if out.iter().all(Option::is_none) {
        return Err("empty value".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kb_base_1024_matches_fio() {
        for (s, v) in [
            ("4k", 4096),
            ("4K", 4096),
            ("4kb", 4096),
            ("4KB", 4096),
            ("4ki", 4096),
            ("4Ki", 4096),
            ("4KiB", 4000),
            ("4kib", 4000),
            ("1m", 1 << 20),
            ("1MiB", 1_000_000),
            ("2g", 2 << 30),
            ("1t", 1 << 40),
            ("1p", 1 << 50),
            ("512", 512),
            ("512b", 512),
            ("0x1000", 4096),
            ("(4k*2)", 8192),
        ] {
            assert_eq!(parse_size(s, 1024), Ok(v), "{s}");
        }
    }

    #[test]
    fn kb_base_1000_matches_fio() {
        assert_eq!(parse_size("4k", 1000), Ok(4000));
        assert_eq!(parse_size("4KiB", 1000), Ok(4096));
        assert_eq!(parse_size("4ki", 1000), Ok(4000));
        assert_eq!(parse_size("1mib", 1000), Ok(1 << 20));
    }

    #[test]
    fn refuses_what_fio_misreads() {
        assert!(
            parse_size("4q", 1024)
                .unwrap_err()
                .contains("'q' is not a size unit")
        );
        let e = parse_size("1.5k", 1024).unwrap_err();
        assert!(e.contains("write 1536b instead"), "{e}");
        assert!(parse_size("-4k", 1024).is_err());
        assert!(parse_size("4 k", 1024).is_err());
        assert!(parse_size("", 1024).is_err());
        assert!(parse_size("k", 1024).is_err());
        assert!(parse_size("99999999999p", 1024).is_err());
        assert!(parse_size("0x10k", 1024).is_err());
    }

    #[test]
    fn times() {
        assert_eq!(parse_time_us("60", SECOND_US), Ok(60_000_000));
        assert_eq!(parse_time_us("2m", SECOND_US), Ok(120_000_000));
        assert_eq!(parse_time_us("1500ms", SECOND_US), Ok(1_500_000));
        assert_eq!(parse_time_us("1500MSEC", SECOND_US), Ok(1_500_000));
        assert_eq!(parse_time_us("10us", SECOND_US), Ok(10));
        assert_eq!(parse_time_us("1h", SECOND_US), Ok(3_600_000_000));
        assert_eq!(parse_time_us("1d", SECOND_US), Ok(86_400_000_000));
        assert_eq!(parse_time_us("(10*2)", SECOND_US), Ok(20_000_000));
        assert_eq!(parse_time_us("(1m+30s)", SECOND_US), Ok(90_000_000));
        assert_eq!(parse_time_us("(1s+500)", SECOND_US), Ok(1_000_500));
        let e = parse_time_us("1.5", SECOND_US).unwrap_err();
        assert!(e.contains("write 1500ms instead"), "{e}");
        assert!(parse_time_us("10sec", SECOND_US).is_err());
        assert!(parse_time_us("10min", SECOND_US).is_err());
    }

    #[test]
    fn percentages() {
        assert_eq!(
            parse_size_or_percent("10%", 1024),
            Ok(SizeOrPercent::Percent(10))
        );
        assert_eq!(
            parse_size_or_percent("10m", 1024),
            Ok(SizeOrPercent::Bytes(10 << 20))
        );
        assert!(parse_size_or_percent("150%", 1024).is_err());
        assert!(parse_size_or_percent("10.5%", 1024).is_err());
        assert!(parse_size_or_percent("10k%", 1024).is_err());
    }

    #[test]
    fn bools_and_floats() {
        assert_eq!(parse_bool("1"), Ok(true));
        assert_eq!(parse_bool("0"), Ok(false));
        assert_eq!(parse_bool("2"), Ok(true));
        assert!(parse_bool("yes").is_err());
        assert_eq!(parse_float("99.99"), Ok(99.99));
        assert!(parse_float("inf").is_err());
        assert!(parse_float("nan").is_err());
    }

    #[test]
    fn direction_lists_follow_fio() {
        assert_eq!(split_dirs("8k"), Ok([Some("8k"), Some("8k"), Some("8k")]));
        assert_eq!(
            split_dirs("8k,32k"),
            Ok([Some("8k"), Some("32k"), Some("32k")])
        );
        assert_eq!(split_dirs("8k,32k,"), Ok([Some("8k"), Some("32k"), None]));
        assert_eq!(split_dirs(",8k"), Ok([None, Some("8k"), Some("8k")]));
        assert_eq!(split_dirs("1m,,2m"), Ok([Some("1m"), None, Some("2m")]));
        assert!(split_dirs("1,2,3,4").is_err());
        assert!(split_dirs(",").is_err());
    }

    #[test]
    fn ranges() {
        assert_eq!(parse_size_range("1k-4k", 1024), Ok((1024, 4096)));
        assert_eq!(parse_size_range("4k:1k", 1024), Ok((1024, 4096)));
        assert!(parse_size_range("4k", 1024).is_err());
    }
}
