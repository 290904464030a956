//! fio 3.33's verify state file (`verify-state.h`), which a verifying write job leaves
//! behind (`verify_state_save`) and a later verify run reads (`verify_state_load`) to
//! know how far the writes got: the writes issued and the last `iodepth` completed per
//! file. Either tool reads the other's. Little-endian throughout:
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | version (3) |
//! | 8..16 | size of what follows the header |
//! | 16..24 | fio's crc32c of what follows |
//! | 24..32 | completions listed |
//! | 32..36 | the job's iodepth |
//! | 36..40 | its number of files |
//! | 40..48 | writes issued (fio's `numberio`) |
//! | 48..56 | thread index |
//! | 56..112 | fio's random state (unused by a verify that logs its writes) |
//! | 112..176 | job name, NUL-terminated |
//! | 176.. | per completion: file number, offset (u64 each), iodepth × files of room |

use super::fio_crc32c;

const VERSION: u64 = 3;
const HDR: usize = 24;
/// fio's `struct thread_io_list` without its completions.
const LIST: usize = 152;
const NAME_AT: usize = 88;
const NAME_LEN: usize = 64;
/// A state larger than this is not one fio wrote (1 Mi completions).
const MAX_SIZE: u64 = LIST as u64 + (16 << 20);

/// The most a state file is read for (a larger one is not fio's).
pub const MAX_FILE: u64 = HDR as u64 + MAX_SIZE + 1;

/// What one job clone's state file says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StateFile {
    pub depth: u32,
    pub nofiles: u32,
    /// Writes the job issued.
    pub numberio: u64,
    /// fio's thread index (from 0 over the run's clones).
    pub index: u64,
    pub name: String,
    /// The last completed writes, newest first per file: (file number, offset).
    pub comps: Vec<(u64, u64)>,
}

/// fio's name of the state file of job `name`'s clone `thread`: `local-NAME-N-verify.state`,
/// a `/` in the name turned into `.`.
pub fn file_name(name: &str, thread: u32) -> String {
    format!("local-{}-{thread}-verify.state", name.replace('/', "."))
}

impl StateFile {
    /// The file's bytes, as fio writes them.
    pub fn encode(&self) -> Vec<u8> {
        let room = self.depth as usize * self.nofiles as usize;
        let mut list = vec![0u8; LIST + 16 * room.max(self.comps.len())];
        list[0..8].copy_from_slice(&(self.comps.len() as u64).to_le_bytes());
        list[8..12].copy_from_slice(&self.depth.to_le_bytes());
        list[12..16].copy_from_slice(&self.nofiles.to_le_bytes());
        list[16..24].copy_from_slice(&self.numberio.to_le_bytes());
        list[24..32].copy_from_slice(&self.index.to_le_bytes());
        let name = self.name.as_bytes();
        let n = name.len().min(NAME_LEN - 1);
        list[NAME_AT..NAME_AT + n].copy_from_slice(&name[..n]);
        for (i, (file, offset)) in self.comps.iter().enumerate() {
            let at = LIST + 16 * i;
            list[at..at + 8].copy_from_slice(&file.to_le_bytes());
            list[at + 8..at + 16].copy_from_slice(&offset.to_le_bytes());
        }
        let mut out = Vec::with_capacity(HDR + list.len());
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(list.len() as u64).to_le_bytes());
        out.extend_from_slice(&u64::from(fio_crc32c(&list)).to_le_bytes());
        out.extend_from_slice(&list);
        out
    }

    /// Reads a state file's bytes; the error says, as fio's, what is wrong with it.
    pub fn decode(bytes: &[u8]) -> Result<StateFile, String> {
        let u64_at =
            |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
        if bytes.len() < HDR {
            return Err("failed reading verify state header".into());
        }
        let version = u64_at(bytes, 0);
        if version != VERSION {
            return Err(format!(
                "unsupported ({version}) version in verify state header"
            ));
        }
        let size = u64_at(bytes, 8);
        if !(LIST as u64..=MAX_SIZE).contains(&size) || bytes.len() as u64 != HDR as u64 + size {
            return Err("failed reading verify state (not a fio 3.33 verify state file)".into());
        }
        let list = &bytes[HDR..];
        if u64::from(fio_crc32c(list)) != u64_at(bytes, 16) {
            return Err("verify state is corrupt (its checksum does not match)".into());
        }
        let no_comps = u64_at(list, 0);
        if no_comps > (size - LIST as u64) / 16 {
            return Err("verify state is corrupt (more completions than room)".into());
        }
        let name = &list[NAME_AT..NAME_AT + NAME_LEN];
        let end = name.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
        Ok(StateFile {
            depth: u32::from_le_bytes(list[8..12].try_into().unwrap_or_default()),
            nofiles: u32::from_le_bytes(list[12..16].try_into().unwrap_or_default()),
            numberio: u64_at(list, 16),
            index: u64_at(list, 24),
            name: String::from_utf8_lossy(&name[..end]).into_owned(),
            comps: (0..no_comps as usize)
                .map(|i| (u64_at(list, LIST + 16 * i), u64_at(list, LIST + 16 * i + 8)))
                .collect(),
        })
    }

    /// fio's `verify_state_should_stop`: after `reads_done` verify reads, whether the
    /// block at `offset` of file `file` is past what the writes completed. Only the last
    /// `depth` blocks of the writes issued are in doubt; each is checked if its write is
    /// among the completions.
    pub fn should_stop(&self, reads_done: u64, file: u64, offset: u64) -> bool {
        let depth = u64::from(self.depth);
        let outside_window = (reads_done < depth || self.numberio.wrapping_sub(reads_done) > depth)
            && self.numberio > depth;
        if outside_window {
            return false;
        }
        !self.comps.iter().any(|&(f, o)| f == file && o == offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file fio 3.33 wrote for `--name=st --rw=write --bs=4k --size=256k
    /// --verify=crc32c --do_verify=0` (iodepth 1): 64 writes, the last at 258048.
    fn fios_file() -> Vec<u8> {
        let mut b = vec![0u8; 192];
        b[0] = 3;
        b[8] = 0xa8;
        b[16..20].copy_from_slice(&[0xc1, 0x76, 0x30, 0x7c]);
        b[24] = 1;
        b[32] = 1;
        b[36] = 1;
        b[40] = 0x40;
        b[112..114].copy_from_slice(b"st");
        b[185..188].copy_from_slice(&[0xf0, 0x03, 0x00]);
        b
    }

    #[test]
    fn reads_the_file_fio_writes_and_writes_it_back_the_same() {
        let s = StateFile::decode(&fios_file()).unwrap();
        assert_eq!(
            s,
            StateFile {
                depth: 1,
                nofiles: 1,
                numberio: 64,
                index: 0,
                name: "st".into(),
                comps: vec![(0, 258048)],
            }
        );
        assert_eq!(s.encode(), fios_file());
        assert_eq!(file_name("a/b", 3), "local-a.b-3-verify.state");
    }

    #[test]
    fn foreign_and_damaged_files_are_refused() {
        let mut wrong = fios_file();
        wrong[0] = 2;
        assert!(
            StateFile::decode(&wrong)
                .unwrap_err()
                .contains("unsupported (2) version")
        );
        let mut bad = fios_file();
        bad[190] ^= 1;
        assert!(StateFile::decode(&bad).unwrap_err().contains("corrupt"));
        assert!(StateFile::decode(&fios_file()[..100]).is_err());
        assert!(StateFile::decode(b"[global]\nrw=read\n").is_err());
        let mut huge = fios_file();
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(StateFile::decode(&huge).is_err());
    }

    #[test]
    fn stops_at_the_first_block_whose_write_did_not_complete() {
        let s = StateFile {
            depth: 2,
            nofiles: 1,
            numberio: 10,
            comps: vec![(0, 9 * 4096), (0, 8 * 4096)],
            ..StateFile::default()
        };
        for n in 0..8 {
            assert!(
                !s.should_stop(n, 0, n * 4096),
                "block {n} is before the window"
            );
        }
        assert!(!s.should_stop(8, 0, 8 * 4096));
        assert!(!s.should_stop(9, 0, 9 * 4096));
        assert!(s.should_stop(10, 0, 10 * 4096), "never written");
        let lost = StateFile {
            comps: vec![(0, 9 * 4096)],
            ..s
        };
        assert!(lost.should_stop(8, 0, 8 * 4096), "issued, not completed");
    }
}
