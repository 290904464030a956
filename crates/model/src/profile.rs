//! The quick test sets a run can ask for, named as CrystalDiskMark 8 names its profiles;
//! stored with the run so every output can name it.

/// A set of quick tests, named as CrystalDiskMark 8 names its profiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// The set `quick` runs without `--profile`: CrystalDiskMark 6's default, its deep random
    /// test at one thread (RND4K Q32T1).
    Classic,
    /// CrystalDiskMark 8's and KDiskMark's "Default".
    Default,
    /// "Peak Performance": the deep-queue tests only.
    Peak,
    /// "Real World Performance": queue depth 1 only.
    Real,
    /// "NVMe SSD": SEQ128K Q32T1 in place of SEQ1M Q1T1.
    Nvme,
}

impl Profile {
    /// The names `--profile` takes.
    pub const NAMES: &'static str = "default, peak, real, nvme or classic";

    pub fn parse(s: &str) -> Result<Profile, String> {
        match s.to_ascii_lowercase().as_str() {
            "classic" => Ok(Profile::Classic),
            "default" => Ok(Profile::Default),
            "peak" => Ok(Profile::Peak),
            "real" => Ok(Profile::Real),
            "nvme" => Ok(Profile::Nvme),
            _ => Err(format!("'{s}' is no profile; use {}", Self::NAMES)),
        }
    }

    /// The name stored with the run and shown on the card.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Classic => "classic",
            Profile::Default => "default",
            Profile::Peak => "peak",
            Profile::Real => "real",
            Profile::Nvme => "nvme",
        }
    }

    /// CrystalDiskMark's own name for the set, for the card and the report.
    pub fn title(self) -> &'static str {
        match self {
            Profile::Classic => "classic (CrystalDiskMark 6)",
            Profile::Default => "Default",
            Profile::Peak => "Peak Performance",
            Profile::Real => "Real World Performance",
            Profile::Nvme => "NVMe SSD",
        }
    }

    /// The profile a quick run recorded in its global options; `None` for runs saved before
    /// profiles existed (they ran the classic set) and for other modes.
    pub fn of_options(global_options: &[(String, String)]) -> Option<Profile> {
        let (_, v) = global_options.iter().rev().find(|(k, _)| k == "profile")?;
        Profile::parse(v).ok()
    }
}
