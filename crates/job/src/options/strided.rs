//! fio's strided zones on ordinary files (`zonemode=strided`): IO in a zone of
//! `zonerange` bytes until `zonesize` bytes were transferred, then a skip of `zoneskip`
//! bytes past the zone to the next one. fio's other mode, `zbd`, needs a zoned block
//! device and is refused with that reason.

use super::{Category as C, Kind as K, OptDef, val};
use crate::spec::{JobSpec, ZoneMode};
use crate::units::parse_size;

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "zonemode",
        K::Choice(MODES),
        C::Io,
        "none",
        "How IO moves over zones: none, or strided (zonesize bytes per zone, then zoneskip)",
        |b, v| {
            b.spec.zoning.mode = match val(v)? {
                "none" => ZoneMode::None,
                "strided" => ZoneMode::Strided,
                "zbd" => {
                    return Err("zonemode=zbd needs a zoned block device (SMR or ZNS \
                                hardware, with zone reports and write pointers), which \
                                storbench does not drive"
                        .into());
                }
                other => return Err(format!("'{other}' is not one of none, strided, zbd")),
            };
            Ok(())
        },
    )
    .note("`zbd` (zoned block devices, SMR/ZNS hardware) is refused. With `strided`, several files per job are refused (fio silently ignores the zones then)."),
    OptDef::new(
        "zonesize",
        K::Size,
        C::Io,
        "0",
        "Bytes to transfer in a zone before moving to the next (zonemode=strided)",
        |b, v| {
            b.spec.zoning.size = parse_size(val(v)?, b.spec.kb_base)?;
            Ok(())
        },
    ),
    OptDef::new(
        "zonerange",
        K::Size,
        C::Io,
        "0",
        "Size of a zone (0: zonesize)",
        |b, v| {
            b.spec.zoning.range = parse_size(val(v)?, b.spec.kb_base)?;
            Ok(())
        },
    ),
    OptDef::new(
        "zoneskip",
        K::Size,
        C::Io,
        "0",
        "Bytes skipped after a zone's zonesize bytes were transferred",
        |b, v| {
            b.spec.zoning.skip = parse_size(val(v)?, b.spec.kb_base)?;
            Ok(())
        },
    ),
];

const MODES: &[(&str, &str)] = &[
    ("none", "No zones"),
    (
        "strided",
        "zonesize bytes in each zone of zonerange bytes, then zoneskip bytes skipped",
    ),
    ("zbd", "Zoned block devices (refused: SMR/ZNS hardware)"),
];

/// fio 3.33's checks and defaults (`fixup_options`): a `zonesize` without
/// `zonemode=strided` (the default mode is `none`) and strided without a `zonesize` are
/// errors, `zonerange` defaults to `zonesize`.
pub(crate) fn fix_zoning(s: &mut JobSpec) -> Result<(), String> {
    let z = &mut s.zoning;
    match (z.mode, z.size) {
        (ZoneMode::None, 0) => return Ok(()),
        (ZoneMode::None, _) => {
            return Err(
                "zonesize needs zonemode=strided (zonemode=none and zonesize conflict, as \
                 in fio)"
                    .into(),
            );
        }
        (ZoneMode::Strided, 0) => return Err("zonemode=strided needs zonesize".into()),
        (ZoneMode::Strided, _) => {}
    }
    if z.range == 0 {
        z.range = z.size;
    }
    let bs = s.bs.iter().map(|b| b.max()).max().unwrap_or(0);
    if z.range < bs {
        return Err(format!(
            "zonerange={} is smaller than the largest block size ({bs})",
            z.range
        ));
    }
    if s.nrfiles > 1 {
        return Err(format!(
            "zonemode=strided works on one file per job, not {}",
            s.nrfiles
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::build::JobBuilder;
    use crate::spec::ZoneMode;

    fn finish(opts: &[(&str, &str)]) -> Result<crate::spec::JobSpec, String> {
        let mut b = JobBuilder::new();
        for (name, v) in opts {
            let def = super::super::find(name).expect(name);
            (def.apply)(&mut b, Some(v))?;
        }
        b.finish(&mut Vec::new())
    }

    #[test]
    fn strided_takes_zonesize_as_the_range_by_default() {
        let s = finish(&[
            ("zonemode", "strided"),
            ("zonesize", "256m"),
            ("zoneskip", "2g"),
        ])
        .unwrap();
        assert_eq!(s.zoning.mode, ZoneMode::Strided);
        assert_eq!(s.zoning.range, 256 << 20);
        assert_eq!(s.zoning.skip, 2 << 30);
        let s = finish(&[]).unwrap();
        assert_eq!(s.zoning.mode, ZoneMode::None);
    }

    #[test]
    fn fios_refusals() {
        for (opts, msg) in [
            (&[("zonemode", "strided")][..], "needs zonesize"),
            (&[("zonemode", "none"), ("zonesize", "1m")][..], "conflict"),
            (&[("zonesize", "1m")][..], "needs zonemode=strided"),
            (&[("zonemode", "zbd")][..], "zoned block device"),
            (
                &[("zonemode", "strided"), ("zonesize", "1k"), ("bs", "4k")][..],
                "smaller than",
            ),
            (
                &[
                    ("zonemode", "strided"),
                    ("zonesize", "1m"),
                    ("nrfiles", "2"),
                ][..],
                "one file",
            ),
        ] {
            let err = finish(opts).unwrap_err();
            assert!(err.contains(msg), "{opts:?}: {err}");
        }
    }
}
