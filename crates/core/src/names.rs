//! File names in bulk: one text buffer and the end of each name, so that listing or naming
//! tens of thousands of files costs two growing buffers instead of one allocation per name.

/// A list of names in one buffer; `clear` keeps the capacity for the next batch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameList {
    text: String,
    /// End of each name in `text` (the start is the previous end).
    ends: Vec<u32>,
}

impl NameList {
    pub fn with_capacity(names: usize, bytes: usize) -> NameList {
        NameList {
            text: String::with_capacity(bytes),
            ends: Vec::with_capacity(names),
        }
    }

    /// Room for `names` more names of `bytes` bytes in all, so pushing them does not grow
    /// the buffers one step at a time.
    pub fn reserve(&mut self, names: usize, bytes: usize) {
        self.text.reserve(bytes);
        self.ends.reserve(names);
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }

    pub fn push(&mut self, name: &str) {
        self.text.push_str(name);
        self.ends.push(self.text.len() as u32);
    }

    /// Appends a name built in place (e.g. with `write!`) by `build`.
    pub fn push_with(&mut self, build: impl FnOnce(&mut String)) {
        build(&mut self.text);
        self.ends.push(self.text.len() as u32);
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    #[inline]
    pub fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> {
        (0..self.len()).map(|i| self.get(i))
    }

    /// The same names in the order `order` gives (indices into this list), laid out in
    /// that order, so walking them in order reads memory front to back.
    pub fn reordered(&self, order: &[u32]) -> NameList {
        let mut out = NameList::with_capacity(order.len(), self.text.len());
        for &i in order {
            out.push(self.get(i as usize));
        }
        out
    }
}

/// How far a directory listing has got. Engines read the next batch from here, as
/// readdir(3) refills its buffer, so a long listing is spread over the operations that
/// consume it instead of being one long call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirCursor {
    /// Where the next batch starts (a `d_off`, an NFS cookie); 0 at the beginning.
    pub offset: u64,
    /// NFS cookie verifier of the listing; unused locally.
    pub verifier: [u8; 8],
    /// The listing has ended; no further batch holds names.
    pub done: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_reorder() {
        let mut list = NameList::default();
        for name in ["a", "", "ccc", "dd"] {
            list.push(name);
        }
        list.push_with(|s| s.push_str("e5"));
        assert_eq!(list.len(), 5);
        assert_eq!(
            list.iter().collect::<Vec<_>>(),
            ["a", "", "ccc", "dd", "e5"]
        );
        let back = list.reordered(&[4, 2, 0]);
        assert_eq!(back.iter().collect::<Vec<_>>(), ["e5", "ccc", "a"]);
        list.clear();
        assert!(list.is_empty());
        list.push("x");
        assert_eq!(list.get(0), "x");
    }
}
