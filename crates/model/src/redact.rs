//! Secrets out of everything storbench prints, logs, saves or renders. iSCSI URLs carry
//! CHAP secrets (`iscsi://user%secret@…`, `?target_password=…`) that engines need as typed,
//! so they flow through job names, errors and the result; they are masked on the way out.

use std::borrow::Cow;

use crate::result::RunResult;

pub use storbench_job::redact::{MASK, text};

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
        use crate::result::{Note, NoteLevel, RESULT_SCHEMA, RunMode};
        let secret = "iscsi://u%pw@h/t/1?target_password=pw2";
        let mut r = RunResult {
            schema: RESULT_SCHEMA,
            mode: RunMode::Quick,
            tool_version: "t".into(),
            started_unix_ms: 0,
            finished_unix_ms: 0,
            command_line: vec!["storbench".into(), secret.into()],
            job_files: vec![],
            global_options: vec![("filename".into(), secret.into())],
            groups: vec![],
            disks: vec![],
            nics: vec![],
            system_cpu: None,
            notes: vec![Note {
                level: NoteLevel::Warning,
                code: "warn.x".into(),
                message: format!("could not open {secret}"),
            }],
            environment: None,
            bonnie: None,
            repeats: None,
            interrupted: false,
            verdicts: Vec::new(),
            hosts: None,
            server_stats: None,
            diagnosis: None,
        };
        run(&mut r).unwrap();
        let all = serde_json::to_string(&r).unwrap();
        assert!(!all.contains("pw"), "{all}");
        assert_eq!(r.command_line[1], "iscsi://u%***@h/t/1?target_password=***");
    }
}
