//! How many of fio 3.33's own example job files (`examples/` in fio's source, not
//! vendored) storbench reads, and why each other one is refused. Measured by running
//! `fio --parse-only` and `storbench fio --parse-only` on each file of fio's tag fio-3.33.

/// fio's example files that fio 3.33 itself parses.
pub const FIO_PARSES: usize = 67;

/// The refused examples, each with the reason of its first refusal: hardware or services
/// a home lab lacks, or fio features storbench does not have yet.
pub const REFUSED: &[(&str, &str)] = &[
    ("dev-dax.fio", "device DAX (persistent memory hardware)"),
    (
        "e4defrag2.fio",
        "its libaio jobs verify (`verify=md5`) while writing with `time_based`: storbench verifies once after the writes, fio after every pass",
    ),
    (
        "gfapi.fio",
        "GlusterFS client library (a GlusterFS cluster)",
    ),
    ("ime.fio", "DDN IME client library (a DDN IME system)"),
    ("libhdfs.fio", "HDFS client library (a Hadoop cluster)"),
    ("libpmem.fio", "persistent memory (PMEM hardware)"),
    (
        "libzbc-rand-write.fio",
        "zoned block devices (SMR/ZNS hardware) through libzbc",
    ),
    (
        "libzbc-seq-read.fio",
        "zoned block devices (SMR/ZNS hardware) through libzbc",
    ),
    ("mtd.fio", "raw flash (MTD devices)"),
    ("pmemblk.fio", "persistent memory (PMEM hardware)"),
    ("rados.fio", "Ceph RADOS client library (a Ceph cluster)"),
    ("rbd.fio", "Ceph RBD client library (a Ceph cluster)"),
    ("sg_verify-fail.fio", "SCSI generic devices (`sg`)"),
    ("sg_verify.fio", "SCSI generic devices (`sg`)"),
    ("sg_write_same_ndob.fio", "SCSI generic devices (`sg`)"),
    (
        "uring-cmd-ng.fio",
        "NVMe pass-through (`io_uring_cmd`, NVMe character devices)",
    ),
    (
        "uring-cmd-zoned.fio",
        "NVMe pass-through to zoned namespaces (ZNS hardware)",
    ),
    (
        "zbd-rand-write.fio",
        "zoned block devices (`zonemode=zbd`, SMR/ZNS hardware)",
    ),
    (
        "zbd-seq-read.fio",
        "zoned block devices (`zonemode=zbd`, SMR/ZNS hardware)",
    ),
];

/// The section of docs/fio-compat.md.
pub fn section(out: &mut String) {
    use std::fmt::Write;
    let parsed = FIO_PARSES - REFUSED.len();
    let _ = write!(
        out,
        "## fio's example job files\n\n\
         Of the job files in fio 3.33's `examples/` directory (its source at tag `fio-3.33`, \
         not shipped with storbench), fio 3.33 itself parses {FIO_PARSES}; `storbench fio \
         --parse-only` reads {parsed} of them. Each other one is refused, at its first \
         option storbench lacks, for this reason:\n\n\
         | example | why storbench refuses it |\n|---|---|\n"
    );
    for (file, why) in REFUSED {
        let _ = writeln!(out, "| `{file}` | {why} |");
    }
    out.push('\n');
}
