//! fio's number and unit formatting, reproduced so our figures read exactly like fio's.
//!
//! `num2str` follows fio's rules: keep at most `maxlen` digits (counting the decimal point),
//! divide by 1000 or 1024 until the integer part fits, then fill the remaining room with
//! decimals of the last remainder, carrying into the integer part when they round up.

/// What a formatted quantity counts (fio's `N2S_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    None,
    PerSec,
    Byte,
    Bit,
    BytePerSec,
    BitPerSec,
}

impl Unit {
    fn suffix(self) -> &'static str {
        match self {
            Unit::None => "",
            Unit::PerSec => "/s",
            Unit::Byte => "B",
            Unit::Bit => "bit",
            Unit::BytePerSec => "B/s",
            Unit::BitPerSec => "bit/s",
        }
    }

    /// Bandwidth unit for a job's `unit_base` setting (1 = bits, anything else = bytes).
    pub fn rate(unit_base: u32) -> Unit {
        if unit_base == 1 {
            Unit::BitPerSec
        } else {
            Unit::BytePerSec
        }
    }
}

const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

fn digits(n: u64) -> i64 {
    n.checked_ilog10().map_or(1, |d| d as i64 + 1)
}

/// fio's `num2str`: `num` counted in units of `base` (1, or 1024 for KiB), shown with at most
/// `maxlen` characters of number, with SI (`pow2 == false`) or IEC prefixes.
pub fn num2str(num: u64, maxlen: u32, base: u64, pow2: bool, unit: Unit) -> String {
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let prefixes = if pow2 { &IEC } else { &SI };
    let maxlen = maxlen as i64;
    let mut post = 0usize;
    let mut base = base;
    while base > 1 {
        base /= thousand;
        post += 1;
    }
    let mut num = match unit {
        Unit::Bit | Unit::BitPerSec => num.wrapping_mul(8),
        _ => num,
    };
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post < SI.len() {
        if digits(num) <= maxlen {
            break;
        }
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post += 1;
    }
    if post >= SI.len() {
        post = 0;
    }
    let Some(modulo) = modulo else {
        return format!("{num}{}{}", prefixes[post], unit.suffix());
    };
    let room = maxlen - digits(num);
    if room <= 1 {
        if carry {
            num += 1;
        }
        return format!("{num}{}{}", prefixes[post], unit.suffix());
    }
    let frac = format!(
        "{:.*}",
        (room - 1) as usize,
        modulo as f64 / thousand as f64
    );
    if frac.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{}", &frac[2..], prefixes[post], unit.suffix())
}

/// Whether a job's kb_base makes base-2 units primary (fio: kb_base is a power of two).
pub fn is_pow2(kb_base: u32) -> bool {
    kb_base.is_power_of_two()
}

/// A latency summary scaled the way fio's `display_lat` scales it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScaledLat {
    pub unit: &'static str,
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub dev: f64,
}

/// fio's rule for slat/clat/lat lines: msec when min > 2 ms, max > ~100 ms and stdev > 1 ms;
/// else usec when min > 2 µs, max > ~100 µs and stdev > 1 µs; else nsec. min/max truncate.
pub fn scale_lat(min: u64, max: u64, mean: f64, dev: f64) -> ScaledLat {
    let scaled = |div: u64, unit| ScaledLat {
        unit,
        min: min / div,
        max: max / div,
        mean: mean / div as f64,
        dev: dev / div as f64,
    };
    if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        scaled(1_000_000, "msec")
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        scaled(1000, "usec")
    } else {
        scaled(1, "nsec")
    }
}

/// fio's rule for percentile blocks, from the smallest and largest value shown: returns the
/// unit name and how many times to divide by 1000 (rounding up each time).
pub fn percentile_scale(minv: u64, maxv: u64) -> (&'static str, u32) {
    if minv > 2_000_000 && maxv > 99_999_999 {
        ("msec", 2)
    } else if minv > 2000 && maxv > 99_999 {
        ("usec", 1)
    } else {
        ("nsec", 0)
    }
}

/// A value scaled down `times` times by 1000, rounding up, as fio prints percentiles.
pub fn round_up_thousands(mut v: u64, times: u32) -> u64 {
    for _ in 0..times {
        v = v.div_ceil(1000);
    }
    v
}

/// Digits after the decimal point needed to print every percentile of a list (fio counts
/// them as written in `percentile_list`; we count the shortest exact form of each value).
pub fn percentile_precision(list: &[f64]) -> usize {
    list.iter()
        .map(|p| {
            let s = format!("{p}");
            s.split_once('.').map_or(0, |(_, f)| f.len())
        })
        .max()
        .unwrap_or(0)
        .min(6)
}

/// A share in percent, never below `floor` when the count is not zero (fio shows tiny
/// non-zero shares as the smallest printable value).
pub fn share(count: u64, total: u64, floor: f64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let p = count as f64 / total as f64 * 100.0;
    if p < floor && count > 0 { floor } else { p }
}

/// `ctime`-style date (`Sun Nov 29 19:16:27 2026`) of a Unix time in milliseconds, in the
/// given offset from UTC or, when `None`, in the machine's local time zone.
pub fn ctime(unix_ms: u64, utc_offset_secs: Option<i32>) -> String {
    let secs = (unix_ms / 1000) as i64;
    let offset = utc_offset_secs.map_or_else(|| local_offset(secs), i64::from);
    let t = secs + offset;
    let days = t.div_euclid(86_400);
    let sod = t.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    const WDAY: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {}{:3} {:02}:{:02}:{:02} {}",
        WDAY[days.rem_euclid(7) as usize],
        MON[(m - 1) as usize],
        d,
        sod / 3600,
        sod % 3600 / 60,
        sod % 60,
        y
    )
}

/// The local time zone's offset from UTC at `secs`, from the C library (0 if unknown).
fn local_offset(secs: i64) -> i64 {
    let t = secs as libc::time_t;
    // SAFETY: localtime_r only writes the `tm` we own and reads `t`.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            0
        } else {
            tm.tm_gmtoff
        }
    }
}

/// Gregorian (year, month, day) of a day count since 1970-01-01 (Howard Hinnant's method).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each case is a figure fio 3.33 printed in this project's reference runs.
    #[test]
    fn num2str_matches_real_fio_output() {
        let cases: &[(u64, u32, u64, bool, Unit, &str)] = &[
            (14_105, 4, 1, false, Unit::None, "14.1k"),
            (1_571_432, 4, 1, false, Unit::None, "1571k"),
            (72_150, 4, 1, false, Unit::None, "72.1k"),
            (57_806_000, 4, 1, true, Unit::BytePerSec, "55.1MiB/s"),
            (57_806_000, 4, 1, false, Unit::BytePerSec, "57.8MB/s"),
            (4_194_304, 4, 1, true, Unit::Byte, "4096KiB"),
            (4_194_304, 4, 1, false, Unit::Byte, "4194kB"),
            (4096, 4, 1, true, Unit::Byte, "4096B"),
            (1_048_576, 4, 1, true, Unit::Byte, "1024KiB"),
            (10_942_000, 6, 1, false, Unit::None, "10942k"),
            (4_068_100, 6, 1, false, Unit::None, "4068.1k"),
            (59_608, 6, 1, false, Unit::None, "59608"),
            (43_240_247, 4, 1, true, Unit::BytePerSec, "41.2MiB/s"),
            (43_240_247, 4, 1, false, Unit::BytePerSec, "43.2MB/s"),
            (10_556, 4, 1, false, Unit::None, "10.6k"),
            (0, 4, 1, true, Unit::BytePerSec, "0B/s"),
        ];
        for &(n, len, base, pow2, unit, want) in cases {
            assert_eq!(num2str(n, len, base, pow2, unit), want, "num2str({n})");
        }
    }

    #[test]
    fn num2str_carries_rounding() {
        // 9999.6 Ki: no room for decimals, the carry rounds up past maxlen, as in fio.
        assert_eq!(num2str(10_239_590, 4, 1, true, Unit::Byte), "10000KiB");
        assert_eq!(num2str(1_999_999, 4, 1, false, Unit::None), "2000k");
        // Decimals that round up to 1.0 bump the integer: 19.996k -> 20.0k.
        assert_eq!(num2str(19_996, 4, 1, false, Unit::None), "20.0k");
        // KiB input with base 1024 starts one prefix up.
        assert_eq!(
            num2str(46_387, 4, 1024, true, Unit::BytePerSec),
            "45.3MiB/s"
        );
    }

    #[test]
    fn latency_scaling_follows_fio() {
        let s = scale_lat(30_000, 5_427_000, 49_720.0, 51_540.0);
        assert_eq!((s.unit, s.min, s.max), ("usec", 30, 5427));
        // stdev below 1 µs keeps nsec even with a large max.
        assert_eq!(scale_lat(20, 10_942_000, 34.5, 999.0).unit, "nsec");
        assert_eq!(scale_lat(3_000_000, 200_000_000, 9e6, 2e6).unit, "msec");
        assert_eq!(percentile_scale(35_000, 2_073_000), ("usec", 1));
        assert_eq!(percentile_scale(23, 2352), ("nsec", 0));
        assert_eq!(round_up_thousands(2_072_001, 1), 2073);
    }

    #[test]
    fn precision_and_shares() {
        assert_eq!(
            percentile_precision(&storbench_model::result::DEFAULT_PERCENTILES),
            2
        );
        assert_eq!(percentile_precision(&[50.0, 99.0]), 0);
        assert_eq!(share(1, 100_000, 0.01), 0.01);
        assert_eq!(share(0, 100, 0.01), 0.0);
        assert_eq!(share(5, 0, 0.1), 0.0);
    }

    #[test]
    fn ctime_formats_like_c() {
        // 2026-11-29 19:16:27 UTC.
        assert_eq!(
            ctime(1_795_979_787_000, Some(0)),
            "Sun Nov 29 19:16:27 2026"
        );
        assert_eq!(ctime(0, Some(3600)), "Thu Jan  1 01:00:00 1970");
        assert_eq!(ctime(951_782_400_000, Some(0)), "Tue Feb 29 00:00:00 2000");
    }
}
