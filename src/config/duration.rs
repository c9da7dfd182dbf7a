//! Durations as people write them: `90s`, `5m`, `1h30m`, `1h 30m`, `500ms` (the grammar of
//! the `humantime` crate), or a bare number of seconds. Every setting has its range, so a
//! value that would spin (zero) or never fire (years) stops the process at start.

use std::time::Duration;

use serde::Deserialize;

/// The values a duration setting accepts.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub min: Duration,
    pub max: Duration,
    /// Whether only whole seconds make sense (a Lease counts whole seconds).
    pub whole_seconds: bool,
    /// The range as the error shows it.
    pub shown: &'static str,
}

/// `resyncPeriod`: a drift check at most every second, at least once a day.
pub const RESYNC_PERIOD: Bounds = Bounds {
    min: Duration::from_secs(1),
    max: Duration::from_secs(24 * 3600),
    whole_seconds: false,
    shown: "1s to 24h",
};

/// `errorReplaceDelay`: a server in ERROR is replaced after a second at the earliest
/// (its fault read first), an hour at the latest (a group short of a replica that long).
pub const ERROR_REPLACE_DELAY: Bounds = Bounds {
    min: Duration::from_secs(1),
    max: Duration::from_secs(3600),
    whole_seconds: false,
    shown: "1s to 1h",
};

/// `--lease-duration`: renewed every third of it, so under two seconds a replica would
/// spend its time renewing; over ten minutes a failover would wait that long.
pub const LEASE_DURATION: Bounds = Bounds {
    min: Duration::from_secs(2),
    max: Duration::from_secs(600),
    whole_seconds: true,
    shown: "2s to 10m",
};

/// Parses any duration, however long or short; [`Bounds::parse`] checks its range.
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    match text.parse::<u64>() {
        Ok(seconds) => Ok(Duration::from_secs(seconds)),
        Err(_) => humantime::parse_duration(text)
            .map_err(|e| format!("invalid duration {text:?} ({e}): write e.g. 90s, 5m or 1h30m")),
    }
}

impl Bounds {
    /// Parses `text` and checks it lies within these bounds; the error names the value.
    pub fn parse(&self, text: &str) -> Result<Duration, String> {
        let value = parse(text)?;
        let shown = text.trim();
        if value < self.min || value > self.max {
            return Err(format!("{shown:?} is out of range: use {}", self.shown));
        }
        if self.whole_seconds && value.subsec_nanos() != 0 {
            return Err(format!("{shown:?} is not a whole number of seconds"));
        }
        Ok(value)
    }
}

/// A duration as a YAML file may hold it: text (`5m`), or a bare number of seconds.
#[derive(Deserialize)]
#[serde(untagged, expecting = "a duration such as 90s, 5m or 1h30m")]
pub enum Written {
    Text(String),
    Seconds(u64),
}

impl Written {
    pub fn text(&self) -> String {
        match self {
            Written::Text(text) => text.clone(),
            Written::Seconds(seconds) => seconds.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn units_bare_seconds_and_their_ranges() {
        assert_eq!(parse("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse(" 300 "), Ok(Duration::from_secs(300)));
        assert_eq!(parse("1500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        for bad in ["", "m", "5 lightyears", "-5s", "5m!"] {
            let e = parse(bad).expect_err(bad);
            assert!(e.starts_with("invalid duration"), "{bad}: {e}");
        }
        let zero = LEASE_DURATION.parse("0").expect_err("zero");
        assert_eq!(zero, "\"0\" is out of range: use 2s to 10m");
        assert!(LEASE_DURATION.parse("2500ms").is_err(), "not whole seconds");
        assert_eq!(LEASE_DURATION.parse("15s"), Ok(Duration::from_secs(15)));
        assert!(RESYNC_PERIOD.parse("25h").is_err());
        assert!(RESYNC_PERIOD.parse("999999999999999999999s").is_err());
        assert_eq!(RESYNC_PERIOD.parse("24h"), Ok(Duration::from_secs(86400)));
    }

    proptest! {
        /// Whatever the text: a value within the bounds, or an error quoting the text.
        #[test]
        fn any_text_gives_a_value_in_range_or_an_error_naming_it(text in "\\PC{0,24}") {
            match RESYNC_PERIOD.parse(&text) {
                Ok(value) => prop_assert!(RESYNC_PERIOD.min <= value && value <= RESYNC_PERIOD.max),
                Err(e) => prop_assert!(e.contains(&format!("{:?}", text.trim())), "{}", e),
            }
        }

        /// Numbers and units, with and without spaces, as people write them.
        #[test]
        fn unit_soup_never_panics(parts in proptest::collection::vec(
            ("[0-9]{0,25}", prop_oneof![
                Just(""), Just("s"), Just("m"), Just("h"), Just("ms"), Just("d"), Just(" "),
                Just("min"), Just("µs"), Just("ns"), Just("y"), Just("-"), Just(".")
            ]), 0..6)) {
            let text: String = parts.iter().map(|(n, u)| format!("{n}{u}")).collect();
            let _ = LEASE_DURATION.parse(&text);
        }

        /// What the bounds accept, written back the way humantime prints it, reads the same.
        #[test]
        fn accepted_values_round_trip(seconds in 1u64..=86_400) {
            let value = Duration::from_secs(seconds);
            let written = humantime::format_duration(value).to_string();
            prop_assert_eq!(RESYNC_PERIOD.parse(&written), Ok(value));
            prop_assert_eq!(RESYNC_PERIOD.parse(&seconds.to_string()), Ok(value));
        }
    }
}
