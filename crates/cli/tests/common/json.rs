//! JSON checks: the shape of storbench's fio JSON against fio's, a structural validator for
//! the subset of JSON Schema that `docs/quick.schema.json` uses, and fio's percentile rule
//! applied to json+ `bins`.

use serde_json::{Map, Value};

/// Where fio's JSON and ours differ in shape: keys (and their order), nesting, array
/// lengths and value types (integer, float, string, bool, object, array). Values are not
/// compared, except that the keys of data-dependent maps (`bins`, option maps) are free.
/// Returns one line per difference; empty when the shapes agree.
pub fn shape_diff(fio: &Value, ours: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_at("", fio, ours, &mut out);
    out
}

fn diff_at(path: &str, fio: &Value, ours: &Value, out: &mut Vec<String>) {
    match (fio, ours) {
        (Value::Object(a), Value::Object(b)) => diff_objects(path, a, b, out),
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                out.push(format!(
                    "{path}: fio has {} entries, ours {}",
                    a.len(),
                    b.len()
                ));
            }
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff_at(&format!("{path}[{i}]"), x, y, out);
            }
        }
        _ if kind(fio) == kind(ours) => {}
        _ => out.push(format!(
            "{path}: fio has {} ({fio}), ours {} ({ours})",
            kind(fio),
            kind(ours)
        )),
    }
}

fn diff_objects(path: &str, a: &Map<String, Value>, b: &Map<String, Value>, out: &mut Vec<String>) {
    let free_keys = ["/bins", "/job options", "/global options"]
        .iter()
        .any(|s| path.ends_with(s));
    if free_keys {
        if let Some((k, v)) = a
            .iter()
            .chain(b.iter())
            .find(|(_, v)| !v.is_string() && !v.is_u64())
        {
            out.push(format!("{path}/{k}: unexpected value {v}"));
        }
        return;
    }
    let ka: Vec<&String> = a.keys().collect();
    let kb: Vec<&String> = b.keys().collect();
    if ka != kb {
        out.push(format!(
            "{path}: keys differ\n  fio:  {ka:?}\n  ours: {kb:?}"
        ));
    }
    for (k, va) in a {
        if let Some(vb) = b.get(k) {
            diff_at(&format!("{path}/{k}"), va, vb, out);
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Validates `doc` against `schema`, supporting what docs/quick.schema.json uses: `type`,
/// `const`, `enum`, `required`, `properties`, `additionalProperties: false`, `items`,
/// `minimum` and local `$ref`s. Returns the violations.
pub fn validate(schema: &Value, doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, schema, doc, "", &mut out);
    out
}

fn check(root: &Value, s: &Value, v: &Value, path: &str, out: &mut Vec<String>) {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let target = r
            .strip_prefix("#/")
            .map(|p| p.split('/').fold(root, |node, key| &node[key]))
            .unwrap_or(&Value::Null);
        assert!(!target.is_null(), "schema: unresolved $ref {r}");
        return check(root, target, v, path, out);
    }
    if let Some(t) = s.get("type").and_then(Value::as_str)
        && !has_type(v, t)
    {
        out.push(format!("{path}: {v} is not of type {t}"));
        return;
    }
    if let Some(c) = s.get("const")
        && c != v
    {
        out.push(format!("{path}: {v} is not {c}"));
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array)
        && !e.contains(v)
    {
        out.push(format!("{path}: {v} is not one of {e:?}"));
    }
    if let (Some(min), Some(x)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64())
        && x < min
    {
        out.push(format!("{path}: {x} < minimum {min}"));
    }
    if let Some(obj) = v.as_object() {
        check_object(root, s, obj, path, out);
    }
    if let (Some(items), Some(arr)) = (s.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            check(root, items, x, &format!("{path}[{i}]"), out);
        }
    }
}

fn check_object(
    root: &Value,
    s: &Value,
    obj: &Map<String, Value>,
    path: &str,
    out: &mut Vec<String>,
) {
    let props = s.get("properties").and_then(Value::as_object);
    for r in s
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = r.as_str().unwrap_or_default();
        if !obj.contains_key(key) {
            out.push(format!("{path}: required key {key} missing"));
        }
    }
    let closed = s.get("additionalProperties") == Some(&Value::Bool(false));
    for (k, x) in obj {
        match props.and_then(|p| p.get(k)) {
            Some(sub) => check(root, sub, x, &format!("{path}/{k}"), out),
            None if closed => out.push(format!("{path}: key {k} not allowed")),
            None => {}
        }
    }
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "null" => v.is_null(),
        _ => panic!("schema: unsupported type {t}"),
    }
}

/// fio's percentile rule on a json+ `bins` map: the value of the first bucket whose running
/// count reaches `p`% of all samples. `p` is given in hundredths of a percent (9995 for
/// 99.95) so the comparison is exact; at an exact boundary fio's long-double arithmetic may
/// pick this bucket or the next, so both are returned (equal when not at a boundary).
pub fn percentile_from_bins(bins: &Map<String, Value>, p_hundredths: u64) -> (u64, u64) {
    let mut buckets: Vec<(u64, u64)> = bins
        .iter()
        .map(|(k, v)| (k.parse().unwrap(), v.as_u64().unwrap()))
        .collect();
    buckets.sort_unstable();
    let total: u64 = buckets.iter().map(|b| b.1).sum();
    let need = u128::from(p_hundredths) * u128::from(total);
    let mut run = 0u64;
    for (i, (value, count)) in buckets.iter().enumerate() {
        run += count;
        let have = u128::from(run) * 10_000;
        if have >= need {
            let next = if have == need {
                buckets.get(i + 1).map_or(*value, |b| b.0)
            } else {
                *value
            };
            return (*value, next);
        }
    }
    let last = buckets.last().map_or(0, |b| b.0);
    (last, last)
}
