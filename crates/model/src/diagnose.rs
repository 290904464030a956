//! `storbench diagnose`: the ladder of stages a read travels (round trip, the path from the
//! server's memory, the storage, the client, the server, QD1 latency), each with the
//! ceiling it meets and the figure measured, and the stage named as the limit
//! (docs/diagnose.md).

use serde::{Deserialize, Serialize};

/// The stage named as the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LimitStage {
    Link,
    Storage,
    Server,
    Client,
    Latency,
    None,
}

impl LimitStage {
    pub fn name(self) -> &'static str {
        match self {
            LimitStage::Link => "link",
            LimitStage::Storage => "storage",
            LimitStage::Server => "server",
            LimitStage::Client => "client",
            LimitStage::Latency => "latency",
            LimitStage::None => "none",
        }
    }
}

/// The verdict: which stage bounds the figures, in words with the figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    pub stage: LimitStage,
    pub message: String,
}

/// One rung of the ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StageKind {
    RoundTrip,
    PathRead,
    PathWrite,
    Storage,
    Client,
    Server,
    Qd1,
}

impl StageKind {
    /// The name the ladder shows.
    pub fn label(self) -> &'static str {
        match self {
            StageKind::RoundTrip => "round trip",
            StageKind::PathRead => "path read",
            StageKind::PathWrite => "path write",
            StageKind::Storage => "storage read",
            StageKind::Client => "client",
            StageKind::Server => "server",
            StageKind::Qd1 => "QD1 latency",
        }
    }
}

/// What a stage's figures count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StageUnit {
    /// Bytes per second.
    BytesPerSec,
    /// Nanoseconds.
    Nanos,
    /// Percent (a CPU's or a NIC's share used).
    Percent,
}

/// One stage: what it reached, the ceiling it is set against, and why it was skipped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    pub stage: StageKind,
    pub unit: StageUnit,
    /// The figure measured; None when the stage was skipped or had nothing to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<f64>,
    /// The ceiling the figure is set against, in the same unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<f64>,
    /// What the ceiling is ("1 Gbit/s link", "round trip", "one CPU").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ceiling_what: String,
    /// The figures behind the measurement, short.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// Why the stage did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl Stage {
    pub fn new(stage: StageKind, unit: StageUnit) -> Stage {
        Stage {
            stage,
            unit,
            measured: None,
            ceiling: None,
            ceiling_what: String::new(),
            note: String::new(),
            skipped: None,
        }
    }

    /// How much of the ceiling the measurement uses, in percent: measured / ceiling for
    /// rates and CPU shares; for a latency, the round trip's share of it (ceiling /
    /// measured), since the round trip is its floor.
    pub fn share_percent(&self) -> Option<f64> {
        match (self.measured, self.ceiling, self.unit) {
            (Some(m), Some(c), StageUnit::Nanos) if m > 0.0 => Some(c / m * 100.0),
            (Some(m), Some(c), _) if c > 0.0 && self.unit != StageUnit::Nanos => {
                Some(m / c * 100.0)
            }
            _ => None,
        }
    }
}

/// A diagnosis: the ladder, then the limit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub limit: Limit,
    pub stages: Vec<Stage>,
    /// What else the user should know (a cache that could not be ruled out, stages
    /// skipped and why), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remarks: Vec<String>,
}
