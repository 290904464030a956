//! How long a run's label or tag may be, and how any stored one is shown. New labels and
//! tags are refused beyond [`MAX_CHARS`] where they are typed; a database written by an older
//! version, or an imported file, may still hold longer ones, which every human output shows
//! cut to that length with an ellipsis (JSON and CSV outputs keep them whole).

use std::borrow::Cow;

/// The most characters a label or tag may have, and the most any output shows of one.
pub const MAX_CHARS: usize = 256;

/// `text` as shown: whole when it has at most [`MAX_CHARS`] characters, else its first
/// `MAX_CHARS - 1` and `…`. Reads at most `MAX_CHARS + 1` characters of `text`.
pub fn shown(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(MAX_CHARS) {
        None => Cow::Borrowed(text),
        Some(_) => {
            let (cut, _) = text.char_indices().nth(MAX_CHARS - 1).expect("longer");
            Cow::Owned(format!("{}…", &text[..cut]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_with_an_ellipsis() {
        let at_limit = "é".repeat(MAX_CHARS);
        assert_eq!(shown(&at_limit), at_limit.as_str());
        let long = "é".repeat(70_000);
        let cut = shown(&long);
        assert_eq!(cut.chars().count(), MAX_CHARS);
        assert!(cut.ends_with("é…"));
    }
}
