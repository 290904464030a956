//! Terminal safety for human outputs. Job names, labels, tags, targets and imported fields
//! are the user's (or an imported file's) text: a control character in them (`ESC ]0;…BEL`
//! retitles the terminal, `ESC [2J` clears it) must not reach a terminal raw. Every human
//! renderer writes through [`Escaped`] or [`escape`]; JSON, CSV and terse outputs keep the
//! text exact.
//!
//! C0 controls other than newline and tab, DEL and the C1 controls (U+0080–U+009F, which
//! some terminals obey like `ESC [`) are written as `\xNN` (C0, DEL) or `\u{NN}` (C1).

use std::borrow::Cow;
use std::io::{self, Write};

fn is_control(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c)
}

fn push_escaped(out: &mut String, c: char) {
    use std::fmt::Write as _;
    let _ = if (c as u32) < 0x80 {
        write!(out, "\\x{:02x}", c as u32)
    } else {
        write!(out, "\\u{{{:x}}}", c as u32)
    };
}

/// `text` with its control characters escaped; borrowed when there are none.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_control(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A writer that escapes control characters in everything written through it. Renderers
/// write UTF-8; a character split across two writes is held until its end arrives, and
/// bytes that are not UTF-8 are escaped as `\xNN`.
pub struct Escaped<'a> {
    inner: &'a mut dyn Write,
    /// The start of a UTF-8 sequence whose end has not been written yet.
    pending: Vec<u8>,
}

impl<'a> Escaped<'a> {
    pub fn new(inner: &'a mut dyn Write) -> Escaped<'a> {
        Escaped {
            inner,
            pending: Vec::new(),
        }
    }

    fn write_text(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            match std::str::from_utf8(bytes) {
                Ok(text) => return self.inner.write_all(escape(text).as_bytes()),
                Err(e) => {
                    let (good, rest) = bytes.split_at(e.valid_up_to());
                    let text = std::str::from_utf8(good).unwrap_or_default();
                    self.inner.write_all(escape(text).as_bytes())?;
                    match e.error_len() {
                        None => {
                            // An incomplete sequence at the end: wait for the rest.
                            self.pending.extend_from_slice(rest);
                            return Ok(());
                        }
                        Some(n) => {
                            for b in &rest[..n] {
                                write!(self.inner, "\\x{b:02x}")?;
                            }
                            bytes = &rest[n..];
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

impl Write for Escaped<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.pending.is_empty() {
            self.write_text(buf)?;
        } else {
            let mut joined = std::mem::take(&mut self.pending);
            joined.extend_from_slice(buf);
            self.write_text(&joined)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            for b in std::mem::take(&mut self.pending) {
                write!(self.inner, "\\x{b:02x}")?;
            }
        }
        self.inner.flush()
    }
}

impl Drop for Escaped<'_> {
    fn drop(&mut self) {
        // A truncated character at the very end is written escaped, never dropped.
        for b in std::mem::take(&mut self.pending) {
            let _ = write!(self.inner, "\\x{b:02x}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_text_kept() {
        assert_eq!(
            escape("a\x1b]0;pwned\x07b\x1b[2J\u{9b}c\0"),
            "a\\x1b]0;pwned\\x07b\\x1b[2J\\u{9b}c\\x00"
        );
        assert_eq!(escape("tab\tnew\nline ünï"), "tab\tnew\nline ünï");
        assert!(matches!(escape("plain"), Cow::Borrowed(_)));
        assert_eq!(escape("del\x7f\r"), "del\\x7f\\x0d");
    }

    #[test]
    fn writer_escapes_across_split_writes() {
        let mut out = Vec::new();
        {
            let mut w = Escaped::new(&mut out);
            let text = "x\u{9b}2J ü\x1b[0m\n".as_bytes();
            for chunk in text.chunks(1) {
                w.write_all(chunk).unwrap();
            }
            w.write_all(&[0xff, b'z', 0xc3]).unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "x\\u{9b}2J ü\\x1b[0m\n\\xffz\\xc3"
        );
    }
}
