//! Reading a `GET /metrics` answer as Prometheus would: the text exposition format (0.0.4) parsed
//! into its samples, checked on the way (every sample's family declared by a `# TYPE` line before
//! it, each series once, every value a number), so that tests compare values, not substrings.

use std::collections::HashMap;

/// The content type of the text format, up to its parameters' end (`; charset=...` may follow).
pub const TEXT_FORMAT: &str = "text/plain; version=0.0.4";

/// One scrape's samples, by series as written: `name` or `name{label="value",...}`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scrape {
    pub samples: HashMap<String, f64>,
}

impl Scrape {
    /// Parses an exposition. Panics, saying where, on anything a Prometheus server would refuse
    /// that this checks (an undeclared family, a repeated series, a value that is no number).
    pub fn parse(text: &str) -> Scrape {
        let mut declared: Vec<&str> = Vec::new();
        let mut samples = HashMap::new();
        for line in text.lines() {
            if let Some(declaration) = line.strip_prefix("# TYPE ") {
                let (family, kind) = declaration
                    .split_once(' ')
                    .unwrap_or_else(|| panic!("not `# TYPE name kind`: {line}"));
                assert!(
                    ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                    "unknown metric type: {line}"
                );
                declared.push(family);
                continue;
            }
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {line}"));
            let value: f64 = match value {
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                number => number.parse().unwrap_or_else(|_| panic!("not a number: {line}")),
            };
            let name = series.split('{').next().unwrap_or_default();
            let is_declared = declared.iter().any(|family| {
                name == *family
                    || ["_bucket", "_sum", "_count"]
                        .iter()
                        .any(|suffix| name.strip_suffix(suffix) == Some(family))
            });
            assert!(is_declared, "{name} has no `# TYPE` line before it");
            assert!(
                samples.insert(series.to_owned(), value).is_none(),
                "{series} appears twice"
            );
        }
        Scrape { samples }
    }

    /// The value of `series`, which must be there (else a panic listing what is).
    pub fn value(&self, series: &str) -> f64 {
        match self.samples.get(series) {
            Some(value) => *value,
            None => {
                let mut known: Vec<&String> = self.samples.keys().collect();
                known.sort();
                panic!("no {series} among {known:#?}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXPOSITION: &str = "# HELP up Whether it is up.\n# TYPE up gauge\nup 1\n\
        # TYPE calls_total counter\ncalls_total{outcome=\"ok\"} 3\n\
        # TYPE took_seconds histogram\ntook_seconds_bucket{le=\"+Inf\"} 2\ntook_seconds_sum 0.5\ntook_seconds_count 2\n";

    #[test]
    fn samples_are_read_by_series() {
        let scrape = Scrape::parse(EXPOSITION);
        assert_eq!(scrape.samples.len(), 5);
        assert_eq!(scrape.value("up"), 1.0);
        assert_eq!(scrape.value("calls_total{outcome=\"ok\"}"), 3.0);
        assert_eq!(scrape.value("took_seconds_sum"), 0.5);
    }

    #[test]
    #[should_panic(expected = "has no `# TYPE` line")]
    fn an_undeclared_family_is_refused() {
        Scrape::parse("up 1\n");
    }

    #[test]
    #[should_panic(expected = "appears twice")]
    fn a_repeated_series_is_refused() {
        Scrape::parse("# TYPE up gauge\nup 1\nup 0\n");
    }
}
