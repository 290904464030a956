//! Never-written data: a sparse file's holes, a thin LUN's unallocated blocks and trimmed
//! regions read back as zeros without a disk being touched, so their "read speed" is how
//! fast the kernel or the target fills a buffer with zeros. One completed read in
//! [`ZERO_SAMPLE_EVERY`](storbench_model::result::ZERO_SAMPLE_EVERY) is checked, and only the first
//! and last 64 bytes of each 4 KiB of it: any written data (fio's random buffers, a file
//! system's blocks) has a non-zero byte there, and the check reads at most 3% of a buffer.

/// The part of a buffer checked: a block of this size ...
const BLOCK: usize = 4096;
/// ... at its start and at its end.
const EDGE: usize = 64;

/// Whether every checked byte of `buf` is zero (an empty buffer is not judged: false).
pub fn looks_unwritten(buf: &[u8]) -> bool {
    if buf.is_empty() {
        return false;
    }
    buf.chunks(BLOCK).all(|block| {
        let head = &block[..block.len().min(EDGE)];
        let tail = &block[block.len().saturating_sub(EDGE)..];
        all_zero(head) && all_zero(tail)
    })
}

fn all_zero(bytes: &[u8]) -> bool {
    bytes.iter().fold(0u8, |acc, &b| acc | b) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_are_unwritten() {
        assert!(looks_unwritten(&[0u8; 4096]));
        assert!(looks_unwritten(&[0u8; 1 << 20]));
        assert!(looks_unwritten(&[0u8; 512]));
    }

    #[test]
    fn a_byte_at_either_edge_of_any_block_is_data() {
        for at in [0, 63, 4096 - 64, 4095, 4096, 8191 - 10, 3 * 4096 + 5] {
            let mut b = vec![0u8; 4 * 4096];
            b[at] = 1;
            assert!(!looks_unwritten(&b), "byte at {at}");
        }
        let mut short = vec![0u8; 100];
        short[50] = 7; // a short block's edges cover all of it
        assert!(!looks_unwritten(&short));
    }

    #[test]
    fn the_middle_of_a_block_is_not_read() {
        let mut b = vec![0u8; 4096];
        b[2048] = 1;
        assert!(looks_unwritten(&b));
        assert!(!looks_unwritten(&[]));
    }
}
