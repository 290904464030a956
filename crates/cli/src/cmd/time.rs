//! Local-time display and parsing for `history` (libc's time zone rules, no extra crate).

use std::time::{SystemTime, UNIX_EPOCH};

/// `2026-11-29 20:43` in the machine's local time zone.
pub fn format_local(unix_ms: u64) -> String {
    let secs = (unix_ms / 1000) as libc::time_t;
    // SAFETY: localtime_r writes only into the tm we pass and reads the given time.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&secs, &mut tm).is_null() };
    if !ok {
        return format!("@{}", unix_ms / 1000);
    }
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min
    )
}

/// An age (`30m`, `12h`, `7d`, `2w`: that long before now) or a local date and time
/// (`2026-11-01`, `2026-11-01 18:30`, `2026-11-01T18:30:05`), as Unix ms.
pub fn parse_when(s: &str) -> anyhow::Result<u64> {
    let s = s.trim();
    if let Some(ms) = parse_age(s) {
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as u64;
        return Ok(now.saturating_sub(ms));
    }
    parse_local(s).ok_or_else(|| {
        anyhow::anyhow!(
            "'{s}' is not a time: use 2026-11-01, '2026-11-01 18:30' or an age like 7d, 12h"
        )
    })
}

fn parse_age(s: &str) -> Option<u64> {
    let unit = s.chars().last()?;
    let n: u64 = s[..s.len() - unit.len_utf8()].parse().ok()?;
    let mult = match unit {
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        'w' => 7 * 86_400,
        _ => return None,
    };
    Some(n * mult * 1000)
}

fn parse_local(s: &str) -> Option<u64> {
    let (date, time) = s.split_once([' ', 'T']).unwrap_or((s, "00:00"));
    let d: Vec<i32> = date
        .split('-')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let t: Vec<i32> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    if d.len() != 3 || !(2..=3).contains(&t.len()) {
        return None;
    }
    let valid = (1..=12).contains(&d[1])
        && (1..=31).contains(&d[2])
        && (0..24).contains(&t[0])
        && (0..60).contains(&t[1]);
    if !valid {
        return None;
    }
    // SAFETY: mktime reads and normalises the tm we own.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    tm.tm_year = d[0] - 1900;
    tm.tm_mon = d[1] - 1;
    tm.tm_mday = d[2];
    tm.tm_hour = t[0];
    tm.tm_min = t[1];
    tm.tm_sec = t.get(2).copied().unwrap_or(0);
    tm.tm_isdst = -1;
    let secs = unsafe { libc::mktime(&mut tm) };
    (secs >= 0).then(|| secs as u64 * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_dates() {
        assert_eq!(parse_age("30m"), Some(1_800_000));
        assert_eq!(parse_age("2w"), Some(1_209_600_000));
        assert_eq!(parse_age("7"), None);
        let a = parse_when("2026-11-01").unwrap();
        let b = parse_when("2026-11-01 18:30").unwrap();
        assert_eq!(b - a, (18 * 60 + 30) * 60_000);
        assert_eq!(format_local(b), "2026-11-01 18:30");
        assert!(parse_when("yesterday").is_err());
        assert!(parse_when("2026-13-01").is_err());
    }
}
