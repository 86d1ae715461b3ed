use crate::{Error, Result};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// An engine's options: the properties named `<engine>.<option>` with the prefix
/// removed. Typed getters record which options were read, so [`Options::finish`] can
/// refuse a misspelt one instead of silently ignoring it, and [`Options::resolved`]
/// lists every option with the value in force (defaults included) for the result file.
#[derive(Debug, Default)]
pub struct Options {
    engine: String,
    given: BTreeMap<String, String>,
    resolved: RefCell<BTreeMap<String, String>>,
}

impl Options {
    /// Keeps the properties that start with `<engine>.`.
    pub fn from_properties<'a, I>(engine: &str, props: I) -> Options
    where
        I: IntoIterator<Item = (&'a String, &'a String)>,
    {
        let prefix = format!("{engine}.");
        let given = props
            .into_iter()
            .filter_map(|(k, v)| k.strip_prefix(&prefix).map(|o| (o.to_string(), v.clone())))
            .collect();
        Options {
            engine: engine.to_string(),
            given,
            resolved: RefCell::default(),
        }
    }

    /// Options from (option, value) pairs without the engine prefix.
    pub fn new(engine: &str, pairs: &[(&str, &str)]) -> Options {
        Options {
            engine: engine.to_string(),
            given: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            resolved: RefCell::default(),
        }
    }

    /// Sets an option unless the user gave it.
    pub fn set_default(&mut self, name: &str, value: &str) {
        self.given
            .entry(name.to_string())
            .or_insert_with(|| value.to_string());
    }

    /// Whether the user (or the driver) gave this option.
    pub fn is_set(&self, name: &str) -> bool {
        self.given.contains_key(name)
    }

    fn raw(&self, name: &str, default: &str) -> String {
        let v = self
            .given
            .get(name)
            .cloned()
            .unwrap_or_else(|| default.to_string());
        self.resolved
            .borrow_mut()
            .insert(name.to_string(), v.clone());
        v
    }

    fn bad(&self, name: &str, want: &str, got: &str) -> Error {
        Error::InvalidArgument(format!(
            "{}.{name}: expected {want}, got '{got}'",
            self.engine
        ))
    }

    pub fn string(&self, name: &str, default: &str) -> String {
        self.raw(name, default)
    }

    pub fn path(&self, name: &str, default: &str) -> PathBuf {
        PathBuf::from(self.raw(name, default))
    }

    pub fn u64(&self, name: &str, default: u64) -> Result<u64> {
        let v = self.raw(name, &default.to_string());
        v.trim()
            .parse()
            .map_err(|_| self.bad(name, "a non-negative integer", &v))
    }

    pub fn usize(&self, name: &str, default: usize) -> Result<usize> {
        self.u64(name, default as u64).map(|v| v as usize)
    }

    pub fn f64(&self, name: &str, default: f64) -> Result<f64> {
        let v = self.raw(name, &default.to_string());
        match v.trim().parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(x),
            _ => Err(self.bad(name, "a number", &v)),
        }
    }

    pub fn bool(&self, name: &str, default: bool) -> Result<bool> {
        let v = self.raw(name, if default { "true" } else { "false" });
        match v.trim() {
            "true" | "1" | "yes" | "on" => Ok(true),
            "false" | "0" | "no" | "off" => Ok(false),
            _ => Err(self.bad(name, "true or false", &v)),
        }
    }

    /// A size in bytes, with an optional K, M, G or T suffix (powers of 1024).
    pub fn bytes(&self, name: &str, default: u64) -> Result<u64> {
        let v = self.raw(name, &default.to_string());
        parse_bytes(&v).ok_or_else(|| self.bad(name, "a size such as 4096, 512M or 1G", &v))
    }

    /// One of a fixed set of words.
    pub fn choice(&self, name: &str, default: &str, allowed: &[&str]) -> Result<String> {
        let v = self.raw(name, default);
        if allowed.contains(&v.as_str()) {
            Ok(v)
        } else {
            Err(self.bad(name, &format!("one of {}", allowed.join(", ")), &v))
        }
    }

    /// Fails on an option that no getter asked for (a typo, or an option of another
    /// version), naming the options that exist.
    pub fn finish(&self) -> Result<()> {
        let known: BTreeSet<String> = self.resolved.borrow().keys().cloned().collect();
        let unknown: Vec<&String> = self.given.keys().filter(|k| !known.contains(*k)).collect();
        if let Some(first) = unknown.first() {
            let list: Vec<String> = known
                .iter()
                .map(|k| format!("{}.{k}", self.engine))
                .collect();
            return Err(Error::InvalidArgument(format!(
                "unknown option {}.{first} (options of {}: {})",
                self.engine,
                self.engine,
                list.join(", ")
            )));
        }
        Ok(())
    }

    /// Every option read so far with the value in force.
    pub fn resolved(&self) -> Vec<(String, String)> {
        self.resolved
            .borrow()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// Parses "4096", "64K", "512M", "1G", "1.5G", "2T" (powers of 1024; a trailing "B"
/// or "iB" is accepted).
pub fn parse_bytes(s: &str) -> Option<u64> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, mult) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 1u64 << 10),
        'm' | 'M' => (&t[..t.len() - 1], 1 << 20),
        'g' | 'G' => (&t[..t.len() - 1], 1 << 30),
        't' | 'T' => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    if let Ok(n) = num.trim().parse::<u64>() {
        return n.checked_mul(mult);
    }
    let x: f64 = num.trim().parse().ok()?;
    if !x.is_finite() || x < 0.0 {
        return None;
    }
    let v = x * mult as f64;
    (v < u64::MAX as f64).then_some(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_bytes("4096"), Some(4096));
        assert_eq!(parse_bytes("64K"), Some(65536));
        assert_eq!(parse_bytes("1G"), Some(1 << 30));
        assert_eq!(parse_bytes("1.5GiB"), Some(3 << 29));
        assert_eq!(parse_bytes("-1"), None);
        assert_eq!(parse_bytes("abc"), None);
        assert_eq!(parse_bytes(""), None);
    }

    #[test]
    fn unknown_option_is_refused() {
        let o = Options::new("kvell", &[("cache", "1G"), ("cahce", "2G")]);
        assert_eq!(o.bytes("cache", 0).unwrap(), 1 << 30);
        let e = o.finish().unwrap_err().to_string();
        assert!(e.contains("kvell.cahce"), "{e}");
        assert!(e.contains("kvell.cache"), "{e}");
    }

    #[test]
    fn bad_values_name_the_option() {
        let o = Options::new("sled", &[("cache", "lots"), ("flush_ms", "-3")]);
        let e = o.bytes("cache", 0).unwrap_err().to_string();
        assert!(e.contains("sled.cache") && e.contains("lots"), "{e}");
        assert!(o.u64("flush_ms", 1).is_err());
        assert_eq!(o.u64("absent", 7).unwrap(), 7);
        assert!(o.resolved().iter().any(|(k, v)| k == "absent" && v == "7"));
    }
}
