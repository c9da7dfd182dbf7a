//! A group's schedules: a CronJob's five fields read in an IANA time zone, each start
//! raising the floor for a duration. Time zones come from the tz database built into
//! the binary, so a schedule means the same in any container image.

use std::time::Duration;

use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;

/// What a schedule says, parsed.
#[derive(Clone, Debug)]
pub struct Schedule {
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    weekdays: u8,
    /// Both day fields restricted: a day matches either (cron's rule).
    either_day: bool,
    zone: TimeZone,
    duration: Duration,
}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

impl Schedule {
    /// Parses `cron` (five fields) in `zone` (default UTC); the error says what is wrong.
    pub fn parse(cron: &str, zone: Option<&str>, duration: Duration) -> Result<Self, String> {
        let fields: Vec<&str> = cron.split_whitespace().collect();
        let [minute, hour, day, month, weekday] = fields[..] else {
            return Err(format!(
                "cron {cron:?} has {} fields; a schedule has five: minute hour day-of-month month day-of-week",
                fields.len()
            ));
        };
        let zone = match zone {
            None | Some("") => TimeZone::UTC,
            Some(name) => TimeZone::get(name).map_err(|_| {
                format!(
                    "time zone {name:?} is not an IANA time zone (Asia/Tokyo, Europe/Paris, UTC)"
                )
            })?,
        };
        let weekdays = field(weekday, 0, 7, &WEEKDAYS, 0)?;
        // 7 is Sunday too.
        let weekdays = (weekdays | (weekdays >> 7)) & 0x7f;
        Ok(Self {
            minutes: field(minute, 0, 59, &[], 0)?,
            hours: u32::try_from(field(hour, 0, 23, &[], 0)?).unwrap_or(u32::MAX),
            days: u32::try_from(field(day, 1, 31, &[], 0)?).unwrap_or(u32::MAX),
            months: u16::try_from(field(month, 1, 12, &MONTHS, 1)?).unwrap_or(u16::MAX),
            weekdays: u8::try_from(weekdays).unwrap_or(u8::MAX),
            either_day: day != "*" && weekday != "*",
            zone,
            duration,
        })
    }

    /// Whether some start lies within `duration` before `now`.
    pub fn holds_at(&self, now: Timestamp) -> bool {
        self.starts_between(now - self.span(), now)
            .any(|start| now < start + self.span())
    }

    /// The next moment after `now` (within `horizon`) at which the schedule starts or
    /// ends holding: when the group should look again.
    pub fn next_change(&self, now: Timestamp, horizon: Duration) -> Option<Timestamp> {
        let ends = self
            .starts_between(now - self.span(), now)
            .map(|start| start + self.span())
            .filter(|end| *end > now);
        let until = now + jiff::SignedDuration::try_from(horizon).unwrap_or_default();
        let starts = self.starts_between(now, until).filter(|s| *s > now);
        ends.chain(starts).min()
    }

    fn span(&self) -> jiff::SignedDuration {
        jiff::SignedDuration::try_from(self.duration).unwrap_or_default()
    }

    /// The minutes in `[from, to]` the cron names, in order.
    fn starts_between(&self, from: Timestamp, to: Timestamp) -> impl Iterator<Item = Timestamp> {
        let first = from.as_second().div_euclid(60) * 60;
        let last = to.as_second().div_euclid(60);
        (first / 60..=last)
            .filter_map(|minute| Timestamp::from_second(minute * 60).ok())
            .filter(move |at| *at >= from && self.names(self.zone.to_datetime(*at)))
    }

    fn names(&self, local: DateTime) -> bool {
        let bit = |set: u64, n: i8| n >= 0 && set & (1 << n) != 0;
        let day = bit(self.days.into(), local.day());
        let weekday = bit(
            self.weekdays.into(),
            local.weekday().to_sunday_zero_offset(),
        );
        let day_ok = if self.either_day {
            day || weekday
        } else {
            day && weekday
        };
        bit(self.minutes, local.minute())
            && bit(self.hours.into(), local.hour())
            && bit(self.months.into(), local.month())
            && day_ok
    }
}

/// One cron field as a bit set over `low..=high`: `*`, `n`, `a-b`, `*/s`, `a-b/s`, lists
/// of these; names (`names[i]` is `i + base`) where the field has them.
fn field(text: &str, low: u32, high: u32, names: &[&str], base: u32) -> Result<u64, String> {
    let mut set = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => (range, step.parse::<u32>().ok().filter(|s| *s > 0)),
            None => (part, Some(1)),
        };
        let step = step.ok_or_else(|| format!("{part:?}: a step is a number above 0"))?;
        let (a, b) = match range {
            "*" => (low, high),
            _ => match range.split_once('-') {
                Some((a, b)) => (value(a, names, base)?, value(b, names, base)?),
                None if part.contains('/') => (value(range, names, base)?, high),
                None => {
                    let v = value(range, names, base)?;
                    (v, v)
                }
            },
        };
        if a < low || b > high || a > b {
            return Err(format!("{part:?} is outside {low}-{high}"));
        }
        for n in (a..=b).step_by(step as usize) {
            set |= 1 << n;
        }
    }
    Ok(set)
}

fn value(text: &str, names: &[&str], base: u32) -> Result<u32, String> {
    if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(text)) {
        return Ok(u32::try_from(i).unwrap_or(u32::MAX) + base);
    }
    text.parse().map_err(|_| {
        format!(
            "{text:?} is not a number{}",
            if names.is_empty() { "" } else { " or a name" }
        )
    })
}

/// Used by the tests: a timestamp from RFC 3339 text.
#[cfg(test)]
fn at(text: &str) -> Timestamp {
    text.parse().expect("a timestamp")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEN_HOURS: Duration = Duration::from_secs(36_000);

    #[test]
    fn a_weekday_morning_in_tokyo_holds_for_its_duration() {
        let s = Schedule::parse("0 9 * * 1-5", Some("Asia/Tokyo"), TEN_HOURS).expect("valid");
        // Monday 2026-11-30, 09:00 in Tokyo is 00:00 UTC.
        assert!(!s.holds_at(at("2026-11-29T23:59:00Z")));
        assert!(s.holds_at(at("2026-11-30T00:00:00Z")));
        assert!(s.holds_at(at("2026-11-30T09:59:00Z")));
        assert!(!s.holds_at(at("2026-11-30T10:00:00Z")));
        // Saturday 2026-12-05 09:00 Tokyo: not a weekday.
        assert!(!s.holds_at(at("2026-12-05T01:00:00Z")));
    }

    #[test]
    fn the_next_change_is_the_next_start_or_the_current_end() {
        let s = Schedule::parse("*/15 * * * *", None, Duration::from_secs(120)).expect("valid");
        let hour = Duration::from_secs(3600);
        assert_eq!(
            s.next_change(at("2026-12-01T10:05:00Z"), hour),
            Some(at("2026-12-01T10:15:00Z"))
        );
        assert_eq!(
            s.next_change(at("2026-12-01T10:15:30Z"), hour),
            Some(at("2026-12-01T10:17:00Z"))
        );
        assert_eq!(
            s.next_change(at("2026-12-01T10:05:00Z"), Duration::from_secs(60)),
            None
        );
    }

    #[test]
    fn names_steps_lists_and_sunday_as_seven_are_cron_s() {
        let s = Schedule::parse("30 8-18/2 * JAN,dec 7", None, TEN_HOURS).expect("valid");
        // Sunday 2026-12-06 10:30 UTC.
        assert!(s.names(DateTime::constant(2026, 12, 6, 10, 30, 0, 0)));
        assert!(!s.names(DateTime::constant(2026, 12, 6, 11, 30, 0, 0)));
        assert!(!s.names(DateTime::constant(2026, 11, 1, 10, 30, 0, 0)));
        // Both day fields restricted: either matches.
        let s = Schedule::parse("0 0 1 * MON", None, TEN_HOURS).expect("valid");
        assert!(s.names(DateTime::constant(2026, 12, 1, 0, 0, 0, 0)));
        assert!(s.names(DateTime::constant(2026, 12, 7, 0, 0, 0, 0)));
        assert!(!s.names(DateTime::constant(2026, 12, 8, 0, 0, 0, 0)));
    }

    #[test]
    fn a_wrong_schedule_says_what_is_wrong() {
        let wrong = |cron: &str, zone: Option<&str>| {
            Schedule::parse(cron, zone, TEN_HOURS).expect_err("refused")
        };
        assert!(wrong("0 9 * *", None).contains("has 4 fields"));
        assert!(wrong("61 9 * * *", None).contains("outside 0-59"));
        assert!(wrong("0 9 * * FUN", None).contains("not a number or a name"));
        assert!(wrong("*/0 9 * * *", None).contains("step"));
        assert!(wrong("0 9 * * *", Some("Mars/Olympus")).contains("not an IANA time zone"));
    }
}
