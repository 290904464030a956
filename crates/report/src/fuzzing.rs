//! The body of the cargo-fuzz target in `fuzz/`, kept here so that the normal test suite
//! checks the same property on a stable toolchain (`tests/fuzz_script_json.rs`). Not an
//! API: it panics when the property it checks does not hold.

use serde_json::{Map, Value};

/// Any bytes as text (split at NUL into strings) placed in the report's embedded data as
/// keys, values and run names: [`crate::html::script_json`] must give JSON that reads back
/// as the same value and holds nothing that ends a `<script>` element, opens a comment or
/// ends a line of script.
pub fn script_json(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parts: Vec<&str> = text.split('\0').collect();
    let mut object = Map::new();
    for (i, part) in parts.iter().enumerate() {
        object.insert((*part).to_string(), Value::from(i));
    }
    let value = serde_json::json!({
        "runs": parts,
        "names": object,
        "nested": [{ "title": text }],
    });
    let json = crate::html::script_json(&value).expect("serialises");
    let lower = json.to_ascii_lowercase();
    assert!(!lower.contains("</script"), "closes the element: {json}");
    assert!(!json.contains("<!--"), "opens a comment: {json}");
    assert!(
        !json.contains(['\u{2028}', '\u{2029}']),
        "ends a line: {json}"
    );
    let back: Value = serde_json::from_str(&json).expect("is JSON");
    assert_eq!(back, value, "does not read back as written");
}
