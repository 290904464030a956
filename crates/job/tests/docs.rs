//! docs/fio-compat.md must be exactly what the option table generates.
//! Regenerate with `UPDATE_DOCS=1 cargo test -p storbench-job --test docs`.

use std::path::Path;

#[test]
fn fio_compat_md_is_generated_from_the_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/fio-compat.md");
    let want = storbench_job::fio_compat_markdown();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, &want).expect("write docs/fio-compat.md");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/fio-compat.md is out of date; run UPDATE_DOCS=1 cargo test -p storbench-job --test docs"
    );
}

#[test]
fn the_page_names_every_option_and_every_unsupported_name() {
    let page = storbench_job::fio_compat_markdown();
    for o in storbench_job::options::all() {
        assert!(page.contains(&format!("| `{}`", o.name)), "{}", o.name);
    }
    for n in storbench_job::options::UNSUPPORTED.names() {
        assert!(page.contains(&format!("`{n}`")), "{n}");
    }
    for f in storbench_job::GLOBAL_FLAGS {
        assert!(page.contains(&format!("`--{}`", f.name)), "{}", f.name);
    }
}
