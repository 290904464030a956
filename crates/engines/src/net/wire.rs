//! What fio's net engine puts on the wire besides the payload: the UDP open message a
//! sender starts with (big-endian), the close message every sender and receiver ends with
//! (little-endian, on every protocol), and the sequence trailer of each UDP datagram that
//! lets a reader count datagrams lost.

/// The magic of the open and close messages ("link").
const LINK_MAGIC: u32 = 0x6c69_6e6b;
const LINK_OPEN: u32 = 0x98;
const LINK_CLOSE: u32 = 0x89;
/// The magic of a datagram's sequence trailer.
const SEQ_MAGIC: u64 = 0x6573_7571_6e55_6563;
/// The trailer: magic, sequence number, datagram length, each a little-endian u64.
pub const SEQ_LEN: usize = 24;
/// Length of the open and close messages.
pub const LINK_LEN: usize = 8;

/// The open message, as fio writes it (network byte order).
pub fn open_msg() -> [u8; LINK_LEN] {
    let mut m = [0u8; LINK_LEN];
    m[..4].copy_from_slice(&LINK_MAGIC.to_be_bytes());
    m[4..].copy_from_slice(&LINK_OPEN.to_be_bytes());
    m
}

pub fn is_open_msg(m: &[u8]) -> bool {
    m == open_msg()
}

/// The close message, as fio writes it (little-endian).
pub fn close_msg() -> [u8; LINK_LEN] {
    let mut m = [0u8; LINK_LEN];
    m[..4].copy_from_slice(&LINK_MAGIC.to_le_bytes());
    m[4..].copy_from_slice(&LINK_CLOSE.to_le_bytes());
    m
}

/// Whether a transfer of exactly these bytes is the peer's close message.
pub fn is_close_msg(m: &[u8]) -> bool {
    m == close_msg()
}

/// Writes the trailer of datagram `seq` into its last bytes (datagrams shorter than the
/// trailer carry none).
pub fn store_seq(buf: &mut [u8], seq: u64) {
    let len = buf.len();
    if len < SEQ_LEN {
        return;
    }
    let t = &mut buf[len - SEQ_LEN..];
    t[..8].copy_from_slice(&SEQ_MAGIC.to_le_bytes());
    t[8..16].copy_from_slice(&seq.to_le_bytes());
    t[16..].copy_from_slice(&(len as u64).to_le_bytes());
}

/// What a received datagram's trailer says.
#[derive(Debug, PartialEq, Eq)]
pub enum Seq {
    /// No trailer (too short, or not fio's).
    None,
    /// A trailer whose length is not the datagram's: the sender's blocks differ from
    /// ours, so fio stops counting.
    Mismatch,
    Number(u64),
}

pub fn read_seq(buf: &[u8]) -> Seq {
    let len = buf.len();
    if len < SEQ_LEN {
        return Seq::None;
    }
    let t = &buf[len - SEQ_LEN..];
    let word = |i: usize| u64::from_le_bytes(t[i..i + 8].try_into().expect("8 bytes"));
    if word(0) != SEQ_MAGIC {
        return Seq::None;
    }
    if word(16) != len as u64 {
        return Seq::Mismatch;
    }
    Seq::Number(word(8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_fios_bytes() {
        assert_eq!(open_msg(), [0x6c, 0x69, 0x6e, 0x6b, 0, 0, 0, 0x98]);
        assert_eq!(close_msg(), [0x6b, 0x6e, 0x69, 0x6c, 0x89, 0, 0, 0]);
        assert!(is_close_msg(&close_msg()) && !is_close_msg(&open_msg()));
        assert!(is_open_msg(&open_msg()));
    }

    #[test]
    fn the_trailer_round_trips_and_needs_its_length() {
        let mut b = [0u8; 64];
        store_seq(&mut b, 7);
        assert_eq!(read_seq(&b), Seq::Number(7));
        assert_eq!(read_seq(&b[..63]), Seq::None);
        assert_eq!(read_seq(&b[1..]), Seq::Mismatch);
        let mut short = [0u8; 16];
        store_seq(&mut short, 1);
        assert_eq!(short, [0u8; 16]);
        let mut c = [0u8; 48];
        store_seq(&mut c, 3);
        let mut d = [0u8; 64];
        d[16..].copy_from_slice(&c);
        assert_eq!(read_seq(&d), Seq::Mismatch);
    }
}
