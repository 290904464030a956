//! The fuzz targets' kept inputs (fuzz/corpus, fuzz/regressions) replayed on stable.

use storbench_testkit::fuzz::replay;

#[test]
fn replies_corpus_replays() {
    replay(
        env!("CARGO_MANIFEST_DIR"),
        "replies",
        storbench_nfs::fuzzing::replies,
    );
}

#[test]
fn url_corpus_replays() {
    replay(
        env!("CARGO_MANIFEST_DIR"),
        "url",
        storbench_nfs::fuzzing::url,
    );
}

/// The v4 reply target over the captured ganesha replies (src/v4/fixtures), framed and fed
/// in several read splits, with every truncation and a flipped byte at every position.
#[test]
fn replies4_fixtures_replay() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/v4/fixtures");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let record = std::fs::read(entry.unwrap().path()).unwrap();
        for split in [1u8, 3, 7, 64, 255] {
            let mut data = vec![split];
            data.extend_from_slice(&(0x8000_0000u32 | record.len() as u32).to_be_bytes());
            data.extend_from_slice(&record);
            storbench_nfs::fuzzing::replies4(&data);
            for cut in 0..data.len() {
                storbench_nfs::fuzzing::replies4(&data[..cut]);
            }
            for at in 5..data.len() {
                let mut bad = data.clone();
                bad[at] ^= 0xff;
                storbench_nfs::fuzzing::replies4(&bad);
            }
        }
        seen += 1;
    }
    assert!(seen >= 17, "fixtures missing");
}
