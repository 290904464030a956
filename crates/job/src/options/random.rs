//! Random offsets: the map, the generator, the seed and the distribution.

use super::{Category as C, Kind as K, OptDef, flag, val};
use crate::build::JobBuilder;
use crate::spec::{RandomDistribution, RandomGenerator};
use crate::units::{parse_bool, parse_float, parse_percent, parse_u64, split_dirs};

const GENERATORS: &[(&str, &str)] = &[
    ("tausworthe", "Fast, good quality, period 2^88"),
    (
        "lfsr",
        "Never repeats an offset until all are used (single block size)",
    ),
    (
        "tausworthe64",
        "64-bit tausworthe for very large address spaces",
    ),
];

const DISTRIBUTIONS: &[(&str, &str)] = &[
    ("random", "Uniform"),
    ("zipf", "Zipf, ':theta' (default 1.1, must not be 1)"),
    ("pareto", "Pareto, ':h' with 0 < h < 1 (default 0.2)"),
    (
        "normal",
        "Normal, ':deviation' in percent, 0 to below 100 (default 0)",
    ),
    (
        "zoned",
        "Zones in percent of the region, ':access/size:…' per direction, commas between directions",
    ),
    (
        "zoned_abs",
        "Zones in bytes from the region's start, ':access/size:…' per direction",
    ),
];

pub(super) const DEFS: &[OptDef] = &[
    OptDef::new(
        "norandommap",
        K::Flag,
        C::Random,
        "",
        "Pick random offsets without tracking which blocks were done (repeats possible)",
        |b, v| {
            b.spec.norandommap = flag(v)?;
            Ok(())
        },
    ),
    OptDef::new(
        "randrepeat",
        K::Bool,
        C::Random,
        "1",
        "Seed the offset generator the same way every run (same block sequence)",
        |b, v| {
            b.spec.randrepeat = parse_bool(val(v)?)?;
            Ok(())
        },
    ),
    OptDef::new(
        "randseed",
        K::Int,
        C::Random,
        "0x89",
        "Seed of the offset generator (turns randrepeat off)",
        |b, v| {
            b.spec.randseed = parse_u64(val(v)?, b.spec.kb_base)?;
            b.randseed_set = true;
            Ok(())
        },
    ),
    OptDef::new(
        "random_generator",
        K::Choice(GENERATORS),
        C::Random,
        "tausworthe",
        "Generator of random offsets",
        |b, v| {
            b.spec.random_generator = match val(v)? {
                "tausworthe" => RandomGenerator::Tausworthe,
                "lfsr" => RandomGenerator::Lfsr,
                "tausworthe64" => RandomGenerator::Tausworthe64,
                other => {
                    return Err(format!(
                        "'{other}' is not one of tausworthe, lfsr, tausworthe64"
                    ));
                }
            };
            Ok(())
        },
    )
    .note(
        "Accepted for compatibility: storbench draws offsets with its own generators (a keyed \
         permutation for the random map, xoshiro256** otherwise), so the sequence differs from \
         fio's while the coverage rules are the same. Two exceptions follow fio draw for draw \
         on one file, with fio's taus88 generators, seeds and random map: a random mix whose \
         directions have different fixed block sizes (bs=4k,16k), where fio's map ends the \
         file early (about 12.7 MB of IO over 16 MiB), and random IO whose block size varies \
         (bsrange, bssplit), where fio's map shortens blocks that run into blocks already \
         done; a pass of loops= or io_size= repeats the first one's draws, as fio seeds its \
         generators again for each. Block sizes of a range or split are drawn by fio's \
         arithmetic from its generators and seeds in every job, a sequential IO's size \
         drawn again until it fits before the region's end, so sequential jobs with bsrange \
         or bssplit issue fio's IOs",
    ),
    OptDef::new(
        "random_distribution",
        K::Choice(DISTRIBUTIONS),
        C::Random,
        "random",
        "Distribution of random offsets; anything but random turns the random map off",
        apply_distribution,
    )
    .note(
        "zoned and zoned_abs as fio: 'zoned:60/10:30/20:10/70' sends 60% of the random \
         offsets to the first 10% of the region, and so on; 'zoned_abs:60/20m:40/100m' sizes \
         the zones in bytes (zones past the region are the job's error); per direction with \
         ',' (read,write,trim, the last repeating), as fio documents it (fio 3.33 itself \
         refuses a comma there). The ':center' parameter is not supported.",
    ),
    OptDef::new(
        "percentage_random",
        K::PercentDirs,
        C::Random,
        "100,100,100",
        "Percentage of random IOs in a random workload, read,write,trim (the rest sequential)",
        |b, v| {
            for (d, part) in split_dirs(val(v)?)?.into_iter().enumerate() {
                if let Some(p) = part {
                    b.spec.percentage_random[d] = parse_percent(p)?;
                }
            }
            Ok(())
        },
    ),
];

fn apply_distribution(b: &mut JobBuilder, v: Option<&str>) -> Result<(), String> {
    let v = val(v)?;
    let mut parts = v.splitn(3, ':');
    let word = parts.next().unwrap_or("").trim();
    if matches!(word, "zoned" | "zoned_abs") {
        let absolute = word == "zoned_abs";
        let body = v.split_once(':').map_or("", |(_, rest)| rest);
        b.spec.zones = super::zoned::parse(body, absolute, b.spec.kb_base)?;
        b.spec.random_distribution = if absolute {
            RandomDistribution::ZonedAbs
        } else {
            RandomDistribution::Zoned
        };
        return Ok(());
    }
    let param = parts.next().map(parse_float).transpose()?;
    if parts.next().is_some() {
        return Err("the ':center' parameter is not supported by storbench".into());
    }
    b.spec.random_distribution = match word {
        "random" if param.is_none() => RandomDistribution::Random,
        "random" => return Err("random takes no parameter".into()),
        "zipf" => {
            let theta = param.unwrap_or(1.1);
            if theta == 1.0 || theta <= 0.0 {
                return Err("zipf theta must be above 0 and not 1".into());
            }
            RandomDistribution::Zipf(theta)
        }
        "pareto" => {
            let h = param.unwrap_or(0.2);
            if h <= 0.0 || h >= 1.0 {
                return Err("pareto h must be between 0 and 1".into());
            }
            RandomDistribution::Pareto(h)
        }
        "normal" => {
            let dev = param.unwrap_or(0.0);
            if !(0.0..100.0).contains(&dev) {
                return Err("normal deviation must be from 0 to below 100".into());
            }
            RandomDistribution::Normal(dev)
        }
        other => {
            return Err(format!(
                "'{other}' is not one of random, zipf, pareto, normal, zoned, zoned_abs"
            ));
        }
    };
    Ok(())
}
