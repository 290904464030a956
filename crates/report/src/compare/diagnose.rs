//! A diagnosis compared: one test per stage of the ladder, its measured figure (before and
//! after a change).

use storbench_model::diagnose::{Diagnosis, StageUnit};

use super::figures::{Better, MetricId, TestFigures, fig};

/// The ladder's stages that measured something, as comparable tests.
pub(super) fn ladder_figures(d: &Diagnosis) -> Vec<TestFigures> {
    d.stages
        .iter()
        .filter_map(|s| {
            let value = s.measured?;
            let figure = match s.unit {
                StageUnit::BytesPerSec => fig(
                    MetricId::BandwidthMb,
                    "MB/s",
                    Better::Higher,
                    Some(value / 1e6),
                ),
                StageUnit::Nanos => fig(MetricId::ClatP50, "µs", Better::Lower, Some(value / 1e3)),
                StageUnit::Percent => fig(MetricId::CpuPct, "%", Better::Lower, Some(value)),
            };
            Some(TestFigures {
                test: s.stage.label().to_string(),
                figures: vec![figure],
                seconds: Vec::new(),
            })
        })
        .collect()
}
