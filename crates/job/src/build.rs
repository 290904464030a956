//! The state one job accumulates while its options are applied in precedence order, and the
//! final step that turns it into a validated [`JobSpec`] with fio's fix-ups (the ones fio
//! applies after parsing, in `fixup_options`) and its checks of impossible combinations.

use crate::spec::{BlockSize, JobSpec, RandomDistribution, SizeSpec};

/// fio refuses a minimum rate above the rate cap of the same direction.
fn check_min_rates(s: &JobSpec) -> Result<(), String> {
    for (d, dir) in ["reads", "writes", "trims"].iter().enumerate() {
        if let (Some(min), Some(cap)) = (s.rate_min[d], s.rate[d])
            && min > cap
        {
            return Err(format!(
                "rate_min ({min} B/s) exceeds rate ({cap} B/s) for {dir}"
            ));
        }
        if let (Some(min), Some(cap)) = (s.rate_iops_min[d], s.rate_iops[d])
            && min > cap
        {
            return Err(format!(
                "rate_iops_min ({min}) exceeds rate_iops ({cap}) for {dir}"
            ));
        }
    }
    Ok(())
}

/// A job under construction. Cloning it is how a job inherits the `[global]` above it.
#[derive(Clone, Debug)]
pub(crate) struct JobBuilder {
    pub spec: JobSpec,
    /// `bs=` per direction.
    pub bs: [u64; 3],
    /// `bsrange=` per direction; wins over `bs` whatever the order, as in fio.
    pub bsrange: [Option<(u64, u64)>; 3],
    /// `bssplit=` per direction; wins over both.
    pub bssplit: [Option<Vec<(u64, u32)>>; 3],
    /// `refill_buffers` was given explicitly (fio then leaves it alone in its fix-ups).
    pub refill_set: bool,
    /// `randseed` was given (fio then turns `randrepeat` off).
    pub randseed_set: bool,
    /// `new_group` was given for this job.
    pub new_group: bool,
    /// `bwavgtime` / `iopsavgtime` were given (fio then logs at the smaller of the two).
    pub avgtime_set: [bool; 2],
    /// `verify=` was given (else `verify_pattern` implies fio's pattern-with-header).
    pub verify_set: bool,
    /// Verify options given that only mean something with `verify`.
    pub verify_given: Vec<&'static str>,
}

impl JobBuilder {
    pub fn new() -> Self {
        let mut spec = JobSpec::new("");
        // fio's default for its jobs; storbench's own presets leave no state file.
        spec.verify.state_save = true;
        JobBuilder {
            spec,
            bs: [4096; 3],
            bsrange: [None, None, None],
            bssplit: [None, None, None],
            refill_set: false,
            randseed_set: false,
            new_group: false,
            avgtime_set: [false; 2],
            verify_set: false,
            verify_given: Vec::new(),
        }
    }

    /// fio's post-parse fix-ups and checks. `Err` is the one-line reason; `warnings` gets
    /// what fio only warns about.
    pub fn finish(mut self, warnings: &mut Vec<String>) -> Result<JobSpec, String> {
        self.resolve_block_sizes();
        let s = &mut self.spec;
        if s.rw.kind.reads() {
            // Reading needs the file laid out in full first.
            s.overwrite = true;
        }
        if s.iodepth_batch_submit == 0 || s.iodepth_batch_submit > s.iodepth {
            s.iodepth_batch_submit = s.iodepth;
        }
        if s.iodepth_low == 0 || s.iodepth_low > s.iodepth {
            s.iodepth_low = s.iodepth;
        }
        if s.iodepth_batch_complete_max < s.iodepth_batch_complete_min {
            s.iodepth_batch_complete_max = s.iodepth_batch_complete_min;
        }
        let rated = s.rate.iter().any(Option::is_some);
        let iops_rated = s.rate_iops.iter().any(Option::is_some);
        if rated && iops_rated {
            return Err("rate and rate_iops are mutually exclusive".into());
        }
        if s.time_based && s.runtime.is_none() {
            warnings.push(format!(
                "job '{}': time_based needs a runtime; running until size is done (as fio does)",
                s.name
            ));
            s.time_based = false;
        }
        fix_buffers(s, self.refill_set);
        if s.random_distribution != RandomDistribution::Random {
            s.norandommap = true;
        }
        if s.blockalign.iter().any(Option::is_some) && !s.norandommap {
            warnings.push(format!(
                "job '{}': any use of blockalign= turns off randommap (as fio does)",
                s.name
            ));
            s.norandommap = true;
        }
        check_min_rates(s)?;
        if self.randseed_set {
            s.randrepeat = false;
        }
        if s.loops == 0 {
            s.loops = 1;
        }
        fix_percentiles(s);
        if !s.filenames.is_empty() {
            s.nrfiles = u32::try_from(s.filenames.len()).unwrap_or(u32::MAX);
        }
        check_sizes(s)?;
        fix_files(s)?;
        crate::options::fix_dedupe(s)?;
        crate::options::fix_zoning(s)?;
        s.engine_options.cmdprio.check()?;
        crate::options::fix_logs(s, self.avgtime_set)?;
        crate::options::fix_verify(s, self.verify_set, &self.verify_given)?;
        Ok(self.spec)
    }

    fn resolve_block_sizes(&mut self) {
        for d in 0..3 {
            self.spec.bs[d] = if let Some(split) = self.bssplit[d].take() {
                BlockSize::Split(split)
            } else if let Some((min, max)) = self.bsrange[d].filter(|(a, b)| a != b) {
                BlockSize::Range { min, max }
            } else if let Some((min, _)) = self.bsrange[d] {
                BlockSize::Fixed(min)
            } else {
                BlockSize::Fixed(self.bs[d])
            };
        }
    }
}

/// fio's file options that depend on others: `openfiles` at or above `nrfiles` is all of
/// them, `pre_read` clears `invalidate` (the cache it filled would be dropped) and reads
/// local files only, `fill_device` fills with writes alone.
fn fix_files(s: &mut JobSpec) -> Result<(), String> {
    if s.openfiles.is_some_and(|n| n >= s.nrfiles) {
        s.openfiles = None;
    }
    if s.openfiles.is_some() && s.verify.active() && s.verify.backlog > 0 {
        return Err(
            "openfiles below nrfiles with verify_backlog is not supported by storbench: \
             fio opens a checked block's file past openfiles while the writes go on"
                .into(),
        );
    }
    if s.pre_read {
        s.invalidate = false;
        if s.filenames
            .iter()
            .chain(&s.directories)
            .any(|t| t.protocol().is_some())
        {
            return Err("pre_read reads local files and devices only, not a URL target".into());
        }
    }
    let unsized_fill = s.fill_device && s.size.is_none() && s.filesize.is_none();
    if unsized_fill && s.rw.kind.reads() && s.rw.kind.writes() {
        return Err(format!(
            "fill_device without size= in a mixed job (rw={}) is refused: fio 3.33 fills the \
             file, then reads past its end (rw ends with EIO, randrw does no IO); give size=, \
             or fill with a write job and read in a job of its own",
            s.rw.kind.fio_name()
        ));
    }
    Ok(())
}

/// fio: 100% compressible buffers are simply zeroed; partly compressible ones are refilled
/// on every IO unless the job said otherwise.
fn fix_buffers(s: &mut JobSpec, refill_set: bool) {
    let b = &mut s.buffers;
    if b.compress_percentage == 100 {
        b.zero_buffers = true;
        b.compress_percentage = 0;
    } else if b.compress_percentage > 0 && !refill_set {
        b.refill_buffers = true;
    }
}

fn fix_percentiles(s: &mut JobSpec) {
    if s.disable_lat {
        s.lat_percentiles = false;
    }
    if s.disable_clat {
        s.clat_percentiles = false;
    }
    if s.disable_slat {
        s.slat_percentiles = false;
    }
}

fn check_sizes(s: &JobSpec) -> Result<(), String> {
    let min_bs = s.bs.iter().map(BlockSize::min).min().unwrap_or(0);
    if let Some(SizeSpec::Bytes(size)) = s.size
        && size < min_bs
    {
        return Err(format!(
            "size={size} is smaller than the smallest block size ({min_bs})"
        ));
    }
    if let Some((lo, _)) = s.filesize
        && lo < min_bs
    {
        return Err(format!(
            "filesize={lo} is smaller than the smallest block size ({min_bs})"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::RwKind;
    use std::time::Duration;

    fn finish(b: JobBuilder) -> (Result<JobSpec, String>, Vec<String>) {
        let mut w = Vec::new();
        (b.finish(&mut w), w)
    }

    #[test]
    fn defaults_finish_to_fio_defaults() {
        let (spec, w) = finish(JobBuilder::new());
        let spec = spec.unwrap();
        assert!(w.is_empty());
        assert_eq!(
            spec.bs,
            [
                BlockSize::Fixed(4096),
                BlockSize::Fixed(4096),
                BlockSize::Fixed(4096)
            ]
        );
        assert!(spec.overwrite, "default rw=read lays the file out");
        assert_eq!(spec.iodepth_batch_complete_max, 1);
    }

    #[test]
    fn block_size_precedence() {
        let mut b = JobBuilder::new();
        b.bs = [8192; 3];
        b.bsrange[1] = Some((4096, 65536));
        b.bsrange[2] = Some((512, 512));
        b.bssplit[0] = Some(vec![(4096, 50), (8192, 50)]);
        let spec = finish(b).0.unwrap();
        assert_eq!(spec.bs[0], BlockSize::Split(vec![(4096, 50), (8192, 50)]));
        assert_eq!(
            spec.bs[1],
            BlockSize::Range {
                min: 4096,
                max: 65536
            }
        );
        assert_eq!(spec.bs[2], BlockSize::Fixed(512));
    }

    #[test]
    fn impossible_combinations() {
        let mut b = JobBuilder::new();
        b.spec.rate[0] = Some(1 << 20);
        b.spec.rate_iops[1] = Some(100);
        assert_eq!(
            finish(b).0.unwrap_err(),
            "rate and rate_iops are mutually exclusive"
        );
        let mut b = JobBuilder::new();
        b.spec.size = Some(SizeSpec::Bytes(1024));
        assert!(
            finish(b)
                .0
                .unwrap_err()
                .contains("smaller than the smallest block size")
        );
    }

    #[test]
    fn time_based_without_runtime_warns_like_fio() {
        let mut b = JobBuilder::new();
        b.spec.name = "t".into();
        b.spec.time_based = true;
        let (spec, w) = finish(b);
        assert!(!spec.unwrap().time_based);
        assert_eq!(w.len(), 1);
        let mut b = JobBuilder::new();
        b.spec.time_based = true;
        b.spec.runtime = Some(Duration::from_secs(1));
        assert!(finish(b).0.unwrap().time_based);
    }

    #[test]
    fn fixups() {
        let mut b = JobBuilder::new();
        b.spec.rw.kind = RwKind::Write;
        b.spec.iodepth = 4;
        b.spec.iodepth_batch_submit = 16;
        b.spec.buffers.compress_percentage = 100;
        b.spec.random_distribution = RandomDistribution::Zipf(1.2);
        b.randseed_set = true;
        b.spec.loops = 0;
        b.spec.disable_clat = true;
        b.spec.filenames = vec![
            crate::target::Target::Path("a".into()),
            crate::target::Target::Path("b".into()),
        ];
        b.spec.nrfiles = 5;
        let s = finish(b).0.unwrap();
        assert!(!s.overwrite);
        assert_eq!(s.iodepth_batch_submit, 4);
        assert!(s.buffers.zero_buffers);
        assert_eq!(s.buffers.compress_percentage, 0);
        assert!(s.norandommap);
        assert!(!s.randrepeat);
        assert_eq!(s.loops, 1);
        assert!(!s.clat_percentiles);
        assert_eq!(s.nrfiles, 2);
    }

    #[test]
    fn openfiles_verifies_without_a_backlog_only() {
        let mut b = JobBuilder::new();
        b.spec.rw.kind = RwKind::Write;
        b.spec.nrfiles = 4;
        b.spec.openfiles = Some(2);
        b.spec.verify.kind = crate::spec::VerifyKind::Crc32c;
        assert_eq!(finish(b.clone()).0.unwrap().openfiles, Some(2));
        b.spec.verify.backlog = 8;
        let err = finish(b).0.unwrap_err();
        assert!(err.contains("verify_backlog"), "{err}");
    }

    #[test]
    fn verify_after_several_passes_of_io_size_needs_a_backlog() {
        let mut b = JobBuilder::new();
        b.spec.rw.kind = RwKind::Write;
        b.spec.size = Some(SizeSpec::Bytes(1 << 20));
        b.spec.io_size = Some(2 << 20);
        b.spec.verify.kind = crate::spec::VerifyKind::Crc32c;
        b.verify_set = true;
        let err = finish(b.clone()).0.unwrap_err();
        assert!(err.contains("io_size above size"), "{err}");
        let mut random = b.clone();
        random.spec.rw.kind = RwKind::RandWrite;
        random.spec.norandommap = true;
        assert!(finish(random).0.is_ok(), "one pass: no map ends it");
        b.spec.verify.backlog = 4;
        assert!(finish(b).0.is_ok());
    }
}
