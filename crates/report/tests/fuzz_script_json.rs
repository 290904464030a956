//! The `script_json` fuzz target's property on a stable toolchain: hostile seeds and
//! generated text.

use proptest::prelude::*;
use storbench_report::fuzzing::script_json;

#[test]
fn hostile_seeds_hold() {
    for seed in [
        "</script><script>alert(1)</script>",
        "<!--\0-->\0</SCRIPT >",
        "<\\/script>\\u003c&amp;",
        "\u{2028}\u{2029}\0\u{1b}[2J",
        "",
    ] {
        script_json(seed.as_bytes());
    }
}

proptest! {
    #[test]
    fn any_text_holds(text in "[<>!/&a-zA-Z\\\\\"\u{2028}\u{2029}\0-]{0,64}") {
        script_json(text.as_bytes());
    }

    #[test]
    fn any_bytes_hold(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        script_json(&bytes);
    }
}
