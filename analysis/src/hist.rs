//! Latency histograms from result files: HdrHistogram V2 (deflate) in base64.

use crate::error::{HistogramError, Result};
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;

/// Decodes one `histogram_v2_base64` field (values in nanoseconds).
pub fn decode(b64: &str) -> Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(HistogramError::NotBase64)?;
    Ok(Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map_err(HistogramError::DoesNotDecode)?)
}

/// Adds histograms together (an empty list gives `None`).
pub fn merge<'a>(hs: impl IntoIterator<Item = &'a Histogram<u64>>) -> Option<Histogram<u64>> {
    let mut acc: Option<Histogram<u64>> = None;
    for h in hs {
        match &mut acc {
            None => {
                let mut first = h.clone();
                first.auto(true);
                acc = Some(first);
            }
            Some(a) => {
                // auto-resize is on, so adding cannot run out of range
                let _ = a.add(h);
            }
        }
    }
    acc
}

/// The cumulative distribution: (latency in microseconds, fraction of operations at
/// or below it), one point per distinct recorded bucket, increasing.
pub fn cdf_us(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let total = h.len();
    if total == 0 {
        return Vec::new();
    }
    let mut seen = 0u64;
    let mut out = Vec::new();
    for v in h.iter_recorded() {
        seen += v.count_since_last_iteration();
        let us = h.highest_equivalent(v.value_iterated_to()) as f64 / 1000.0;
        out.push((us.max(0.001), seen as f64 / total as f64));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};

    fn encode(h: &Histogram<u64>) -> String {
        let mut buf = Vec::new();
        V2DeflateSerializer::new().serialize(h, &mut buf).unwrap();
        base64::engine::general_purpose::STANDARD.encode(&buf)
    }

    #[test]
    fn decode_round_trips_and_cdf_ends_at_one() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for v in [1_000u64, 2_000, 2_000, 50_000, 9_000_000] {
            h.record(v).unwrap();
        }
        let back = decode(&encode(&h)).unwrap();
        assert_eq!(back.len(), 5);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        let cdf = cdf_us(&back);
        assert_eq!(cdf.len(), 4);
        assert!((cdf.last().unwrap().1 - 1.0).abs() < 1e-12);
        assert!(cdf.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
        assert!(
            (cdf[0].0 - 1.0).abs() < 0.01,
            "1000 ns is 1 us: {:?}",
            cdf[0]
        );
    }

    #[test]
    fn merge_adds_counts() {
        let mut a = Histogram::<u64>::new_with_bounds(1, 1_000_000, 3).unwrap();
        let mut b = a.clone();
        a.record(10).unwrap();
        b.record(20).unwrap();
        let m = merge([&a, &b]).unwrap();
        assert_eq!(m.len(), a.len() + b.len());
        assert!(merge(std::iter::empty()).is_none());
    }

    #[test]
    fn bad_base64_is_an_error() {
        assert!(decode("###").is_err());
        assert!(decode("aGVsbG8=").is_err());
    }
}
