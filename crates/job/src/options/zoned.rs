//! fio's `zoned` and `zoned_abs` distributions: `zoned:60/10:30/20:10/70` sends 60% of the
//! random offsets to the first 10% of the region, 30% to the next 20%, and so on;
//! `zoned_abs:60/20M:40/80M` sizes the zones in bytes. Directions are separated by commas
//! as in `bssplit` (`read,write,trim`; the last given applies to the rest).

use crate::spec::Zone;
use crate::units::{parse_size, parse_u64, split_dirs};

/// fio's `ZONESPLIT_MAX`.
const MAX_ZONES: usize = 256;

/// The zones of each direction from the text after `zoned:`/`zoned_abs:`.
pub(super) fn parse(body: &str, absolute: bool, kb_base: u32) -> Result<[Vec<Zone>; 3], String> {
    let mut out: [Vec<Zone>; 3] = Default::default();
    if body.trim().is_empty() {
        return Ok(out); // fio: no zones, offsets uniform over the region
    }
    for (d, part) in split_dirs(body)?.into_iter().enumerate() {
        if let Some(part) = part {
            out[d] = one_direction(part, absolute, kb_base)?;
        }
    }
    Ok(out)
}

/// `access/size:access/size:…`, checked as fio checks it (`zone_split_ddir`): the access
/// shares add up to exactly 100, percentage sizes to at most 100, and zones without a
/// size share what the others leave.
fn one_direction(text: &str, absolute: bool, kb_base: u32) -> Result<Vec<Zone>, String> {
    let mut zones = Vec::new();
    let mut no_size = 0u64;
    for entry in text.split(':').map(str::trim) {
        if entry.is_empty() {
            break; // fio stops at the first empty entry
        }
        if zones.len() == MAX_ZONES {
            return Err(format!("more than {MAX_ZONES} zones in '{text}'"));
        }
        let (access, size) = entry.split_once('/').unwrap_or((entry, ""));
        let access = parse_u64(access, kb_base)?;
        if access > 100 {
            return Err(format!("zone access share {access}% is above 100%"));
        }
        let size = match size.trim() {
            "" => None,
            s if absolute => Some(parse_size(s, kb_base)?),
            s => Some(parse_u64(s, kb_base)?.min(100)).filter(|&p| p > 0),
        };
        no_size += u64::from(size.is_none());
        zones.push(Zone {
            access: access as u8,
            size: size.unwrap_or(u64::MAX),
        });
    }
    let access: u64 = zones.iter().map(|z| u64::from(z.access)).sum();
    let sized: u64 = zones
        .iter()
        .filter(|z| z.size != u64::MAX)
        .map(|z| z.size)
        .sum();
    if access > 100 || (!absolute && sized > 100) {
        return Err("zone percentages add to more than 100%".into());
    }
    if !zones.is_empty() && access < 100 {
        return Err(format!(
            "the zones' access shares must add up to 100% (got {access}%)"
        ));
    }
    let share = match (absolute, no_size) {
        (true, _) | (false, 0) => 0,
        (false, n) => (100 - sized) / n,
    };
    for z in &mut zones {
        if z.size == u64::MAX {
            z.size = share;
        }
    }
    Ok(zones)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn z(access: u8, size: u64) -> Zone {
        Zone { access, size }
    }

    #[test]
    fn fio_examples() {
        // fio's examples/rand-zones.fio: the last zone takes the rest of the region.
        let [r, w, t] = parse("50/5:30/15:20/", false, 1024).unwrap();
        assert_eq!(r, [z(50, 5), z(30, 15), z(20, 80)]);
        assert_eq!((&w, &t), (&r, &r));
        let [r, w, t] = parse("60/20M:40/80M", true, 1024).unwrap();
        assert_eq!(r, [z(60, 20 << 20), z(40, 80 << 20)]);
        assert_eq!((&w, &t), (&r, &r));
    }

    #[test]
    fn directions_split_on_commas_and_the_last_repeats() {
        let [r, w, t] = parse("100/10,50/50:50/50", false, 1024).unwrap();
        assert_eq!(r, [z(100, 10)]);
        assert_eq!(w, [z(50, 50), z(50, 50)]);
        assert_eq!(t, w);
    }

    #[test]
    fn refusals() {
        for (text, abs, msg) in [
            ("60/10:30/20", false, "add up to 100% (got 90%)"),
            ("60/60:40/60", false, "more than 100%"),
            ("60/10:50/20", false, "more than 100%"),
            ("160/10", false, "above 100%"),
            ("x/10", false, "x"),
            ("100/1q", true, "size unit"),
        ] {
            let err = parse(text, abs, 1024).unwrap_err();
            assert!(err.contains(msg), "{text}: {err}");
        }
    }
}
