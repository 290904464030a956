//! Masking of secrets in any text: URL passwords (`scheme://user%secret@…`) and the values
//! of options named like passwords or secrets (`?target_password=…`). Core masks a whole
//! result with it (core's `redact`); a [`crate::target::Target`] shows its URL through it.

use std::borrow::Cow;

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// `text` with every URL password (`scheme://user%secret@` or `user:secret@`) and every
/// value of an option whose name holds `password` or `secret` masked.
pub fn text(text: &str) -> Cow<'_, str> {
    let masked = mask_options(&mask_userinfo(text));
    if masked == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(masked)
    }
}

/// Masks the password of every `scheme://user%password@host` (or `user:password@`).
/// An `snmp://community@host` loses its whole community.
fn mask_userinfo(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c == '/' || c == '?' || c == '"' || c == '\'' || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            // `[user@]host`: a help text's optional part, not a URL (no host starts with `]`).
            Some(at) if authority[at + 1..].starts_with(']') => out.push_str(authority),
            // An SNMP community is a password by itself.
            Some(at) if head.ends_with("snmp://") => {
                out.push_str(MASK);
                out.push_str(&authority[at..]);
            }
            Some(at) => {
                let user_end = authority[..at].find(['%', ':']).unwrap_or(at);
                out.push_str(&authority[..user_end]);
                if user_end < at {
                    out.push_str(&authority[user_end..=user_end]);
                    out.push_str(MASK);
                }
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Masks the value of every `…password…=value` or `…secret…=value` (up to `&`, a quote or
/// white space); a `…-file=` or `…_file=` option (`?secret-file=PATH`) names the file that
/// holds the secret, which is no secret.
fn mask_options(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(eq) = rest.find('=') {
        let key_start = rest[..eq]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .map_or(0, |i| i + 1);
        let key = rest[key_start..eq].to_ascii_lowercase();
        out.push_str(&rest[..=eq]);
        rest = &rest[eq + 1..];
        let names_a_file = key.ends_with("-file") || key.ends_with("_file");
        if (key.contains("password") || key.contains("secret")) && !names_a_file {
            let end = rest
                .find(|c: char| c == '&' || c == '"' || c == '\'' || c.is_whitespace())
                .unwrap_or(rest.len());
            if end > 0 {
                out.push_str(MASK);
            }
            rest = &rest[end..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::text;

    #[test]
    fn the_file_that_holds_a_secret_is_named_and_the_secret_masked() {
        assert_eq!(
            text("iscsi://u@h/iqn/1?secret-file=/etc/chap&target_secret=x y"),
            "iscsi://u@h/iqn/1?secret-file=/etc/chap&target_secret=*** y"
        );
        assert_eq!(
            text("?target_secret_file=PATH ?password=p"),
            "?target_secret_file=PATH ?password=***"
        );
    }

    #[test]
    fn help_texts_optional_user_parts_are_no_secrets() {
        let form = "expected snmp://[community@]host[:port] or iscsi://[user%secret@]host";
        assert_eq!(text(form), form);
        assert_eq!(text("snmp://public@host"), "snmp://***@host");
    }
}
