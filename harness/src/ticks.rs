//! Round ticks for the axes of the pages the workspace draws (the harness's timelines,
//! `locksmith-bench --html`): steps of 1, 2 or 5 × 10^k, and labels in the unit that reads best
//! for the step (`0 ms, 200 ms, 400 ms`, `0 s, 1 s, 2 s`, `0 µs, 500 µs`).

/// The ticks of an axis from 0 to a span: a round step and its multiples up to the span.
///
/// ```
/// use locksmith_harness::Ticks;
///
/// let ticks = Ticks::new(1234.0, 10); // a 1234 ms axis, at most 10 intervals
/// assert_eq!(ticks.step, 200.0);
/// assert_eq!(ticks.values.len(), 7); // 0, 200, ..., 1200
/// assert_eq!(ticks.label_ms(1200.0), "1200 ms");
/// assert_eq!(Ticks::new(7000.0, 10).label_ms(3000.0), "3 s");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Ticks {
    /// The distance between two ticks: 1, 2 or 5 × 10^k, in the span's unit; 1 when the span
    /// is zero, negative or not a number.
    pub step: f64,
    /// 0, `step`, 2 × `step`, … up to the span (at least `[0.0]`, at most `max_intervals + 1`
    /// values).
    pub values: Vec<f64>,
}

/// How far a ratio may miss an exact step through rounding (`0.1 * 3` is not `0.3`).
const EPSILON: f64 = 1e-9;

impl Ticks {
    /// The smallest round step that divides `span` into at most `max_intervals` intervals
    /// (at least one), and the ticks from 0 to `span` at that step.
    pub fn new(span: f64, max_intervals: usize) -> Ticks {
        let intervals = max_intervals.max(1);
        let step = round_step(span / intervals as f64);
        let Some(step) = step.filter(|_| span.is_finite() && span > 0.0) else {
            return Ticks {
                step: 1.0,
                values: vec![0.0],
            };
        };
        // Bounded by `intervals`: the step was chosen so that span / step <= intervals.
        let n = ((span / step + EPSILON).floor() as usize).min(intervals);
        Ticks {
            step,
            values: (0..=n).map(|i| i as f64 * step).collect(),
        }
    }

    /// The last tick (0 for an empty span).
    pub fn last(&self) -> f64 {
        self.values.last().copied().unwrap_or(0.0)
    }

    /// The end of an axis that reaches past `span` to the next tick: `span` rounded up to a
    /// multiple of the step.
    pub fn ceil(&self, span: f64) -> f64 {
        if !span.is_finite() || span <= 0.0 {
            return self.step;
        }
        (span / self.step - EPSILON).ceil().max(1.0) * self.step
    }

    /// `value` (in milliseconds, an axis of durations) labelled in the unit the step reads
    /// best in: seconds for steps of a second or more, milliseconds down to 1 ms, microseconds
    /// below, with as many decimals as the step needs.
    pub fn label_ms(&self, value_ms: f64) -> String {
        let (scale, unit) = if self.step >= 1000.0 - EPSILON {
            (1e-3, "s")
        } else if self.step >= 1.0 - EPSILON {
            (1.0, "ms")
        } else {
            (1e3, "µs")
        };
        format!(
            "{} {unit}",
            fixed(value_ms * scale, decimals(self.step * scale))
        )
    }

    /// `value` as a plain number with as many decimals as the step needs (`0`, `20000`, `0.5`).
    pub fn label(&self, value: f64) -> String {
        fixed(value, decimals(self.step))
    }
}

/// 1, 2 or 5 × 10^k: the smallest such number at least `raw`; `None` when `raw` is not a
/// positive finite number or too small for a power of ten.
fn round_step(raw: f64) -> Option<f64> {
    if !raw.is_finite() || raw <= 0.0 {
        return None;
    }
    let magnitude = 10f64.powi(raw.log10().floor() as i32);
    if !magnitude.is_normal() {
        return None;
    }
    let mantissa = raw / magnitude;
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .find(|m| mantissa <= m + EPSILON)
        .unwrap_or(10.0)
        * magnitude;
    Some(step).filter(|s| s.is_normal())
}

/// How many decimals show a multiple of `step` exactly (0 for steps of 1 and more).
fn decimals(step: f64) -> usize {
    if !step.is_finite() || step <= 0.0 || step >= 1.0 - EPSILON {
        return 0;
    }
    // A round step below 1 has one significant digit: 0.5 needs 1 decimal, 0.02 needs 2.
    ((-step.log10()) - EPSILON).ceil().clamp(0.0, 12.0) as usize
}

/// `value` with `decimals` decimals, without a negative zero.
fn fixed(value: f64, decimals: usize) -> String {
    let s = format!("{value:.decimals$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_1234_ms_ticks_every_200_ms_up_to_1200() {
        let t = Ticks::new(1234.0, 10);
        assert_eq!(t.step, 200.0);
        assert_eq!(
            t.values,
            vec![0.0, 200.0, 400.0, 600.0, 800.0, 1000.0, 1200.0]
        );
        let labels: Vec<String> = t.values.iter().map(|v| t.label_ms(*v)).collect();
        assert_eq!(labels[..3], ["0 ms", "200 ms", "400 ms"]);
        assert_eq!(t.last(), 1200.0);
        assert_eq!(t.ceil(1234.0), 1400.0);
    }

    #[test]
    fn span_7_s_ticks_every_second_labelled_in_seconds() {
        let t = Ticks::new(7000.0, 10);
        assert_eq!(t.step, 1000.0);
        assert_eq!(t.values.len(), 8);
        let labels: Vec<String> = t.values.iter().map(|v| t.label_ms(*v)).collect();
        assert_eq!(labels[..3], ["0 s", "1 s", "2 s"]);
        assert_eq!(labels[7], "7 s");
    }

    #[test]
    fn steps_are_one_two_or_five_times_a_power_of_ten() {
        for (span, step) in [
            (1.0, 0.1),
            (10.0, 1.0),
            (11.0, 2.0),
            (20.0, 2.0),
            (21.0, 5.0),
            (50.0, 5.0),
            (51.0, 10.0),
            (999.0, 100.0),
            (2500.0, 500.0),
            (1e9, 1e8),
            (0.003, 0.0005),
        ] {
            let t = Ticks::new(span, 10);
            assert!(
                (t.step - step).abs() <= step * 1e-12,
                "span {span}: step {} not {step}",
                t.step
            );
            assert!(t.values.len() <= 11, "span {span}");
            assert!(t.last() <= span * (1.0 + 1e-9), "span {span}");
        }
    }

    #[test]
    fn exact_multiples_end_on_the_span() {
        let t = Ticks::new(1000.0, 5);
        assert_eq!(t.step, 200.0);
        assert_eq!(t.last(), 1000.0);
        assert_eq!(t.ceil(1000.0), 1000.0);
        // 0.1 * 3 is 0.30000000000000004: still three intervals of 0.1.
        let t = Ticks::new(0.3, 3);
        assert_eq!(t.values.len(), 4);
    }

    #[test]
    fn zero_tiny_negative_and_nan_spans_give_one_tick() {
        for span in [
            0.0,
            -5.0,
            f64::NAN,
            f64::INFINITY,
            1e-320,
            f64::MIN_POSITIVE,
        ] {
            let t = Ticks::new(span, 10);
            assert_eq!(t.values, vec![0.0], "span {span}");
            assert_eq!(t.step, 1.0, "span {span}");
            assert_eq!(t.label_ms(0.0), "0 ms");
        }
        let t = Ticks::new(1e-6, 0);
        assert_eq!(t.values.len(), 2, "max_intervals 0 counts as 1");
    }

    #[test]
    fn labels_pick_the_unit_and_decimals_of_the_step() {
        assert_eq!(Ticks::new(2.5, 5).label_ms(1.5), "1500 µs");
        assert_eq!(Ticks::new(0.004, 4).label_ms(0.003), "3 µs");
        assert_eq!(Ticks::new(0.0004, 4).label_ms(0.0003), "0.3 µs");
        assert_eq!(Ticks::new(15_000.0, 3).label_ms(5000.0), "5 s");
        assert_eq!(Ticks::new(25_000.0, 100).label_ms(500.0), "500 ms");
        assert_eq!(Ticks::new(90_000.0, 4).label(40_000.0), "40000");
        assert_eq!(Ticks::new(0.9, 2).label(0.5), "0.5");
        assert_eq!(Ticks::new(0.09, 2).label(0.05), "0.05");
        assert_eq!(fixed(-0.0, 1), "0.0");
    }
}
