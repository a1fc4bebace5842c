//! What a run prints: the side-by-side table, the `--json` document (the same numbers, plus
//! the latency distribution) and the `--html` page (a legend of the targets, inline SVG charts
//! with round axis ticks, no scripts; `docs/pictures/check.mjs` checks it in a browser).

use std::fmt::Write as _;

use locksmith_harness::Ticks;
use serde_json::{json, Value};

use crate::run::{Mode, Outcome, RunConfig};
use crate::workload::Workload;

/// Percentiles shown in the table and the JSON, as (label, quantile).
const PERCENTILES: [(&str, f64); 4] = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99_9", 0.999)];

/// A target's index, report and latency points, for the distribution chart.
type Curve<'a> = (usize, &'a TargetReport, Vec<(f64, f64)>);

/// One target's result.
#[derive(Debug)]
pub(crate) struct TargetReport {
    /// Its name.
    pub(crate) name: String,
    /// Its URL (`in-process` for ours).
    pub(crate) url: String,
    /// What was measured, or why nothing was.
    pub(crate) outcome: Result<Outcome, String>,
}

/// The whole run.
#[derive(Debug)]
pub(crate) struct Report<'a> {
    /// The workload.
    pub(crate) workload: &'a Workload,
    /// The settings.
    pub(crate) cfg: &'a RunConfig,
    /// The targets, in the order they ran.
    pub(crate) targets: Vec<TargetReport>,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

impl Report<'_> {
    fn base_throughput(&self) -> Option<f64> {
        self.targets
            .first()
            .and_then(|t| t.outcome.as_ref().ok())
            .map(Outcome::throughput)
            .filter(|t| *t > 0.0)
    }

    fn ratio(&self, o: &Outcome) -> Option<f64> {
        self.base_throughput().map(|b| o.throughput() / b)
    }

    fn settings_line(&self) -> String {
        let mode = match self.cfg.mode {
            Mode::Requests(n) => format!("{n} requests"),
            Mode::Duration(d) => format!("{:.1} s", d.as_secs_f64()),
        };
        format!(
            "{} clients, pipeline {}, {mode} after {:.1} s of warm-up",
            self.cfg.clients,
            self.cfg.pipeline,
            self.cfg.warmup.as_secs_f64()
        )
    }

    /// The text table, with errors by kind (one example each) under it.
    pub(crate) fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "workload: {} ({})",
            self.workload.name, self.workload.description
        );
        let _ = writeln!(s, "{}", self.settings_line());
        let width = self
            .targets
            .iter()
            .map(|t| t.name.chars().count())
            .max()
            .unwrap_or(6)
            .max(6);
        let _ = writeln!(
            s,
            "\n{:<width$}  {:>10}  {:>6}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>8}",
            "target",
            "req/s",
            "ratio",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms",
            "errors"
        );
        for t in &self.targets {
            match &t.outcome {
                Ok(o) => {
                    let ratio = self
                        .ratio(o)
                        .map(|r| format!("{r:.2}x"))
                        .unwrap_or_else(|| "-".into());
                    let ms = |ns: u64| format!("{:.3}", ns as f64 / 1e6);
                    let q = |p: f64| ms(o.latency.value_at_quantile(p));
                    let _ = writeln!(
                        s,
                        "{:<width$}  {:>10.0}  {:>6}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}  {:>8}",
                        t.name,
                        o.throughput(),
                        ratio,
                        q(0.5),
                        q(0.9),
                        q(0.99),
                        q(0.999),
                        ms(o.latency.max()),
                        o.error_count()
                    );
                }
                Err(e) => {
                    let _ = writeln!(s, "{:<width$}  failed: {e}", t.name);
                }
            }
        }
        for t in &self.targets {
            let Ok(o) = &t.outcome else { continue };
            if o.noscript_reloads > 0 {
                let _ = writeln!(
                    s,
                    "\n{}: {} SCRIPT LOADs after NOSCRIPT (requests retried)",
                    t.name, o.noscript_reloads
                );
            }
            if o.errors.is_empty() {
                continue;
            }
            let _ = writeln!(s, "\nerrors on {}:", t.name);
            for (kind, e) in &o.errors {
                let _ = writeln!(s, "  {kind:<12} {:>10}  e.g. {}", e.count, e.example);
            }
        }
        s
    }

    /// The `--json` document.
    pub(crate) fn json(&self) -> Value {
        let targets: Vec<Value> = self
            .targets
            .iter()
            .map(|t| match &t.outcome {
                Ok(o) => {
                    let mut latency = serde_json::Map::new();
                    for (label, q) in PERCENTILES {
                        latency.insert(label.into(), json!(us(o.latency.value_at_quantile(q))));
                    }
                    latency.insert("max".into(), json!(us(o.latency.max())));
                    latency.insert("min".into(), json!(us(o.latency.min())));
                    latency.insert("mean".into(), json!(o.latency.mean() / 1000.0));
                    let errors: serde_json::Map<String, Value> = o
                        .errors
                        .iter()
                        .map(|(k, e)| (k.clone(), json!({"count": e.count, "example": e.example})))
                        .collect();
                    json!({
                        "name": t.name,
                        "url": t.url,
                        "requests": o.replies,
                        "ok": o.ok,
                        "error_count": o.error_count(),
                        "errors": errors,
                        "noscript_reloads": o.noscript_reloads,
                        "elapsed_secs": o.elapsed.as_secs_f64(),
                        "throughput": o.throughput(),
                        "ratio": self.ratio(o),
                        "latency_us": latency,
                        "distribution_us": distribution(o)
                            .iter()
                            .map(|(p, v)| json!([p, v]))
                            .collect::<Vec<_>>(),
                    })
                }
                Err(e) => json!({"name": t.name, "url": t.url, "failed": e}),
            })
            .collect();
        let (requests, duration) = match self.cfg.mode {
            Mode::Requests(n) => (Some(n), None),
            Mode::Duration(d) => (None, Some(d.as_secs_f64())),
        };
        json!({
            "workload": {
                "name": self.workload.name,
                "description": self.workload.description,
                "scripts": self.workload.scripts.iter().map(|s| json!({
                    "name": s.name, "sha1": s.sha1, "body": s.body,
                })).collect::<Vec<_>>(),
                "steps": self.workload.steps.iter().map(|s| s.label.clone()).collect::<Vec<_>>(),
            },
            "clients": self.cfg.clients,
            "pipeline": self.cfg.pipeline,
            "requests": requests,
            "duration_secs": duration,
            "warmup_secs": self.cfg.warmup.as_secs_f64(),
            "keyspace": self.cfg.keyspace,
            "seed": self.cfg.seed,
            "targets": targets,
        })
    }

    /// The `--html` page: the table, a throughput bar chart and the latency distribution as
    /// inline SVG.
    pub(crate) fn html(&self) -> String {
        let mut h = String::new();
        let _ = write!(
            h,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <title>locksmith-bench: {}</title>\n<style>body{{font-family:sans-serif;\
             margin:2em;color:#222}}table{{border-collapse:collapse}}td,th{{padding:4px 10px;\
             border-bottom:1px solid #ddd;text-align:right}}td:first-child,th:first-child\
             {{text-align:left}}svg text{{font-size:12px;font-family:sans-serif}}\
             .legend{{margin:1em 0}}.legend-entry{{margin-right:1.5em;white-space:nowrap}}\
             .swatch{{display:inline-block;width:14px;height:14px;margin-right:6px;\
             vertical-align:-2px}}.legend small{{color:#666}}</style>\
             </head><body>\n<h1>locksmith-bench</h1>\n<p><b>{}</b>: {}<br>{}</p>\n",
            esc(&self.workload.name),
            esc(&self.workload.name),
            esc(&self.workload.description),
            esc(&self.settings_line())
        );
        h.push_str("<table><tr><th>target</th><th>req/s</th><th>ratio</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>max ms</th><th>errors</th></tr>\n");
        for t in &self.targets {
            match &t.outcome {
                Ok(o) => {
                    let ms = |ns: u64| format!("{:.3}", ns as f64 / 1e6);
                    let q = |p: f64| ms(o.latency.value_at_quantile(p));
                    let errors: Vec<String> = o
                        .errors
                        .iter()
                        .map(|(k, e)| format!("{} {}", esc(k), e.count))
                        .collect();
                    let _ = writeln!(
                        h,
                        "<tr><td>{}</td><td>{:.0}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        esc(&t.name),
                        o.throughput(),
                        self.ratio(o).map(|r| format!("{r:.2}x")).unwrap_or_default(),
                        q(0.5),
                        q(0.9),
                        q(0.99),
                        q(0.999),
                        ms(o.latency.max()),
                        if errors.is_empty() { "0".into() } else { errors.join(", ") }
                    );
                }
                Err(e) => {
                    let _ = writeln!(
                        h,
                        "<tr><td>{}</td><td colspan=\"8\">failed: {}</td></tr>",
                        esc(&t.name),
                        esc(e)
                    );
                }
            }
        }
        h.push_str("</table>\n");
        h.push_str(&self.legend_html());
        h.push_str("<h2>Throughput</h2>\n");
        h.push_str(&self.throughput_svg());
        h.push_str("\n<h2>Latency distribution</h2>\n<p>Latency at each percentile (HDR histogram; the x axis spreads the tail: 90 %, 99 %, 99.9 %…).</p>\n");
        h.push_str(&self.latency_svg());
        h.push_str("\n</body></html>\n");
        h
    }

    fn measured(&self) -> impl Iterator<Item = (usize, &TargetReport, &Outcome)> {
        self.targets
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.outcome.as_ref().ok().map(|o| (i, t, o)))
    }

    /// One entry per target, in its chart colour, with its URL (or why it was not measured).
    fn legend_html(&self) -> String {
        let mut h = String::from("<p class=\"legend\"><b>Targets:</b> ");
        for (i, t) in self.targets.iter().enumerate() {
            let (color, note) = match &t.outcome {
                Ok(_) => (color(i), esc(&t.url)),
                Err(_) => ("#bbb", "failed, not charted".to_string()),
            };
            let _ = write!(
                h,
                "<span class=\"legend-entry\" data-target=\"{}\" data-measured=\"{}\">\
                 <span class=\"swatch\" style=\"background:{color}\"></span>\
                 <span class=\"name\">{}</span> <small>{note}</small></span>",
                esc(&t.name),
                t.outcome.is_ok(),
                esc(&t.name)
            );
        }
        h.push_str("</p>\n");
        h
    }

    fn throughput_svg(&self) -> String {
        let (w, row, left, right, axis) = (760.0, 28.0, 220.0, 120.0, 36.0);
        let bars = row * self.targets.len().max(1) as f64 + 6.0;
        let height = bars + axis;
        let max = self
            .measured()
            .map(|(_, _, o)| o.throughput())
            .fold(0.0, f64::max)
            .max(1.0);
        // The axis ends at the round tick at or above the best throughput.
        let ticks = Ticks::new(max, 5);
        let end = ticks.ceil(max);
        let ticks = Ticks::new(end, 5);
        let px = |v: f64| left + (w - left - right) * v / end;
        let mut s = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"throughput\" width=\"{w}\" \
             height=\"{height}\" role=\"img\" aria-label=\"throughput per target\">\n"
        );
        for &v in &ticks.values {
            let _ = writeln!(
                s,
                "<g class=\"tick\"><line x1=\"{0:.1}\" y1=\"0\" x2=\"{0:.1}\" y2=\"{1:.1}\" \
                 stroke=\"#eee\"/><text x=\"{0:.1}\" y=\"{2:.1}\" text-anchor=\"middle\">{3}</text></g>",
                px(v),
                bars + 4.0,
                bars + 18.0,
                ticks.label(v)
            );
        }
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" y1=\"{bars:.1}\" x2=\"{:.1}\" y2=\"{bars:.1}\" stroke=\"#999\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">requests per second</text>",
            px(end),
            px(end / 2.0),
            bars + 33.0
        );
        for (i, t, o) in self.measured() {
            let y = 5.0 + row * i as f64;
            let bar = px(o.throughput()) - left;
            let _ = writeln!(
                s,
                "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{}</text>\
                 <rect class=\"bar\" data-target=\"{}\" x=\"{left}\" y=\"{y:.0}\" width=\"{bar:.1}\" height=\"{:.0}\" fill=\"{}\"/>\
                 <text x=\"{:.1}\" y=\"{:.0}\">{:.0} req/s</text>",
                left - 8.0,
                y + row * 0.6,
                esc(&t.name),
                esc(&t.name),
                row - 8.0,
                color(i),
                left + bar + 6.0,
                y + row * 0.6,
                o.throughput()
            );
        }
        s.push_str("</svg>");
        s
    }

    fn latency_svg(&self) -> String {
        let (w, h, left, bottom, top, right) = (760.0, 360.0, 70.0, 40.0, 10.0, 40.0);
        // x: log10(1 / (1 - p)), from p = 0 to p = 99.999 %.
        let x_max = 5.0_f64;
        let curves: Vec<Curve<'_>> = self
            .measured()
            .map(|(i, t, o)| (i, t, distribution(o)))
            .collect();
        let slowest_us = curves
            .iter()
            .flat_map(|(_, _, pts)| pts.iter().map(|(_, v)| *v))
            .fold(0.0, f64::max)
            .max(1.0);
        // Round ticks in ms (labelled µs, ms or s by their step); the axis ends at the round
        // tick at or above the slowest request.
        let ticks = Ticks::new(slowest_us / 1000.0, 5);
        let y_max_ms = ticks.ceil(slowest_us / 1000.0);
        let ticks = Ticks::new(y_max_ms, 5);
        let y_max = y_max_ms * 1000.0;
        let px = |p: f64| {
            let x = (1.0 / (1.0 - (p / 100.0).min(0.99999))).log10().min(x_max);
            left + (w - left - right) * x / x_max
        };
        let py = |v: f64| top + (h - top - bottom) * (1.0 - v / y_max);
        let mut s = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"latency\" width=\"{w}\" \
             height=\"{h}\" role=\"img\" aria-label=\"latency by percentile\">\n\
             <rect x=\"{left}\" y=\"{top}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n",
            w - left - right,
            h - top - bottom
        );
        for (label, p) in [
            ("0", 0.0),
            ("90", 90.0),
            ("99", 99.0),
            ("99.9", 99.9),
            ("99.99", 99.99),
            ("99.999", 99.999),
        ] {
            let x = px(p);
            let _ = writeln!(
                s,
                "<line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/>\
                 <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label} %</text>",
                h - bottom,
                h - bottom + 16.0
            );
        }
        for &v in &ticks.values {
            let y = py(v * 1000.0);
            let _ = writeln!(
                s,
                "<g class=\"tick\"><line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" \
                 stroke=\"#eee\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text></g>",
                w - right,
                left - 6.0,
                y + 4.0,
                ticks.label_ms(v)
            );
        }
        // The legend above the charts names each curve's colour.
        for (i, t, pts) in &curves {
            let points: Vec<String> = pts
                .iter()
                .map(|(p, v)| format!("{:.1},{:.1}", px(*p), py(*v)))
                .collect();
            let _ = writeln!(
                s,
                "<polyline data-target=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"><title>{}</title></polyline>",
                esc(&t.name),
                color(*i),
                points.join(" "),
                esc(&t.name)
            );
        }
        let _ = write!(
            s,
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\">percentile</text></svg>",
            left + (w - left - right) / 2.0,
            h - 4.0
        );
        s
    }
}

/// (percentile, latency in µs) points of the histogram, from its iterator over quantiles
/// (finer towards the tail), ending at the maximum.
fn distribution(o: &Outcome) -> Vec<(f64, f64)> {
    if o.latency.is_empty() {
        return Vec::new();
    }
    let mut pts: Vec<(f64, f64)> = o
        .latency
        .iter_quantiles(4)
        .map(|v| (v.quantile_iterated_to() * 100.0, us(v.value_iterated_to())))
        .filter(|(p, _)| *p < 100.0)
        .collect();
    pts.push((100.0, us(o.latency.max())));
    pts
}

fn color(i: usize) -> &'static str {
    const PALETTE: [&str; 6] = [
        "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
    ];
    PALETTE[i % PALETTE.len()]
}

/// Escapes text for HTML (names and errors come from the command line and from servers).
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn measured(latencies_ns: &[u64]) -> Outcome {
        let mut o = Outcome::new();
        for &ns in latencies_ns {
            o.latency.record(ns).unwrap();
        }
        o.replies = latencies_ns.len() as u64;
        o.ok = o.replies;
        o.elapsed = Duration::from_millis(10);
        o
    }

    fn page(targets: Vec<TargetReport>) -> String {
        let workload = Workload::scenario("acquire").unwrap();
        let cfg = RunConfig {
            clients: 2,
            pipeline: 1,
            mode: Mode::Requests(4),
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(1),
            keyspace: 10,
            seed: 1,
            run_uuid: "uuid".into(),
            run_tag: "tag".into(),
            quiet: true,
            no_preload: false,
        };
        Report {
            workload: &workload,
            cfg: &cfg,
            targets,
        }
        .html()
    }

    fn target(name: &str, outcome: Result<Outcome, String>) -> TargetReport {
        TargetReport {
            name: name.into(),
            url: format!("redis://127.0.0.1:1/{name}"),
            outcome,
        }
    }

    /// The tick labels of the chart whose class is `class`.
    fn tick_labels<'a>(html: &'a str, class: &str) -> Vec<&'a str> {
        let chart = html.split(&format!("class=\"{class}\"")).nth(1).unwrap();
        let chart = &chart[..chart.find("</svg>").unwrap()];
        chart
            .split("<g class=\"tick\">")
            .skip(1)
            .map(|t| {
                let text = &t[t.find("<text").unwrap()..];
                let from = text.find('>').unwrap() + 1;
                &text[from..from + text[from..].find('<').unwrap()]
            })
            .collect()
    }

    #[test]
    fn legend_names_every_target_in_its_chart_colour() {
        let html = page(vec![
            target("ours", Ok(measured(&[1_000_000, 2_000_000, 3_400_000]))),
            target("theirs", Ok(measured(&[500_000, 900_000]))),
            target("down", Err("connection refused".into())),
        ]);
        for (i, name) in ["ours", "theirs"].into_iter().enumerate() {
            let entry = format!(
                "<span class=\"legend-entry\" data-target=\"{name}\" data-measured=\"true\">\
                 <span class=\"swatch\" style=\"background:{}\"></span><span class=\"name\">{name}</span>",
                color(i)
            );
            assert!(html.contains(&entry), "{name}");
            assert!(html.contains(&format!("<rect class=\"bar\" data-target=\"{name}\"")));
            assert!(html.contains(&format!(
                "<polyline data-target=\"{name}\" fill=\"none\" stroke=\"{}\"",
                color(i)
            )));
        }
        assert!(html.contains(
            "data-target=\"down\" data-measured=\"false\"><span class=\"swatch\" \
             style=\"background:#bbb\"></span><span class=\"name\">down</span> \
             <small>failed, not charted</small>"
        ));
        assert!(!html.contains("<rect class=\"bar\" data-target=\"down\""));
    }

    #[test]
    fn axes_tick_at_round_values() {
        // The slowest request takes 3.4 ms (3.401 in the histogram's precision): the latency
        // axis ends at 4 ms and ticks every 1 ms.
        let html = page(vec![target("ours", Ok(measured(&[1_000_000, 3_400_000])))]);
        assert_eq!(
            tick_labels(&html, "latency"),
            ["0 ms", "1 ms", "2 ms", "3 ms", "4 ms"]
        );
        // 2 replies in 10 ms: 200 req/s, ticks every 50 up to 200.
        assert_eq!(
            tick_labels(&html, "throughput"),
            ["0", "50", "100", "150", "200"]
        );
    }

    #[test]
    fn a_run_with_nothing_measured_still_has_its_axes_and_legend() {
        let html = page(vec![target("down", Err("refused".into()))]);
        // An axis up to 1 µs, the least the chart shows.
        assert_eq!(
            tick_labels(&html, "latency"),
            ["0.0 µs", "0.2 µs", "0.4 µs", "0.6 µs", "0.8 µs", "1.0 µs"]
        );
        assert_eq!(
            tick_labels(&html, "throughput"),
            ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
        );
        assert!(html.contains("data-target=\"down\" data-measured=\"false\""));
        assert!(!html.contains("<polyline"));
    }
}
