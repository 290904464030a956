//! bonnie++'s sequential IO tests on one file: per-char write, block write, rewrite,
//! per-char read and block read. Each opens its file untimed and stops its clock after the
//! final fsync and close, as bonnie++ does.

use std::time::Instant;

use storbench_core::{FileId, IoKind, OpenOptions};

use crate::error::Result;
use crate::io::short;
use crate::phase::Phase;
use crate::timing::{MaxLatency, Span};
use crate::worker::{Worker, check_stop};
use storbench_model::rng::{SplitMix64, mix64 as mix};

/// What the IO tests share.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IoParams {
    pub chunk: u32,
    /// Chunks in the whole file.
    pub chunks: u64,
    /// Chunks the per-char tests cover (one "operation" each, as in bonnie++).
    pub char_chunks: u64,
    pub direct: bool,
    pub fsync_each: bool,
    pub compressible: bool,
    pub seed: u64,
}

impl IoParams {
    fn open(&self, direct: bool) -> OpenOptions {
        OpenOptions {
            read: true,
            write: true,
            direct: direct && self.direct,
            ..OpenOptions::default()
        }
    }
}

/// Creates the test file with O_EXCL, first removing our own previous one.
fn create_file(w: &mut Worker, open: OpenOptions) -> Result<FileId> {
    if w.file_exists {
        w.at("", |m, p| m.unlink(p))?;
        w.file_exists = false;
    }
    let file = w.at("", |m, p| m.create(p, &open))?;
    w.file_exists = true;
    Ok(file)
}

/// Sequential Output, Per Chr: one 1-byte write per call, pattern `i & 0x7f`.
pub(crate) struct PutChar(pub IoParams);

impl Phase for PutChar {
    type Ready = FileId;

    fn prepare(&self, w: &mut Worker) -> Result<FileId> {
        for (i, b) in w.buf.slot_mut(0)[..128].iter_mut().enumerate() {
            *b = i as u8;
        }
        create_file(w, self.0.open(false))
    }

    fn run(&self, w: &mut Worker, file: FileId, lat: &mut MaxLatency) -> Result<Option<Span>> {
        let p = &self.0;
        let mut offset = 0u64;
        for _ in 0..p.char_chunks {
            check_stop("the per-char write")?;
            let start = Instant::now();
            for i in 0..p.chunk as usize {
                let byte = w.buf.ptr_at(i & 0x7f);
                let n =
                    w.io.transfer(file, IoKind::Write, offset, byte, 1, &w.file_path)?;
                if n != 1 {
                    return Err(short(IoKind::Write, &w.file_path, offset, 1, n).into());
                }
                offset += 1;
            }
            if p.fsync_each {
                w.io.fsync(file, &w.file_path)?;
            }
            lat.record(start);
        }
        w.io.sync_close(file, &w.file_path)?;
        Ok(None)
    }
}

/// Sequential Output, Block: the whole file in chunk-sized writes.
pub(crate) struct PutBlock(pub IoParams);

impl Phase for PutBlock {
    type Ready = FileId;

    fn prepare(&self, w: &mut Worker) -> Result<FileId> {
        let chunk = self.0.chunk as usize;
        fill_data(
            &mut w.buf.slot_mut(0)[..chunk],
            &mut w.rng,
            self.0.compressible,
        );
        create_file(w, self.0.open(true))
    }

    fn run(&self, w: &mut Worker, file: FileId, lat: &mut MaxLatency) -> Result<Option<Span>> {
        let p = &self.0;
        let chunk = p.chunk as usize;
        for i in 0..p.chunks {
            check_stop("the block write")?;
            mark_chunk(&mut w.buf.slot_mut(0)[..chunk], i, p);
            let offset = i * u64::from(p.chunk);
            let start = Instant::now();
            write_chunk(w, file, offset, p)?;
            lat.record(start);
        }
        w.io.sync_close(file, &w.file_path)?;
        Ok(None)
    }
}

/// Data to write: random (incompressible) by default, zeros as bonnie++ with `--compressible`.
pub(crate) fn fill_data(buf: &mut [u8], rng: &mut SplitMix64, compressible: bool) {
    if compressible {
        buf.fill(0);
    } else {
        rng.fill(buf);
    }
}

/// Makes each chunk differ from the others: bonnie++ bumps one byte of a zero buffer;
/// the incompressible default stamps a unique word, so no chunk deduplicates either.
#[inline]
fn mark_chunk(buf: &mut [u8], i: u64, p: &IoParams) {
    if p.compressible {
        let at = (i % buf.len() as u64) as usize;
        buf[at] = buf[at].wrapping_add(1);
    } else {
        buf[..8].copy_from_slice(&mix(p.seed ^ i).to_le_bytes());
    }
}

#[inline]
fn write_chunk(w: &mut Worker, file: FileId, offset: u64, p: &IoParams) -> Result<()> {
    let n = w.io.transfer(
        file,
        IoKind::Write,
        offset,
        w.buf.base(),
        p.chunk,
        &w.file_path,
    )?;
    if n != u64::from(p.chunk) {
        return Err(short(IoKind::Write, &w.file_path, offset, p.chunk, n).into());
    }
    if p.fsync_each {
        w.io.fsync(file, &w.file_path)?;
    }
    Ok(())
}

#[inline]
pub(crate) fn read_chunk(w: &mut Worker, file: FileId, offset: u64, chunk: u32) -> Result<()> {
    let n = w.io.transfer(
        file,
        IoKind::Read,
        offset,
        w.buf.base(),
        chunk,
        &w.file_path,
    )?;
    if n != u64::from(chunk) {
        return Err(short(IoKind::Read, &w.file_path, offset, chunk, n).into());
    }
    Ok(())
}

/// Rewrite: per chunk read it, change one byte, write it back in place.
pub(crate) struct Rewrite(pub IoParams);

impl Phase for Rewrite {
    type Ready = FileId;

    fn prepare(&self, w: &mut Worker) -> Result<FileId> {
        Ok(w.io.open(&w.file, self.0.open(true))?)
    }

    fn run(&self, w: &mut Worker, file: FileId, lat: &mut MaxLatency) -> Result<Option<Span>> {
        let p = &self.0;
        for i in 0..p.chunks {
            check_stop("the rewrite")?;
            let offset = i * u64::from(p.chunk);
            let start = Instant::now();
            read_chunk(w, file, offset, p.chunk)?;
            let at = (i % u64::from(p.chunk)) as usize;
            let bytes = w.buf.slot_mut(0);
            bytes[at] = bytes[at].wrapping_add(1);
            write_chunk(w, file, offset, p)?;
            lat.record(start);
        }
        w.io.sync_close(file, &w.file_path)?;
        Ok(None)
    }
}

/// Sequential Input, Per Chr: one 1-byte read per call over the per-char size.
pub(crate) struct GetChar(pub IoParams);

impl Phase for GetChar {
    type Ready = FileId;

    fn prepare(&self, w: &mut Worker) -> Result<FileId> {
        Ok(w.io.open(&w.file, self.0.open(false))?)
    }

    fn run(&self, w: &mut Worker, file: FileId, lat: &mut MaxLatency) -> Result<Option<Span>> {
        let p = &self.0;
        let byte = w.buf.base();
        let mut offset = 0u64;
        for _ in 0..p.char_chunks {
            check_stop("the per-char read")?;
            let start = Instant::now();
            for _ in 0..p.chunk {
                let n =
                    w.io.transfer(file, IoKind::Read, offset, byte, 1, &w.file_path)?;
                if n != 1 {
                    return Err(short(IoKind::Read, &w.file_path, offset, 1, n).into());
                }
                offset += 1;
            }
            lat.record(start);
        }
        w.io.sync_close(file, &w.file_path)?;
        Ok(None)
    }
}

/// Sequential Input, Block: the whole file in chunk-sized reads.
pub(crate) struct GetBlock(pub IoParams);

impl Phase for GetBlock {
    type Ready = FileId;

    fn prepare(&self, w: &mut Worker) -> Result<FileId> {
        Ok(w.io.open(&w.file, self.0.open(true))?)
    }

    fn run(&self, w: &mut Worker, file: FileId, lat: &mut MaxLatency) -> Result<Option<Span>> {
        let p = &self.0;
        for i in 0..p.chunks {
            check_stop("the block read")?;
            let start = Instant::now();
            read_chunk(w, file, i * u64::from(p.chunk), p.chunk)?;
            lat.record(start);
        }
        w.io.sync_close(file, &w.file_path)?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(compressible: bool) -> IoParams {
        IoParams {
            chunk: 8192,
            chunks: 64,
            char_chunks: 0,
            direct: false,
            fsync_each: false,
            compressible,
            seed: 1,
        }
    }

    /// The chunks a block write sends, concatenated.
    fn written(compressible: bool) -> Vec<u8> {
        let p = params(compressible);
        let mut buf = vec![0u8; p.chunk as usize];
        fill_data(&mut buf, &mut SplitMix64::seeded(9), compressible);
        let mut out = Vec::new();
        for i in 0..p.chunks {
            mark_chunk(&mut buf, i, &p);
            out.extend_from_slice(&buf);
        }
        out
    }

    #[test]
    fn default_data_is_incompressible_and_unique_per_chunk() {
        let data = written(false);
        let zeros = data.iter().filter(|&&b| b == 0).count();
        assert!(zeros < data.len() / 128, "{zeros} zero bytes");
        let mut counts = [0usize; 256];
        data.iter().for_each(|&b| counts[b as usize] += 1);
        let expected = data.len() / 256;
        assert!(
            counts.iter().all(|&c| c > expected / 2 && c < expected * 2),
            "byte values are not spread evenly"
        );
        let mut chunks: Vec<&[u8]> = data.chunks(8192).collect();
        chunks.sort_unstable();
        chunks.dedup();
        assert_eq!(
            chunks.len(),
            64,
            "every chunk differs, so nothing deduplicates"
        );
    }

    #[test]
    fn compressible_data_is_bonnies_near_zero_buffer() {
        let data = written(true);
        let nonzero = data.iter().filter(|&&b| b != 0).count();
        assert!(nonzero <= 64 * 64, "{nonzero} non-zero bytes");
        let mut chunks: Vec<&[u8]> = data.chunks(8192).collect();
        chunks.dedup();
        assert_eq!(chunks.len(), 64, "bonnie++ bumps one byte per chunk");
    }
}
