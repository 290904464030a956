//! fio's deduplicated writes (`dedupe_percentage` with `dedupe_mode=repeat|working_set`,
//! `dedupe_working_set_percentage`, `dedupe_global`) against the installed fio 3.33: both
//! tools write the same job and the files they leave are compared block by block (as
//! fio's `t/fio-dedupe` counts them): the share of distinct blocks, where the repeated
//! blocks were first written, and how much two jobs sharing a working set have in common.
//! Skipped with a reason when fio 3.33 is missing.

mod common;

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;

use common::{fio_available, words};

const BS: usize = 4096;

/// Each 4 KiB block of `path`, as a hash of its bytes.
fn blocks(path: &Path) -> Vec<u64> {
    let data = std::fs::read(path).unwrap();
    data.chunks(BS)
        .map(|b| {
            let mut h = DefaultHasher::new();
            b.hash(&mut h);
            h.finish()
        })
        .collect()
}

/// Share of distinct blocks, percent.
fn distinct(blocks: &[u64]) -> f64 {
    let set: HashSet<&u64> = blocks.iter().collect();
    set.len() as f64 * 100.0 / blocks.len() as f64
}

/// The latest position at which a block that is written again later was first written.
fn last_first_write_of_a_repeat(blocks: &[u64]) -> usize {
    let mut first: HashMap<u64, usize> = HashMap::new();
    let mut last = 0;
    for (i, b) in blocks.iter().enumerate() {
        match first.get(b) {
            Some(&at) => last = last.max(at),
            None => {
                first.insert(*b, i);
            }
        }
    }
    last
}

/// Runs `job` with fio and storbench in directories of their own and gives each tool's
/// files (`names`), as blocks.
fn both(job: &str, names: &[&str]) -> [(String, Vec<Vec<u64>>); 2] {
    let run = |ours: bool| {
        let dir = tempfile::tempdir().unwrap();
        let r = if ours {
            common::sb_fio(dir.path(), &words(job))
        } else {
            common::fio(dir.path(), &words(job))
        };
        assert!(r.success(), "{job}: {}", r.stderr);
        let files = names.iter().map(|n| blocks(&dir.path().join(n))).collect();
        (if ours { "storbench" } else { "fio" }.to_string(), files)
    };
    [run(false), run(true)]
}

/// `repeat` (the default): 40% of the writes repeat the previous unique one, so 60% of
/// the blocks are distinct and every repeat sits right after what it copies.
#[test]
fn repeat_writes_the_share_of_copies_fio_writes() {
    if !fio_available() {
        return;
    }
    let job = "--name=d --filename=df --rw=write --bs=4k --size=8m --ioengine=psync \
               --dedupe_percentage=40 --output-format=terse";
    for (tool, files) in both(job, &["df"]) {
        let b = &files[0];
        assert_eq!(b.len(), 2048);
        let d = distinct(b);
        assert!((d - 60.0).abs() < 4.0, "{tool}: {d:.1}% distinct");
        // Every copy is of the last block that was new when written.
        let mut seen = HashSet::new();
        let mut last_new = b[0];
        let mut older = 0;
        for x in b {
            if seen.insert(*x) {
                last_new = *x;
            } else if *x != last_new {
                older += 1;
            }
        }
        assert_eq!(
            older, 0,
            "{tool}: copies of blocks older than the last new one"
        );
    }
}

/// `working_set`: the copies are drawn from the job's first unique writes (20% of size,
/// 409 blocks, the first ~820 blocks written), so half the blocks are distinct and no
/// block first written late is repeated.
#[test]
fn working_set_repeats_the_first_unique_writes_as_fios() {
    if !fio_available() {
        return;
    }
    let job = "--name=d --filename=df --rw=write --bs=4k --size=8m --ioengine=psync \
               --dedupe_percentage=50 --dedupe_mode=working_set \
               --dedupe_working_set_percentage=20 --output-format=terse";
    for (tool, files) in both(job, &["df"]) {
        let b = &files[0];
        let d = distinct(b);
        assert!((d - 50.0).abs() < 4.0, "{tool}: {d:.1}% distinct");
        let last = last_first_write_of_a_repeat(b);
        assert!(
            (700..1000).contains(&last),
            "{tool}: a block first written at {last} is repeated"
        );
    }
}

/// fio's examples/dedupe-global.fio, smaller: two jobs share one working set, so each
/// file repeats blocks of the other, and the two files together dedupe better than each
/// alone (fio's comment: 1:0.52 and 1:0.51 alone, 1:0.99 together). Without
/// `dedupe_global` the files share nothing and each is half distinct.
#[test]
fn a_global_working_set_is_shared_between_jobs_as_fios() {
    if !fio_available() {
        return;
    }
    let job = "--ioengine=libaio --iodepth=16 --size=8m --dedupe_mode=working_set \
               --dedupe_percentage=50 --blocksize=4k --rw=write \
               --buffer_compress_percentage=50 --dedupe_working_set_percentage=50 \
               --output-format=terse";
    for global in [true, false] {
        let job = format!(
            "{job} --dedupe_global={} --name=a --name=b",
            u8::from(global)
        );
        for (tool, files) in both(&job, &["a.0.0", "b.0.0"]) {
            let (a, b) = (&files[0], &files[1]);
            let in_b: HashSet<&u64> = b.iter().collect();
            let shared =
                a.iter().filter(|x| in_b.contains(x)).count() as f64 * 100.0 / a.len() as f64;
            let both: Vec<u64> = a.iter().chain(b).copied().collect();
            let (alone, together) = (distinct(a), distinct(&both));
            if global {
                // Half of a's copies come from b's first writes, and b copies a's: each
                // file alone 2/3 distinct (fio's example: 16817 of 25600), together
                // half (25747 of 51200), and more than half of a's blocks are in b.
                assert!((61.0..71.0).contains(&alone), "{tool}: {alone:.1}% alone");
                assert!((46.0..55.0).contains(&together), "{tool}: {together:.1}%");
                assert!(
                    (45.0..65.0).contains(&shared),
                    "{tool}: {shared:.1}% shared"
                );
            } else {
                assert!(
                    shared < 0.1,
                    "{tool}: {shared:.1}% shared without dedupe_global"
                );
                assert!((alone - 50.0).abs() < 4.0, "{tool}: {alone:.1}% alone");
            }
        }
    }
}

/// What fio refuses for a working set is refused in one line: no size, several files,
/// percentages past 100, an unknown mode.
#[test]
fn working_set_refusals_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (extra, msg) in [
        ("--filesize=1m", "needs size="),
        ("--size=1m --nrfiles=2", "one file per job"),
        (
            "--size=1m --dedupe_working_set_percentage=60",
            "cannot be reached",
        ),
        (
            "--size=1m --dedupe_mode=global",
            "not one of repeat, working_set",
        ),
    ] {
        let line = common::sb_fio(
            dir.path(),
            &[
                &["--parse-only", "--name=d", "--rw=write"][..],
                &["--dedupe_percentage=50", "--dedupe_mode=working_set"],
                &words(extra),
            ]
            .concat(),
        )
        .one_error_line();
        assert!(line.contains(msg), "{extra}: {line}");
    }
}
