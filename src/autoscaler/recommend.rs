//! The size a group should have, from its metrics' proposals: a
//! HorizontalPodAutoscaler's rules (tolerance, stabilization windows, bounded steps,
//! `minReplicas`/`maxReplicas`), pure.

use std::collections::VecDeque;
use std::time::Duration;

use jiff::Timestamp;

/// A metric within this fraction of its target proposes no change (the HPA's 10%).
const TOLERANCE: f64 = 0.1;

/// The replicas that carry `total` at `target` each: the current size when it is within
/// the tolerance.
pub fn proposal(total: f64, target: f64, current: i32) -> i32 {
    if current > 0 {
        let ratio = total / (target * f64::from(current));
        if (ratio - 1.0).abs() <= TOLERANCE {
            return current;
        }
    }
    let wanted = (total / target).ceil();
    if wanted.is_nan() || wanted <= 0.0 {
        0
    } else if wanted >= f64::from(i32::MAX) {
        i32::MAX
    } else {
        // Within i32 by the checks above.
        wanted as i32
    }
}

/// One direction's rules.
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    pub window: Duration,
    pub max_step: i32,
}

/// Both directions'.
#[derive(Clone, Copy, Debug)]
pub struct Behavior {
    pub up: Rules,
    pub down: Rules,
}

/// The proposals of one group over its longest window, and since when they are known
/// (a process that just started knows none: until a window has passed, a scale-down
/// counts the current size as proposed).
#[derive(Clone, Debug)]
pub struct History {
    since: Timestamp,
    proposals: VecDeque<(Timestamp, i32)>,
}

impl History {
    pub fn new(since: Timestamp) -> Self {
        Self {
            since,
            proposals: VecDeque::new(),
        }
    }

    /// Records `proposal` at `now`, forgetting what no window reaches.
    pub fn record(&mut self, now: Timestamp, proposal: i32, behavior: &Behavior) {
        let keep = behavior.up.window.max(behavior.down.window);
        while self
            .proposals
            .front()
            .is_some_and(|(at, _)| before(*at, now, keep))
        {
            self.proposals.pop_front();
        }
        self.proposals.push_back((now, proposal));
    }

    fn within(&self, now: Timestamp, window: Duration) -> impl Iterator<Item = i32> + '_ {
        self.proposals
            .iter()
            .filter(move |(at, _)| !before(*at, now, window))
            .map(|(_, p)| *p)
    }
}

/// Whether `at` lies more than `window` before `now`.
fn before(at: Timestamp, now: Timestamp, window: Duration) -> bool {
    let window = jiff::SignedDuration::try_from(window).unwrap_or(jiff::SignedDuration::MAX);
    now.duration_since(at) > window
}

/// Why the size is not what the metrics alone ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// Raised to `minReplicas` or a schedule's floor.
    TooFew,
    /// Lowered to `maxReplicas`.
    TooMany,
    /// A step grows the group by at most `scaleUp.maxStep`.
    ScaleUpLimit,
    /// A step shrinks it by at most `scaleDown.maxStep`.
    ScaleDownLimit,
}

impl Limit {
    /// The HPA's `ScalingLimited` reason.
    pub fn reason(self) -> &'static str {
        match self {
            Limit::TooFew => "TooFewReplicas",
            Limit::TooMany => "TooManyReplicas",
            Limit::ScaleUpLimit => "ScaleUpLimit",
            Limit::ScaleDownLimit => "ScaleDownLimit",
        }
    }
}

/// Whether the group reached the size of its last step: grown (every replica there and
/// Ready), shrunk (the removed ones gone). The next step in a direction waits for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settled {
    pub up: bool,
    pub down: bool,
}

impl Settled {
    pub const YES: Settled = Settled {
        up: true,
        down: true,
    };
}

/// What a group is sized by this round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// `minReplicas`, or a schedule's floor where higher.
    pub floor: i32,
    pub ceiling: i32,
}

/// The size decided, and what limited it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub replicas: i32,
    pub limit: Option<Limit>,
}

impl Bounds {
    /// `wanted`, within the bounds, and which bound held it.
    fn clamp(&self, wanted: i32) -> Decision {
        let (replicas, limit) = if wanted < self.floor {
            (self.floor, Some(Limit::TooFew))
        } else if wanted > self.ceiling {
            (self.ceiling, Some(Limit::TooMany))
        } else {
            (wanted, None)
        };
        Decision { replicas, limit }
    }
}

/// The next size of a group of `current` replicas. `proposal`: the metrics' (already in
/// `history`), `None` when none could be read (the size holds, within the bounds);
/// `settled`: whether the last step is done (the next waits for it).
pub fn decide(
    current: i32,
    proposal: Option<i32>,
    history: &History,
    behavior: &Behavior,
    bounds: Bounds,
    (settled, now): (Settled, Timestamp),
) -> Decision {
    if current < bounds.floor || current > bounds.ceiling {
        return bounds.clamp(current);
    }
    let Some(proposal) = proposal else {
        return bounds.clamp(current);
    };
    let up = history
        .within(now, behavior.up.window)
        .min()
        .unwrap_or(proposal);
    let mut down = history
        .within(now, behavior.down.window)
        .max()
        .unwrap_or(proposal);
    if !before(history.since, now, behavior.down.window) {
        down = down.max(current);
    }
    let wanted = if up > current {
        up
    } else if down < current {
        down
    } else {
        current
    };
    let waiting = if wanted > current {
        !settled.up
    } else {
        !settled.down
    };
    if wanted == current || waiting {
        return bounds.clamp(current);
    }
    step(bounds.clamp(wanted), current, behavior)
}

/// `decided`, at most one step of `behavior` away from `current`.
fn step(decided: Decision, current: i32, behavior: &Behavior) -> Decision {
    let (stepped, limit) = if decided.replicas > current {
        let most = current.saturating_add(behavior.up.max_step);
        (decided.replicas.min(most), Limit::ScaleUpLimit)
    } else {
        let least = current.saturating_sub(behavior.down.max_step);
        (decided.replicas.max(least), Limit::ScaleDownLimit)
    };
    if stepped == decided.replicas {
        decided
    } else {
        Decision {
            replicas: stepped,
            limit: Some(limit),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEHAVIOR: Behavior = Behavior {
        up: Rules {
            window: Duration::ZERO,
            max_step: 4,
        },
        down: Rules {
            window: Duration::from_secs(300),
            max_step: 1,
        },
    };
    const BOUNDS: Bounds = Bounds {
        floor: 2,
        ceiling: 6,
    };

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).expect("in range")
    }

    /// Records the proposal `total / target` at `secs`, then decides.
    fn round(h: &mut History, current: i32, total: f64, secs: i64) -> Decision {
        let p = proposal(total, 100.0, current);
        h.record(t(secs), p, &BEHAVIOR);
        decide(
            current,
            Some(p),
            h,
            &BEHAVIOR,
            BOUNDS,
            (Settled::YES, t(secs)),
        )
    }

    #[test]
    fn a_proposal_is_the_replicas_that_carry_the_load_outside_the_tolerance() {
        assert_eq!(proposal(450.0, 100.0, 2), 5);
        assert_eq!(proposal(50.0, 100.0, 5), 1);
        assert_eq!(proposal(205.0, 100.0, 2), 2, "within 10%: no change");
        assert_eq!(proposal(0.0, 100.0, 3), 0);
        assert_eq!(proposal(f64::NAN, 100.0, 3), 0);
    }

    #[test]
    fn a_rise_scales_up_at_once_within_the_step_and_the_ceiling() {
        let mut h = History::new(t(-1000));
        assert_eq!(
            round(&mut h, 2, 450.0, 0),
            Decision {
                replicas: 5,
                limit: None
            }
        );
        let big = round(&mut h, 2, 5000.0, 1);
        assert_eq!(big.replicas, 6);
        assert_eq!(big.limit, Some(Limit::TooMany));
        let h = History::new(t(-1000));
        let stepped = decide(
            1,
            Some(6),
            &h,
            &BEHAVIOR,
            Bounds {
                floor: 1,
                ceiling: 10,
            },
            (Settled::YES, t(0)),
        );
        assert_eq!(stepped.replicas, 5);
        assert_eq!(stepped.limit, Some(Limit::ScaleUpLimit));
    }

    #[test]
    fn a_fall_waits_for_the_window_then_goes_one_step_at_a_time() {
        let mut h = History::new(t(-1000));
        assert_eq!(round(&mut h, 2, 450.0, 0).replicas, 5);
        // Load gone: the window still remembers 5.
        assert_eq!(round(&mut h, 5, 50.0, 60).replicas, 5);
        assert_eq!(round(&mut h, 5, 50.0, 299).replicas, 5);
        let step = round(&mut h, 5, 50.0, 301);
        assert_eq!(step.replicas, 4);
        assert_eq!(step.limit, Some(Limit::ScaleDownLimit));
        // Not settled on 4 yet: no further step.
        let p = proposal(50.0, 100.0, 4);
        h.record(t(302), p, &BEHAVIOR);
        let waiting = decide(
            4,
            Some(p),
            &h,
            &BEHAVIOR,
            BOUNDS,
            (
                Settled {
                    up: true,
                    down: false,
                },
                t(302),
            ),
        );
        assert_eq!(waiting.replicas, 4);
        assert_eq!(round(&mut h, 4, 50.0, 303).replicas, 3);
        assert_eq!(round(&mut h, 3, 50.0, 304).replicas, 2);
        let floor = round(&mut h, 2, 50.0, 305);
        assert_eq!(floor.replicas, 2);
        assert_eq!(floor.limit, Some(Limit::TooFew));
    }

    #[test]
    fn a_noisy_metric_changes_the_size_once_per_window() {
        let mut h = History::new(t(-1000));
        let mut current = 3;
        let mut changes = 0;
        for i in 0..20 {
            let total = if i % 2 == 0 { 250.0 } else { 350.0 };
            let next = round(&mut h, current, total, i * 10).replicas;
            changes += usize::from(next != current);
            current = next;
        }
        assert_eq!(changes, 1, "3 → 4 once; 250 never brings it back within 5m");
        assert_eq!(current, 4);
    }

    #[test]
    fn a_process_that_just_started_does_not_scale_down_before_a_window() {
        let mut h = History::new(t(0));
        assert_eq!(round(&mut h, 5, 50.0, 10).replicas, 5);
        assert_eq!(round(&mut h, 5, 450.0, 20).replicas, 5);
        assert_eq!(round(&mut h, 5, 900.0, 30).replicas, 6, "up at once");
        assert_eq!(
            round(&mut h, 6, 50.0, 301).replicas,
            6,
            "900 still in the window"
        );
        assert_eq!(round(&mut h, 6, 50.0, 331).replicas, 5);
    }

    #[test]
    fn without_a_reading_the_size_holds_within_the_bounds() {
        let h = History::new(t(-1000));
        let hold =
            |current, bounds| decide(current, None, &h, &BEHAVIOR, bounds, (Settled::YES, t(0)));
        assert_eq!(hold(4, BOUNDS).replicas, 4);
        let raised = hold(
            4,
            Bounds {
                floor: 6,
                ceiling: 8,
            },
        );
        assert_eq!(
            raised,
            Decision {
                replicas: 6,
                limit: Some(Limit::TooFew)
            }
        );
        assert_eq!(hold(9, BOUNDS).replicas, 6);
    }
}
