//! Prints a JSON value the way fio lays its JSON out: two-space indents, `"key" : value`,
//! floats with six decimals (`%f`), so a diff against fio's output shows only real
//! differences. Unlike fio, strings are fully escaped and non-finite floats print as 0.0,
//! so the document is always valid JSON.

use std::io::{self, Write};

use serde_json::Value;

pub fn write(v: &Value, out: &mut dyn Write) -> io::Result<()> {
    write_value(v, 0, out)?;
    writeln!(out)
}

fn indent(level: usize, out: &mut dyn Write) -> io::Result<()> {
    for _ in 0..level {
        out.write_all(b"  ")?;
    }
    Ok(())
}

fn write_value(v: &Value, level: usize, out: &mut dyn Write) -> io::Result<()> {
    match v {
        Value::Null => write!(out, "null"),
        Value::Bool(b) => write!(out, "{b}"),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => write!(out, "{u}"),
            (_, Some(i), _) => write!(out, "{i}"),
            (_, _, Some(f)) if f.is_finite() => write!(out, "{f:.6}"),
            _ => write!(out, "0.0"),
        },
        Value::String(s) => write!(out, "{}", Value::String(s.clone())),
        Value::Array(items) => {
            writeln!(out, "[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    writeln!(out, ",")?;
                }
                indent(level + 1, out)?;
                write_value(item, level + 1, out)?;
            }
            writeln!(out)?;
            indent(level, out)?;
            write!(out, "]")
        }
        Value::Object(map) => {
            writeln!(out, "{{")?;
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    writeln!(out, ",")?;
                }
                indent(level + 1, out)?;
                write!(out, "{} : ", Value::String(k.clone()))?;
                write_value(item, level + 1, out)?;
            }
            writeln!(out)?;
            indent(level, out)?;
            write!(out, "}}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lays_out_like_fio() {
        let v = json!({"fio version": "x\"y", "jobs": [{"iops": 2.5, "n": 3}], "e": {}});
        let mut out = Vec::new();
        write(&v, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "{\n  \"fio version\" : \"x\\\"y\",\n  \"jobs\" : [\n    {\n      \"iops\" : 2.500000,\n      \"n\" : 3\n    }\n  ],\n  \"e\" : {\n\n  }\n}\n"
        );
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["jobs"][0]["iops"], json!(2.5));
    }

    #[test]
    fn non_finite_floats_stay_valid() {
        let mut map = serde_json::Map::new();
        map.insert(
            "x".into(),
            Value::Number(serde_json::Number::from_f64(1.0).unwrap()),
        );
        let mut out = Vec::new();
        write(&Value::Object(map), &mut out).unwrap();
        assert!(serde_json::from_slice::<Value>(&out).is_ok());
    }
}
