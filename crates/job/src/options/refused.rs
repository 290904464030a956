//! fio 3.33 names storbench refuses as "not supported" rather than "unknown", each in a
//! group with the reason docs/fio-compat.md gives: every general option and alias of
//! `fio --cmdhelp=all` that the option table does not implement, the options of fio's
//! other engines (and of its tiobench and act profiles), and fio's engines that storbench
//! does not have. One table per kind: a name is refused because it stands in a group, so
//! it cannot be refused without a reason.

/// Groups of names storbench refuses, each with its reason.
#[derive(Clone, Copy, Debug)]
pub struct Refused(&'static [(&'static str, &'static [&'static str])]);

impl Refused {
    /// Whether `name` is refused.
    pub fn contains(&self, name: &str) -> bool {
        self.names().any(|n| n == name)
    }

    /// Every refused name, group after group.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        self.0.iter().flat_map(|(_, names)| names.iter().copied())
    }

    /// The groups: (reason, names).
    pub fn groups(&self) -> &'static [(&'static str, &'static [&'static str])] {
        self.0
    }
}

/// fio options and aliases (general, then engine-specific) that storbench does not
/// implement, by reason.
pub const UNSUPPORTED: Refused = Refused(&[
    (
        "Options of fio engines storbench does not have (below): they mean nothing without \
         their engine.",
        &[
            "volume",
            "brick",
            "single-instance",
            "skip_bad",
            "readfua",
            "writefua",
            "sg_write_mode",
            "stream_id",
            "cmd_type",
            "bindname",
            "verb",
            "clustername",
            "pool",
            "clientname",
            "conf",
            "busy_poll",
            "touch_objects",
            "rbdname",
        ],
    ),
    (
        "Features of engines storbench has that its engines do not implement: io_uring's `nonvectored`/`force_async`, libaio's \
         `userspace_reap`, pvsync2's `hipri_percentage`, mmap's transparent huge pages, \
         filestat's `stat_type` (storbench's filestat calls stat), libiscsi's `initiator` \
         (storbench's initiator names itself).",
        &[
            "nonvectored",
            "force_async",
            "userspace_reap",
            "hipri_percentage",
            "thp",
            "stat_type",
            "initiator",
        ],
    ),
    (
        "Process priority, scheduling and placement: they need privileges or change the \
         host's state (cgroups, the I/O scheduler, another user), which a benchmark should \
         not do behind the user's back; use `ionice` or `systemd-run` around \
         storbench.",
        &[
            "ioscheduler",
            "cgroup",
            "cgroup_nodelete",
            "cgroup_weight",
            "uid",
            "gid",
            "gtod_cpu",
            "clocksource",
            "write_hint",
        ],
    ),
    (
        "Recording and replaying IO traces (fio's iolog and blktrace): not implemented; \
         storbench's per-IO logs are fio's log files, not replayable traces.",
        &[
            "write_iolog",
            "read_iolog",
            "read_iolog_chunked",
            "replay_no_stall",
            "replay_redirect",
            "replay_scale",
            "replay_align",
            "replay_time_scale",
            "replay_skip",
            "merge_blktrace_file",
            "merge_blktrace_scalars",
            "merge_blktrace_iters",
        ],
    ),
    (
        "Zoned block devices (`zonemode=zbd`): they need SMR or ZNS hardware, with zone \
         reports, resets and write pointers.",
        &[
            "zonecapacity",
            "read_beyond_wp",
            "max_open_zones",
            "job_max_open_zones",
            "ignore_zone_limits",
            "zone_reset_threshold",
            "zone_reset_frequency",
        ],
    ),
    (
        "Where IO buffers live: storbench allocates one page-aligned arena per worker \
         (registered with io_uring), so fio's memory types, huge pages and alignments are \
         not offered; `lockmem` would pin memory the run's memory check did not count.",
        &["mem", "iomem", "mem_align", "hugepage-size", "lockmem"],
    ),
    (
        "Ordering the IOs of several jobs on the same blocks (fio's file locks, \
         `serialize_overlap`) and `rw_sequencer`: not implemented.",
        &["lockfile", "serialize_overlap", "rw_sequencer"],
    ),
    (
        "File lay-out and life cycle variants: not implemented; storbench lays files out \
         once before the run, checked against the free space, and removes only what it \
         created.",
        &[
            "create_fsync",
            "file_append",
            "opendir",
            "unlink_each_loop",
            "allow_file_create",
            "offset_align",
        ],
    ),
    (
        "Offsets, sizes and rates fio draws otherwise: unaligned block sizes, the shared \
         repeat of every generator, rate averaging cycles and thinktime-aware rates are not \
         implemented.",
        &[
            "bs_unaligned",
            "blocksize_unaligned",
            "allrandrepeat",
            "rate_cycle",
            "ratecycle",
            "rate_ignore_thinktime",
        ],
    ),
    (
        "Write semantics with no portable system call behind them (`atomic`, \
         `write_barrier`) or not implemented (`sync_file_range`).",
        &["atomic", "write_barrier", "sync_file_range"],
    ),
    (
        "Statistics and log options storbench's result model does not have: it always \
         keeps its statistics and disk counters, writes logs uncompressed with times since \
         the job started.",
        &[
            "stats",
            "disk_util",
            "block_error_percentiles",
            "log_entries",
            "log_compression_cpus",
            "log_alternate_epoch",
            "log_alternate_epoch_clock_id",
        ],
    ),
    (
        "fio's built-in profiles (tiobench, act) and their options, which fio accepts in \
         any job: not implemented.",
        &[
            "profile",
            "block",
            "dir",
            "device-names",
            "load",
            "test-duration",
            "threads-per-queue",
            "read-req-num-512-blocks",
            "large-block-op-kbytes",
            "prep",
        ],
    ),
]);

/// fio engine names storbench does not have, by reason.
pub const UNSUPPORTED_ENGINES: Refused = Refused(&[
    (
        "RDMA engines, which need RDMA hardware and an RDMA peer.",
        &["rdma", "librpma_apm", "librpma_gpspm"],
    ),
    (
        "Clients of distributed and object storage systems, which need their libraries \
         (GlusterFS, Ceph, DAOS, HDFS, DDN IME, GPUDirect, libcurl for http's S3 and \
         WebDAV): storbench links none.",
        &[
            "http",
            "gfapi",
            "gfapi_async",
            "rados",
            "rbd",
            "dfs",
            "libhdfs",
            "ime_psync",
            "ime_psyncv",
            "ime_aio",
            "libcufile",
        ],
    ),
    (
        "Device-specific kernel interfaces (SCSI generic, NVMe pass-through, zoned, MTD, \
         persistent memory, splice): not implemented.",
        &[
            "sg",
            "io_uring_cmd",
            "nvme",
            "xnvme",
            "libzbc",
            "mtd",
            "pmemblk",
            "dev-dax",
            "libpmem",
            "splice",
        ],
    ),
    (
        "Engines of other systems or removed from Linux (Windows, Solaris, binject, \
         syslets, guasi).",
        &["windowsaio", "solarisaio", "binject", "syslet-rw", "guasi"],
    ),
    (
        "Not engines of fio 3.33 itself: its example for external engines, and `cpu`, \
         which fio 3.33 cannot load either (its engine is `cpuio`).",
        &["skeleton_external", "cpu"],
    ),
]);

#[cfg(test)]
mod tests {
    use super::*;

    /// No name stands in two groups (it would have two reasons), or is both an option
    /// and an engine's name by mistake of copying.
    #[test]
    fn every_refused_name_has_one_reason() {
        for table in [UNSUPPORTED, UNSUPPORTED_ENGINES] {
            let names: Vec<&str> = table.names().collect();
            for n in &names {
                let times = names.iter().filter(|g| *g == n).count();
                assert_eq!(times, 1, "{n} has {times} reasons");
            }
            assert!(
                table
                    .groups()
                    .iter()
                    .all(|(why, names)| !why.is_empty() && !names.is_empty())
            );
        }
        assert!(UNSUPPORTED.contains("lockfile") && !UNSUPPORTED.contains("bs"));
        assert!(UNSUPPORTED_ENGINES.contains("rbd") && !UNSUPPORTED_ENGINES.contains("psync"));
    }
}
