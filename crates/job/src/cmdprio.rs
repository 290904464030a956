//! fio's per-IO priorities of the io_uring and libaio engines (`cmdprio_percentage`,
//! `cmdprio_class`, `cmdprio`, `cmdprio_bssplit`), parsed once into typed values. A share of
//! the reads and writes (per block size with `cmdprio_bssplit`) carries an IO priority in
//! the IO itself (io_uring's `ioprio`, libaio's `aio_reqprio`); the rest go without one.

/// fio's `IOPRIO_CLASS_RT`, the class `cmdprio_class` defaults to.
pub const CLASS_RT: u8 = 1;

/// The kernel's IO priority value of `class` and `level` (`IOPRIO_PRIO_VALUE`).
pub const fn ioprio_value(class: u8, level: u8) -> u16 {
    ((class as u16) << 13) | level as u16
}

/// The options as given, reads and writes apart (trims carry no priority).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CmdPrio {
    pub percentage: [u32; 2],
    /// `cmdprio_class` (1 real-time, 2 best-effort, 3 idle); not given: real-time.
    pub class: [Option<u8>; 2],
    /// `cmdprio` (0 to 7); not given: 0.
    pub level: [Option<u8>; 2],
    /// `cmdprio_bssplit`, per direction, sorted by block size.
    pub bssplit: Option<[Vec<BsPrio>; 2]>,
}

/// One `cmdprio_bssplit` entry: `bs/perc` or `bs/perc/class/level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BsPrio {
    pub bs: u64,
    pub perc: u32,
    pub prio: Option<(u8, u8)>,
}

/// The priorities a direction's IOs of one block size (`None`: any) draw from: each
/// `(percent, ioprio)`, their percentages adding up to `total`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrioChoice {
    pub bs: Option<u64>,
    pub total: u32,
    pub prios: Vec<(u32, u16)>,
}

impl CmdPrio {
    /// Whether any IO gets a priority.
    pub fn active(&self) -> bool {
        self.percentage.iter().any(|&p| p > 0) || self.bssplit.is_some()
    }

    /// The priorities IOs of direction `d` (0 read, 1 write) may carry.
    pub fn choices(&self, d: usize) -> Vec<PrioChoice> {
        let implicit = ioprio_value(
            self.class[d].unwrap_or(CLASS_RT),
            self.level[d].unwrap_or(0),
        );
        let Some(split) = &self.bssplit else {
            return match self.percentage[d] {
                0 => Vec::new(),
                p => vec![PrioChoice {
                    bs: None,
                    total: p,
                    prios: vec![(p, implicit)],
                }],
            };
        };
        let mut out: Vec<PrioChoice> = Vec::new();
        for e in &split[d] {
            let prio = e.prio.map_or(implicit, |(c, l)| ioprio_value(c, l));
            match out.last_mut() {
                Some(c) if c.bs == Some(e.bs) => {
                    c.total += e.perc;
                    c.prios.push((e.perc, prio));
                }
                _ => out.push(PrioChoice {
                    bs: Some(e.bs),
                    total: e.perc,
                    prios: vec![(e.perc, prio)],
                }),
            }
        }
        out.retain(|c| c.total > 0);
        out
    }

    /// fio's checks (`fio_cmdprio_init`): the two ways are exclusive and a block size's
    /// percentages add up to at most 100.
    pub fn check(&self) -> Result<(), String> {
        if self.bssplit.is_some() && self.percentage.iter().any(|&p| p > 0) {
            return Err("cmdprio_percentage and cmdprio_bssplit are mutually exclusive".into());
        }
        for d in 0..2 {
            if let Some(c) = self.choices(d).iter().find(|c| c.total > 100) {
                return Err(format!(
                    "cmdprio_bssplit: the percentages for block size {} add up to {}, more \
                     than 100",
                    c.bs.unwrap_or(0),
                    c.total
                ));
            }
        }
        Ok(())
    }
}

/// `cmdprio_bssplit`'s value: per direction (`read,write[,trim]`, trims ignored) a list
/// of `bs/perc[/class/level]` entries separated by `:`.
pub(crate) fn parse_bssplit(text: &str, kb_base: u32) -> Result<[Vec<BsPrio>; 2], String> {
    let dirs = crate::units::split_dirs(text)?;
    let mut out: [Vec<BsPrio>; 2] = Default::default();
    for (d, list) in dirs.iter().take(2).enumerate() {
        let Some(list) = list else { continue };
        for entry in list.split(':').map(str::trim).filter(|e| !e.is_empty()) {
            out[d].push(parse_entry(entry, kb_base)?);
        }
        out[d].sort_by_key(|e| e.bs);
    }
    Ok(out)
}

fn parse_entry(entry: &str, kb_base: u32) -> Result<BsPrio, String> {
    let parts: Vec<&str> = entry.split('/').map(str::trim).collect();
    let (bs, perc, prio) = match parts.as_slice() {
        [bs, perc] => (bs, perc, None),
        [bs, perc, class, level] => (
            bs,
            perc,
            Some((
                crate::units::parse_small(class, 3)?,
                crate::units::parse_small(level, 7)?,
            )),
        ),
        _ => {
            return Err(format!(
                "cmdprio_bssplit entry '{entry}' is neither bs/percentage nor \
                 bs/percentage/class/level"
            ));
        }
    };
    if let Some((0, _)) = prio {
        return Err(format!(
            "cmdprio_bssplit entry '{entry}': class 0 is no class"
        ));
    }
    let bs = crate::units::parse_size(bs, kb_base)?;
    if bs == 0 {
        return Err(format!("cmdprio_bssplit entry '{entry}': block size 0"));
    }
    Ok(BsPrio {
        bs,
        perc: crate::units::parse_percent(perc)?,
        prio,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fios_example_formats() {
        let [r, w] = parse_bssplit("64k/100:1024k/0,1024k/0", 1024).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(
            w,
            [BsPrio {
                bs: 1 << 20,
                perc: 0,
                prio: None
            }]
        );
        let c = CmdPrio {
            class: [Some(1), Some(1)],
            level: [Some(0), Some(0)],
            bssplit: Some([r, w]),
            ..Default::default()
        };
        let reads = c.choices(0);
        assert_eq!(
            reads,
            [PrioChoice {
                bs: Some(65536),
                total: 100,
                prios: vec![(100, 1 << 13)]
            }]
        );
        assert!(c.choices(1).is_empty());

        let [r, _] = parse_bssplit("64k/25/1/1:64k/75/3/2:1024k/0,1024k/0", 1024).unwrap();
        let c = CmdPrio {
            bssplit: Some([r, Vec::new()]),
            ..Default::default()
        };
        assert_eq!(
            c.choices(0),
            [PrioChoice {
                bs: Some(65536),
                total: 100,
                prios: vec![(25, ioprio_value(1, 1)), (75, ioprio_value(3, 2))]
            }]
        );
    }

    #[test]
    fn percentage_takes_the_class_and_level_or_real_time_0() {
        let c = CmdPrio {
            percentage: [20, 0],
            class: [Some(3), None],
            ..Default::default()
        };
        assert_eq!(c.choices(0)[0].prios, [(20, ioprio_value(3, 0))]);
        assert!(c.choices(1).is_empty());
        let c = CmdPrio {
            percentage: [20, 20],
            ..Default::default()
        };
        assert_eq!(c.choices(1)[0].prios, [(20, ioprio_value(CLASS_RT, 0))]);
    }

    #[test]
    fn refusals() {
        for text in [
            "4k/50/1",
            "4k/x",
            "4k/50/0/1",
            "4k/50/4/0",
            "4k/50/1/8",
            "0/10",
        ] {
            assert!(parse_bssplit(text, 1024).is_err(), "{text}");
        }
        let c = CmdPrio {
            percentage: [10, 10],
            bssplit: Some(Default::default()),
            ..Default::default()
        };
        assert!(c.check().unwrap_err().contains("mutually exclusive"));
        let [r, w] = parse_bssplit("4k/60/1/0:4k/60/2/0", 1024).unwrap();
        let c = CmdPrio {
            bssplit: Some([r, w]),
            ..Default::default()
        };
        assert!(c.check().unwrap_err().contains("more than 100"));
    }
}
