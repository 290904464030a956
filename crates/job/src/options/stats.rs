//! What is measured and how it is reported.

use super::{Category as C, Kind as K, OptDef, flag, val};
use crate::spec::UnifiedRw;
use crate::units::{parse_bool, parse_float, parse_u32, parse_u64};

/// fio keeps at most this many percentiles.
const MAX_PERCENTILES: usize = 20;

const UNIFIED: &[(&str, &str)] = &[
    ("none", "Report reads, writes and trims apart"),
    ("mixed", "Report them summed as one 'mixed' direction"),
    ("both", "Report them apart and summed"),
    ("0", "Same as none"),
    ("1", "Same as mixed"),
    ("2", "Same as both"),
];

const KB_BASE: &[(&str, &str)] = &[
    (
        "1024",
        "k, m, g mean powers of 1024; KiB, MiB mean powers of 1000 (fio's inverted compatibility rule)",
    ),
    (
        "1000",
        "k, m, g mean powers of 1000; KiB, MiB mean powers of 1024",
    ),
];

const UNIT_BASE: &[(&str, &str)] = &[("0", "Automatic: bytes"), ("8", "Bytes"), ("1", "Bits")];

fn millis(v: Option<&str>) -> Result<u64, String> {
    let n = parse_u64(val(v)?, 1024)?;
    if n == 0 {
        return Err("must be at least 1 ms".into());
    }
    Ok(n)
}

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "group_reporting",
        K::Flag,
        C::Reporting,
        "",
        "Report each reporting group as a whole instead of each job clone",
        |b, v| {
            b.spec.group_reporting = flag(v)?;
            Ok(())
        },
    ),
    OptDef::new(
        "gtod_reduce",
        K::Bool,
        C::Reporting,
        "0",
        "Measure as little as possible: no latencies, no bandwidth samples, no percentiles",
        |b, v| {
            if parse_bool(val(v)?)? {
                let s = &mut b.spec;
                s.disable_lat = true;
                s.disable_clat = true;
                s.disable_slat = true;
                s.disable_bw = true;
                s.clat_percentiles = false;
                s.lat_percentiles = false;
                s.slat_percentiles = false;
            }
            Ok(())
        },
    )
    .note("Sets the disable_* options as fio does; storbench's clock is cheap, so there is no timer thread to reduce."),
    OptDef::new(
        "disable_lat",
        K::Bool,
        C::Reporting,
        "0",
        "Do not measure total latency",
        |b, v| {
            b.spec.disable_lat = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "disable_clat",
        K::Bool,
        C::Reporting,
        "0",
        "Do not measure completion latency",
        |b, v| {
            b.spec.disable_clat = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "disable_slat",
        K::Bool,
        C::Reporting,
        "0",
        "Do not measure submission latency",
        |b, v| {
            b.spec.disable_slat = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "disable_bw_measurement",
        K::Bool,
        C::Reporting,
        "0",
        "Do not sample bandwidth and IOPS over time",
        |b, v| {
            b.spec.disable_bw = parse_bool(val(v)?)?;
            Ok(())
        },
    )
    .aliases(&["disable_bw"]),
    OptDef::new(
        "unified_rw_reporting",
        K::Choice(UNIFIED),
        C::Reporting,
        "none",
        "Report directions apart, summed, or both",
        |b, v| {
            b.spec.unified_rw = match val(v)? {
                "none" | "0" => UnifiedRw::None,
                "mixed" | "1" => UnifiedRw::Mixed,
                "both" | "2" => UnifiedRw::Both,
                other => return Err(format!("'{other}' is not one of none, mixed, both")),
            };
            Ok(())
        },
    ),
    OptDef::new(
        "percentile_list",
        K::FloatList,
        C::Reporting,
        "1:5:10:20:30:40:50:60:70:80:90:95:99:99.5:99.9:99.95:99.99",
        "Latency percentiles to report, ':'-separated, at most 20, each above 0 and at most 100",
        |b, v| {
            let mut list = Vec::new();
            for p in val(v)?.split(':') {
                let f = parse_float(p)?;
                if !(f > 0.0 && f <= 100.0) {
                    return Err(format!("percentile {f} is not above 0 and at most 100"));
                }
                list.push(f);
            }
            if list.len() > MAX_PERCENTILES {
                return Err(format!(
                    "{} percentiles given, at most {MAX_PERCENTILES}",
                    list.len()
                ));
            }
            b.spec.percentile_list = list;
            Ok(())
        },
    )
    .note("More than 20 values, or 0, are refused; fio prints an error for 21 values but runs anyway."),
    OptDef::new(
        "clat_percentiles",
        K::Bool,
        C::Reporting,
        "1",
        "Report completion latency percentiles",
        |b, v| {
            b.spec.clat_percentiles = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "lat_percentiles",
        K::Bool,
        C::Reporting,
        "0",
        "Report total latency percentiles",
        |b, v| {
            b.spec.lat_percentiles = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "slat_percentiles",
        K::Bool,
        C::Reporting,
        "0",
        "Report submission latency percentiles",
        |b, v| {
            b.spec.slat_percentiles = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "significant_figures",
        K::Int,
        C::Reporting,
        "4",
        "Significant figures in the normal output, 1 to 10",
        |b, v| {
            let n = parse_u32(val(v)?, 1024)?;
            if !(1..=10).contains(&n) {
                return Err("must be from 1 to 10".into());
            }
            b.spec.significant_figures = n;
            Ok(())
        },
    ),
    OptDef::new(
        "bwavgtime",
        K::Millis,
        C::Reporting,
        "500",
        "Window in ms over which bandwidth samples are averaged",
        |b, v| {
            b.spec.bwavgtime_ms = millis(v)?;
            b.avgtime_set[0] = true;
            Ok(())
        },
    ),
    OptDef::new(
        "iopsavgtime",
        K::Millis,
        C::Reporting,
        "500",
        "Window in ms over which IOPS samples are averaged",
        |b, v| {
            b.spec.iopsavgtime_ms = millis(v)?;
            b.avgtime_set[1] = true;
            Ok(())
        },
    ),
    OptDef::new(
        "kb_base",
        K::Choice(KB_BASE),
        C::Reporting,
        "1024",
        "How unit prefixes of sizes are read and printed",
        |b, v| {
            b.spec.kb_base = match val(v)? {
                "1024" => 1024,
                "1000" => 1000,
                other => return Err(format!("'{other}' is not one of 1024, 1000")),
            };
            Ok(())
        },
    )
    .note("Applied before the other options of the same section, as in fio."),
    OptDef::new(
        "unit_base",
        K::Choice(UNIT_BASE),
        C::Reporting,
        "0",
        "Report bandwidth in bytes or bits",
        |b, v| {
            b.spec.unit_base = match val(v)? {
                "0" | "8" => 8,
                "1" => 1,
                other => return Err(format!("'{other}' is not one of 0, 8, 1")),
            };
            Ok(())
        },
    ),
];
