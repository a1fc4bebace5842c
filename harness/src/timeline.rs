//! A timeline of a [`History`] people can look at: an SVG (or a self-contained HTML page around
//! it) with one row per client, a bar per hold, marks for failed acquires, losses and writes,
//! faults as shaded spans with their label, and every overlap found by the [`Checker`] in red.

use super::history::{Checker, EventKind, History, Violation};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

const WIDTH: f64 = 1100.0;
const LEFT: f64 = 150.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 60.0;
const ROW: f64 = 46.0;

/// A rendered view of a history.
#[derive(Debug, Clone)]
pub struct Timeline {
    title: String,
    history: History,
    violations: Vec<Violation>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Timeline {
    /// A timeline of `history` titled `title`, with the checker's violations marked.
    pub fn new(title: impl Into<String>, history: &History) -> Self {
        Timeline {
            title: title.into(),
            history: history.clone(),
            violations: Checker::check(history),
        }
    }

    /// The violations shown in red.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// The timeline as a standalone SVG document.
    pub fn to_svg(&self) -> String {
        let events = self.history.events();
        let faults = self.history.faults();
        let holds = Checker::holds(&self.history);
        let mut rows: BTreeMap<String, usize> = BTreeMap::new();
        for e in &events {
            let n = rows.len();
            rows.entry(e.client.clone()).or_insert(n);
        }
        // Rows in order of first appearance.
        let mut order: Vec<(String, usize)> = rows.into_iter().collect();
        order.sort_by_key(|(_, i)| *i);
        let rows: BTreeMap<String, usize> = order
            .iter()
            .enumerate()
            .map(|(i, (c, _))| (c.clone(), i))
            .collect();
        let t_end = events
            .iter()
            .map(|e| e.end_ms)
            .chain(holds.iter().map(|h| h.to_ms))
            .chain(faults.iter().map(|f| f.end_ms.unwrap_or(f.start_ms)))
            .max()
            .unwrap_or(0)
            .max(1) as f64
            * 1.05;
        let x = |ms: u64| LEFT + (ms as f64 / t_end) * (WIDTH - LEFT - RIGHT);
        let y = |client: &str| TOP + rows.get(client).copied().unwrap_or(0) as f64 * ROW;
        let height = TOP + rows.len().max(1) as f64 * ROW + 50.0;
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="12">"#
        );
        let _ = write!(
            s,
            r#"<rect width="100%" height="100%" fill="white"/><text x="10" y="22" font-size="16" font-weight="bold">{}</text>"#,
            esc(&self.title)
        );
        let bottom = height - 40.0;
        // Faults: a shaded span (or a line for an instant) with its label.
        for (i, f) in faults.iter().enumerate() {
            let x0 = x(f.start_ms);
            let x1 = f.end_ms.map_or(x0, x);
            if x1 > x0 + 1.0 {
                let _ = write!(
                    s,
                    r##"<rect x="{x0:.1}" y="{TOP}" width="{:.1}" height="{:.1}" fill="#ffe9a8" opacity="0.5"/>"##,
                    x1 - x0,
                    bottom - TOP
                );
            }
            let _ = write!(
                s,
                r##"<line x1="{x0:.1}" y1="{:.1}" x2="{x0:.1}" y2="{bottom:.1}" stroke="#c77d00" stroke-dasharray="4 3"/><text x="{:.1}" y="{:.1}" fill="#8a5600">&#9889; {}</text>"##,
                TOP - 14.0,
                x0 + 3.0,
                TOP - 18.0 + (i % 2) as f64 * 10.0,
                esc(&f.label)
            );
        }
        for (client, _) in &order {
            let yy = y(client);
            let _ = write!(
                s,
                r##"<text x="10" y="{:.1}">{}</text><line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#ddd"/>"##,
                yy + 20.0,
                esc(client),
                yy + 16.0,
                WIDTH - RIGHT,
                yy + 16.0
            );
        }
        for h in &holds {
            let (x0, x1) = (x(h.from_ms), x(h.to_ms));
            let token = h.token.map(|t| format!(" token {t}")).unwrap_or_default();
            let _ = write!(
                s,
                r##"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="20" rx="3" fill="{}" opacity="0.85"><title>{} holds {} {}..{} ms{}</title></rect><text x="{:.1}" y="{:.1}" fill="white" font-size="11">{}{}</text>"##,
                y(&h.client) + 6.0,
                (x1 - x0).max(2.0),
                if h.open { "#5b8def" } else { "#2e7d32" },
                esc(&h.client),
                esc(&h.resource),
                h.from_ms,
                h.to_ms,
                token,
                x0 + 4.0,
                y(&h.client) + 20.0,
                esc(&h.resource),
                esc(&token)
            );
        }
        for e in &events {
            let (mark, color) = match e.kind {
                EventKind::AcquireFailed => ("&#215;", "#777"),
                EventKind::Lost => ("lost", "#e65100"),
                EventKind::Write { accepted: true } => ("w&#10003;", "#1b5e20"),
                EventKind::Write { accepted: false } => ("w&#10007;", "#b71c1c"),
                EventKind::Acquired | EventKind::Released => continue,
            };
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" fill="{color}" font-weight="bold">{mark}<title>{} {:?} at {} ms</title></text>"#,
                x(e.end_ms) - 3.0,
                y(&e.client) + 40.0,
                esc(&e.client),
                e.kind,
                e.end_ms
            );
        }
        for v in &self.violations {
            let (x0, x1) = (x(v.overlap_from_ms), x(v.overlap_to_ms));
            let (a, b) = (y(&v.first.client), y(&v.second.client));
            let (top, bot) = (a.min(b) + 2.0, a.max(b) + 30.0);
            let _ = write!(
                s,
                r##"<rect x="{x0:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="#e53935" opacity="0.35" stroke="#b71c1c"><title>{}</title></rect>"##,
                (x1 - x0).max(2.0),
                bot - top,
                esc(&v.to_string())
            );
        }
        // Time axis.
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{bottom:.1}" x2="{:.1}" y2="{bottom:.1}" stroke="#333"/>"##,
            WIDTH - RIGHT
        );
        for i in 0..=10u32 {
            let ms = (t_end / 1.05 * f64::from(i) / 10.0) as u64;
            let _ = write!(
                s,
                r##"<line x1="{0:.1}" y1="{bottom:.1}" x2="{0:.1}" y2="{1:.1}" stroke="#333"/><text x="{0:.1}" y="{2:.1}" text-anchor="middle" fill="#333">{ms} ms</text>"##,
                x(ms),
                bottom + 5.0,
                bottom + 18.0
            );
        }
        s.push_str("</svg>");
        s
    }

    /// A self-contained HTML page: the SVG, then the violations in words.
    pub fn to_html(&self) -> String {
        let mut s = format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{}</title></head><body style=\"font-family:sans-serif\">",
            esc(&self.title)
        );
        s.push_str(&self.to_svg());
        if self.violations.is_empty() {
            s.push_str("<p>No mutual-exclusion violation.</p>");
        } else {
            let _ = write!(
                s,
                "<h3 style=\"color:#b71c1c\">{} mutual-exclusion violation(s)</h3><ul>",
                self.violations.len()
            );
            for v in &self.violations {
                let _ = write!(s, "<li>{}</li>", esc(&v.to_string()));
            }
            s.push_str("</ul>");
        }
        s.push_str("<h3>Faults</h3><ul>");
        for f in self.history.faults() {
            let end = f
                .end_ms
                .map(|e| format!(" until {e} ms"))
                .unwrap_or_default();
            let _ = write!(s, "<li>{} ms: {}{}</li>", f.start_ms, esc(&f.label), end);
        }
        s.push_str("</ul></body></html>\n");
        s
    }

    /// Writes [`Timeline::to_html`] to `path` (creating its directory).
    ///
    /// # Errors
    ///
    /// When the file cannot be written.
    pub fn write_html(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        let path = path.as_ref();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, self.to_html())
    }

    /// Writes [`Timeline::to_svg`] to `path` (creating its directory).
    ///
    /// # Errors
    ///
    /// When the file cannot be written.
    pub fn write_svg(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        let path = path.as_ref();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, self.to_svg())
    }
}
