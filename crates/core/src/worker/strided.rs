//! fio's `zonemode=strided` (`setup_strided_zone_mode`): the file's offsets are drawn in
//! one zone of `zonerange` bytes at a time. Once `zonesize` bytes were transferred the
//! zone moves `zonerange + zoneskip` bytes on, back to the region's start when it would
//! begin past the file's end; every `zonerange` bytes the zone starts over (its sequential
//! position and random map), so a `zonesize` above `zonerange` goes through it again.

use storbench_job::Zoning;

use crate::offsets::OffsetGen;

pub(super) struct Strided {
    size: u64,
    range: u64,
    step: u64,
    /// Where the region starts and the file ends.
    first: u64,
    file_end: u64,
    /// The zone's start, and the bytes transferred in it.
    at: u64,
    bytes: u64,
}

impl Strided {
    pub(super) fn new(z: &Zoning, first: u64, file_end: u64) -> Strided {
        Strided {
            size: z.size.max(1),
            range: z.range.max(1),
            step: z.range + z.skip,
            first,
            file_end,
            at: first,
            bytes: 0,
        }
    }

    /// The bytes of the region the offsets are drawn over: one zone.
    pub(super) fn zone_len(z: &Zoning, region: u64) -> u64 {
        z.range.min(region).max(1)
    }

    /// Before an IO of the file: moves to the next zone or starts the zone over when due.
    #[inline]
    pub(super) fn before_io(&mut self, offsets: &mut OffsetGen) {
        if self.bytes >= self.size {
            self.bytes = 0;
            self.at += self.step;
            if self.at >= self.file_end {
                self.at = self.first;
            }
            offsets.move_to(self.at);
        } else if self.bytes.is_multiple_of(self.range) {
            offsets.restart();
        }
    }

    /// After an IO of `len` bytes was placed.
    #[inline]
    pub(super) fn placed(&mut self, len: u64) {
        self.bytes += len;
    }
}
