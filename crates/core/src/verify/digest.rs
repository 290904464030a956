//! The checksums of fio 3.33's verify types, byte for byte as fio stores them after the
//! header. Most are the standard algorithms from well-kept crates; where fio 3.33 deviates
//! (crc32c without the final inversion, sha1 words in host order, its sha256 and sha512
//! stores) the deviation is reproduced here so that fio and storbench read each other's
//! blocks.

use crc::{Algorithm, CRC_7_MMC, CRC_16_ARC, CRC_64_REDIS, Crc};
use md5::Digest as _;
use storbench_job::VerifyKind;

/// fio's crc32: MSB-first over the 0x04C11DB7 polynomial, starting from 0, no final
/// inversion (POSIX cksum's table without its length and complement).
const FIO_CRC32: Algorithm<u32> = Algorithm {
    width: 32,
    poly: 0x04c1_1db7,
    init: 0,
    refin: false,
    refout: false,
    xorout: 0,
    check: 0x89a1_897f,
    residue: 0,
};

static CRC32: Crc<u32> = Crc::<u32>::new(&FIO_CRC32);
/// fio's crc64 is the Jones polynomial reflected, from 0, no inversion (Redis' CRC-64).
static CRC64: Crc<u64> = Crc::<u64>::new(&CRC_64_REDIS);
/// fio's crc16 is the 0x8005 polynomial reflected, from 0 (CRC-16/ARC).
static CRC16: Crc<u16> = Crc::<u16>::new(&CRC_16_ARC);
/// fio's crc7 is the kernel's old crc7 (x^7 + x^3 + 1, MSB-first, from 0).
static CRC7: Crc<u8> = Crc::<u8>::new(&CRC_7_MMC);

/// fio's crc32c: Castagnoli from all ones, without the final inversion (so the bitwise
/// complement of the standard CRC-32C). It also guards every header.
#[inline]
pub fn fio_crc32c(data: &[u8]) -> u32 {
    !crc32c::crc32c(data)
}

/// Writes the checksum of `data` for `kind` into `out` (`kind.digest_len()` bytes), as fio
/// 3.33 stores it.
pub fn digest(kind: VerifyKind, data: &[u8], out: &mut [u8]) {
    match kind {
        VerifyKind::Md5 => out.copy_from_slice(&md5::Md5::digest(data)),
        VerifyKind::Crc64 => out.copy_from_slice(&CRC64.checksum(data).to_le_bytes()),
        VerifyKind::Crc32 => out.copy_from_slice(&CRC32.checksum(data).to_le_bytes()),
        VerifyKind::Crc32c | VerifyKind::Crc32cIntel => {
            out.copy_from_slice(&fio_crc32c(data).to_le_bytes())
        }
        VerifyKind::Crc16 => out.copy_from_slice(&CRC16.checksum(data).to_le_bytes()),
        VerifyKind::Crc7 => out[0] = CRC7.checksum(data),
        VerifyKind::Sha1 => {
            // fio keeps the five 32-bit words in host (little-endian) order.
            let d = sha1::Sha1::digest(data);
            for (o, w) in out.chunks_exact_mut(4).zip(d.chunks_exact(4)) {
                o.copy_from_slice(&[w[3], w[2], w[1], w[0]]);
            }
        }
        VerifyKind::Sha256 => fio_sha256(data, out),
        VerifyKind::Sha512 => fio_sha512(data, out),
        VerifyKind::Sha3_224 => out.copy_from_slice(&sha3::Sha3_224::digest(data)),
        VerifyKind::Sha3_256 => out.copy_from_slice(&sha3::Sha3_256::digest(data)),
        VerifyKind::Sha3_384 => out.copy_from_slice(&sha3::Sha3_384::digest(data)),
        VerifyKind::Sha3_512 => out.copy_from_slice(&sha3::Sha3_512::digest(data)),
        VerifyKind::Xxhash => {
            out.copy_from_slice(&xxhash_rust::xxh32::xxh32(data, 1).to_le_bytes())
        }
        _ => {}
    }
}

/// fio 3.33's sha256 area (64 bytes): its context works in this area as its block buffer,
/// pads with the bit length in little-endian order, and at the end stores only the low
/// byte of each of the eight state words over the first eight bytes. What remains after
/// them is the last padded block's bytes 8..64.
fn fio_sha256(data: &[u8], out: &mut [u8]) {
    let mut state: [u32; 8] = [
        0x6a09_e667,
        0xbb67_ae85,
        0x3c6e_f372,
        0xa54f_f53a,
        0x510e_527f,
        0x9b05_688c,
        0x1f83_d9ab,
        0x5be0_cd19,
    ];
    let full = data.len() / 64 * 64;
    for block in data[..full].chunks_exact(64) {
        compress(&mut state, block);
    }
    let tail = &data[full..];
    let mut last = [0u8; 128];
    last[..tail.len()].copy_from_slice(tail);
    last[tail.len()] = 0x80;
    let bits = (data.len() as u64) << 3;
    let end = if tail.len() < 56 { 64 } else { 128 };
    last[end - 8..end].copy_from_slice(&bits.to_le_bytes());
    for block in last[..end].chunks_exact(64) {
        compress(&mut state, block);
    }
    out[..64].copy_from_slice(&last[end - 64..end]);
    for (o, s) in out.iter_mut().zip(state) {
        *o = s as u8;
    }
}

fn compress(state: &mut [u32; 8], block: &[u8]) {
    let block = sha2::digest::generic_array::GenericArray::clone_from_slice(block);
    sha2::compress256(state, &[block]);
}

/// fio 3.33's sha512 area (128 bytes): fio never finishes this hash and stores its
/// context's block buffer, which holds the data's last partial block over its first
/// 128 bytes (or the first 128 when the length is a multiple of 128). No hash is needed
/// to reproduce it.
fn fio_sha512(data: &[u8], out: &mut [u8]) {
    let out = &mut out[..128];
    let len = data.len();
    if len < 128 {
        out.fill(0);
        out[..len].copy_from_slice(data);
        return;
    }
    out.copy_from_slice(&data[..128]);
    let start = 128usize.max((len - 127).div_ceil(128) * 128);
    let rest = &data[start.min(len)..];
    out[..rest.len()].copy_from_slice(rest);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(kind: VerifyKind, data: &[u8]) -> String {
        let mut out = vec![0u8; kind.digest_len()];
        digest(kind, data, &mut out);
        out.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn standard_check_values() {
        let d = b"123456789";
        assert_eq!(CRC64.checksum(d), 0xe9c6_d914_c4b8_d9ca);
        assert_eq!(CRC16.checksum(d), 0xbb3d);
        assert_eq!(CRC7.checksum(d), 0x75);
        assert_eq!(CRC32.checksum(d), 0x89a1_897f);
        assert_eq!(fio_crc32c(d), !0xe306_9283);
        assert_eq!(
            hex(VerifyKind::Md5, b""),
            "d41d8cd98f00b204e9800998ecf8427e"
        );
        // sha1("abc") = a9993e36 4706816a ..., words stored little-endian.
        assert!(hex(VerifyKind::Sha1, b"abc").starts_with("363e99a96a810647"));
    }

    #[test]
    fn fio_sha512_keeps_the_last_partial_block() {
        let data: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        let mut out = [0u8; 128];
        fio_sha512(&data, &mut out);
        // 300 = 2 * 128 + 44: bytes 256..300, then bytes 44..128 of the first copy.
        assert_eq!(&out[..44], &data[256..300]);
        assert_eq!(&out[44..], &data[44..128]);
        fio_sha512(&data[..256], &mut out);
        assert_eq!(&out[..], &data[..128]);
    }
}
