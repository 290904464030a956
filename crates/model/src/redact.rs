//! Secrets out of everything storbench prints, logs, saves or renders. iSCSI URLs carry
//! CHAP secrets (`iscsi://user%secret@…`, `?target_password=…`) that engines need as typed,
//! so they flow through job names, errors and the result; they are masked on the way out:
//! URL passwords (`scheme://user%secret@…`) and the values of options named like passwords
//! or secrets (`?target_password=…`) in any text ([`text`]), every string of a result
//! ([`run`]). The job's targets show their URLs through [`text`] too.

use std::borrow::Cow;

use crate::result::RunResult;

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

/// Masks secrets in every string of a result (command line, targets, options, errors,
/// notes), so nothing rendered or saved from it carries them.
pub fn run(run: &mut RunResult) -> Result<(), String> {
    let mut value = serde_json::to_value(&*run).map_err(|e| e.to_string())?;
    if !mask_strings(&mut value) {
        return Ok(());
    }
    *run = serde_json::from_value(value).map_err(|e| format!("masking secrets: {e}"))?;
    Ok(())
}

/// Masks every string in `v`; true if any changed.
fn mask_strings(v: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::String(s) => match text(s) {
            Cow::Owned(masked) => {
                *s = masked;
                true
            }
            Cow::Borrowed(_) => false,
        },
        Value::Array(items) => items.iter_mut().fold(false, |c, i| mask_strings(i) | c),
        Value::Object(map) => map.values_mut().fold(false, |c, i| mask_strings(i) | c),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_urls_and_options_are_masked() {
        let t = |s: &str| text(s).into_owned();
        assert_eq!(
            t(
                "iscsi://alice%s3cret@10.0.0.7:3261/iqn.x:d/1?target_user=t&target_password=p2&data_digest=none"
            ),
            "iscsi://alice%***@10.0.0.7:3261/iqn.x:d/1?target_user=t&target_password=***&data_digest=none"
        );
        assert_eq!(
            t("storbench fio --filename=iscsi://u%pw@h/iqn.a:b/0 --name=x"),
            "storbench fio --filename=iscsi://u%***@h/iqn.a:b/0 --name=x"
        );
        assert_eq!(t("http://bob:hunter2@h/x"), "http://bob:***@h/x");
        // An SNMP community is a secret as a whole.
        assert_eq!(
            t("--server-stats snmp://s3cret@nas:161 x"),
            "--server-stats snmp://***@nas:161 x"
        );
        assert_eq!(t("x?chap-secret=abc"), "x?chap-secret=***");
        assert_eq!(t("iscsi://u@h/t/1"), "iscsi://u@h/t/1");
        assert!(matches!(text("nfs://h/export?uid=1"), Cow::Borrowed(_)));
    }

    #[test]
    fn every_string_of_a_result_is_masked() {
        use crate::result::{Note, NoteLevel, RunMode};
        let secret = "iscsi://u%pw@h/t/1?target_password=pw2";
        let mut r = RunResult {
            command_line: vec!["storbench".into(), secret.into()],
            global_options: vec![("filename".into(), secret.into())],
            notes: vec![Note {
                level: NoteLevel::Warning,
                code: "warn.x".into(),
                message: format!("could not open {secret}"),
            }],
            ..RunResult::new(RunMode::Quick, "t".into(), 0, 0)
        };
        run(&mut r).unwrap();
        let all = serde_json::to_string(&r).unwrap();
        assert!(!all.contains("pw"), "{all}");
        assert_eq!(r.command_line[1], "iscsi://u%***@h/t/1?target_password=***");
    }

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
