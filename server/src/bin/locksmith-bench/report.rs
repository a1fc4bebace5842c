//! What a run prints: the side-by-side table, the `--json` document (the same numbers, plus
//! the latency distribution) and the `--html` page (inline SVG charts, no scripts).

use std::fmt::Write as _;

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
             {{text-align:left}}svg text{{font-size:12px;font-family:sans-serif}}</style>\
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
        h.push_str("</table>\n<h2>Throughput</h2>\n");
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

    fn throughput_svg(&self) -> String {
        let (w, row, left) = (760.0, 28.0, 220.0);
        let height = row * self.targets.len().max(1) as f64 + 10.0;
        let max = self
            .measured()
            .map(|(_, _, o)| o.throughput())
            .fold(0.0, f64::max)
            .max(1.0);
        let mut s = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{height}\" \
             role=\"img\" aria-label=\"throughput per target\">\n"
        );
        for (i, t, o) in self.measured() {
            let y = 5.0 + row * i as f64;
            let bar = (w - left - 120.0) * o.throughput() / max;
            let _ = writeln!(
                s,
                "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{}</text>\
                 <rect x=\"{left}\" y=\"{y:.0}\" width=\"{bar:.1}\" height=\"{:.0}\" fill=\"{}\"/>\
                 <text x=\"{:.1}\" y=\"{:.0}\">{:.0} req/s</text>",
                left - 8.0,
                y + row * 0.6,
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
        let (w, h, left, bottom, top, right) = (760.0, 360.0, 70.0, 40.0, 10.0, 20.0);
        // x: log10(1 / (1 - p)), from p = 0 to p = 99.999 %.
        let x_max = 5.0_f64;
        let curves: Vec<Curve<'_>> = self
            .measured()
            .map(|(i, t, o)| (i, t, distribution(o)))
            .collect();
        let y_max = curves
            .iter()
            .flat_map(|(_, _, pts)| pts.iter().map(|(_, v)| *v))
            .fold(0.0, f64::max)
            .max(1.0);
        let px = |p: f64| {
            let x = (1.0 / (1.0 - (p / 100.0).min(0.99999))).log10().min(x_max);
            left + (w - left - right) * x / x_max
        };
        let py = |v: f64| top + (h - top - bottom) * (1.0 - v / y_max);
        let mut s = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             role=\"img\" aria-label=\"latency by percentile\">\n\
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
        for k in 0..=4 {
            let v = y_max * k as f64 / 4.0;
            let y = py(v);
            let _ = writeln!(
                s,
                "<line x1=\"{left}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/>\
                 <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{:.0} µs</text>",
                w - right,
                left - 6.0,
                y + 4.0,
                v
            );
        }
        for (n, (i, t, pts)) in curves.iter().enumerate() {
            let points: Vec<String> = pts
                .iter()
                .map(|(p, v)| format!("{:.1},{:.1}", px(*p), py(*v)))
                .collect();
            let _ = writeln!(
                s,
                "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\
                 <rect x=\"{:.0}\" y=\"{:.0}\" width=\"12\" height=\"12\" fill=\"{}\"/>\
                 <text x=\"{:.0}\" y=\"{:.0}\">{}</text>",
                color(*i),
                points.join(" "),
                left + 10.0,
                top + 8.0 + 18.0 * n as f64,
                color(*i),
                left + 28.0,
                top + 18.0 + 18.0 * n as f64,
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
