//! A timeline of a [`History`] people can look at: an SVG (or a self-contained HTML page around
//! it) with one row per client, a bar per hold in the client's colour (its fencing token
//! written in it), marks for failed acquires, losses and writes, faults as dashed lines (and
//! shaded spans while they last) coloured by kind, every overlap found by the [`Checker`] in
//! red, a time axis with round ticks, and a legend naming each mark the picture uses.
//!
//! Elements carry classes (`timeline`, `hold`, `token`, `fault`, `violation`, `mark`, `tick`,
//! `legend`, `legend-entry`) and `data-*` attributes, so a browser check
//! (`docs/pictures/check.mjs`) can find them.

use super::history::{Checker, EventKind, History, Violation};
use crate::{Fault, Ticks};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

const WIDTH: f64 = 1100.0;
const LEFT: f64 = 150.0;
const RIGHT: f64 = 30.0;
/// Baseline of the first line of fault labels (under the title).
const LABELS_TOP: f64 = 42.0;
/// Height of one line of fault labels.
const LABEL_LINE: f64 = 13.0;
const ROW: f64 = 46.0;
/// At most this many intervals between the ticks of the time axis.
const MAX_TICK_INTERVALS: usize = 10;
/// Height of one line of the legend.
const LEGEND_ROW: f64 = 20.0;

/// Colours of the clients' holds, by row.
const CLIENT_COLORS: [&str; 8] = [
    "#1f77b4", "#2ca02c", "#17becf", "#9467bd", "#8c564b", "#bcbd22", "#393b79", "#7f7f7f",
];
/// The violation's colour (nothing else is red).
const VIOLATION_COLOR: &str = "#e53935";

/// A family of faults: how the timeline draws a [`Fault`] of its variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FaultKind {
    /// The `data-fault` attribute.
    name: &'static str,
    /// The legend's words.
    legend: &'static str,
    /// Line, label and shading colour.
    color: &'static str,
}

/// A replica replaces the master.
const FAILOVER: FaultKind = FaultKind {
    name: "failover",
    legend: "failover (a replica replaces the master)",
    color: "#e65100",
};
/// A node killed or restarted.
const NODE: FaultKind = FaultKind {
    name: "node",
    legend: "node killed / restarted",
    color: "#6d4c41",
};
/// Partitions, isolation, heal.
const PARTITION: FaultKind = FaultKind {
    name: "partition",
    legend: "partition / heal",
    color: "#8e24aa",
};
/// Faults on clients' links.
const NETWORK: FaultKind = FaultKind {
    name: "network",
    legend: "link fault (latency, drops, resets)",
    color: "#3949ab",
};
/// A node (or a client) stopped.
const PAUSE: FaultKind = FaultKind {
    name: "pause",
    legend: "node paused",
    color: "#00897b",
};
/// A clock jump.
const CLOCK: FaultKind = FaultKind {
    name: "clock",
    legend: "clock jump",
    color: "#c2185b",
};
/// Replication delayed or stalled.
const REPLICATION: FaultKind = FaultKind {
    name: "replication",
    legend: "replication delayed / stalled",
    color: "#546e7a",
};
/// A note in the caller's words.
const OTHER_FAULT: FaultKind = FaultKind {
    name: "other",
    legend: "fault",
    color: "#8a5600",
};

/// The family `fault` is drawn in.
fn fault_kind(fault: &Fault) -> FaultKind {
    match fault {
        Fault::FailMaster { .. } | Fault::SwitchMaster { .. } => FAILOVER,
        Fault::Kill(_) | Fault::Restart(..) => NODE,
        Fault::Partition(..) | Fault::Isolate(_) | Fault::Heal => PARTITION,
        Fault::Latency(..)
        | Fault::DropTraffic(_)
        | Fault::ResetConnections { .. }
        | Fault::LinkRule { .. } => NETWORK,
        Fault::Pause(..) | Fault::ClientPause { .. } => PAUSE,
        Fault::ClockJump(..) => CLOCK,
        Fault::ReplicationDelay { .. } | Fault::ReplicationStall => REPLICATION,
        Fault::Note(_) => OTHER_FAULT,
    }
}

/// How a legend entry's sample is drawn.
#[derive(Debug, Clone, Copy)]
enum Swatch {
    /// A filled bar in a colour (a hold).
    Bar(&'static str),
    /// A dashed, lighter bar (a hold still open at the end).
    OpenBar,
    /// A dashed vertical line in a colour (a fault).
    FaultLine(&'static str),
    /// A shaded span (a fault that lasted).
    Span,
    /// A text mark in a colour.
    Glyph(&'static str, &'static str),
    /// The violation's red box.
    Violation,
}

/// One entry of the legend: its `data-mark`, extra attributes, sample and words.
#[derive(Debug)]
struct LegendEntry {
    mark: &'static str,
    attrs: String,
    swatch: Swatch,
    text: String,
}

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

/// Roughly how wide `text` is at 12 px sans-serif (for laying out the legend); a character
/// reference (`&#215;`) counts as one character.
fn text_width(text: &str) -> f64 {
    let mut n = 0usize;
    let mut in_ref = false;
    for c in text.chars() {
        match c {
            '&' => in_ref = true,
            ';' if in_ref => {
                in_ref = false;
                n += 1;
            }
            _ if in_ref => {}
            _ => n += 1,
        }
    }
    n as f64 * 6.6
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
        // Rows (and colours) in order of first appearance.
        let mut order: Vec<String> = Vec::new();
        for e in &events {
            if !order.contains(&e.client) {
                order.push(e.client.clone());
            }
        }
        let rows: BTreeMap<&str, usize> = order
            .iter()
            .enumerate()
            .map(|(i, c)| (c.as_str(), i))
            .collect();
        let row_of = |client: &str| rows.get(client).copied().unwrap_or(0);
        let color_of = |client: &str| CLIENT_COLORS[row_of(client) % CLIENT_COLORS.len()];
        let t_end = events
            .iter()
            .map(|e| e.end_ms)
            .chain(holds.iter().map(|h| h.to_ms))
            .chain(faults.iter().map(|f| f.end_ms.unwrap_or(f.start_ms)))
            .max()
            .unwrap_or(0)
            .max(1) as f64
            * 1.05;
        let x = |ms: f64| LEFT + (ms / t_end) * (WIDTH - LEFT - RIGHT);
        let xm = |ms: u64| x(ms as f64);
        // Fault labels: right of their line, or left of it where they would run out of the
        // picture, each on the first line of labels where it clears the label before it.
        let mut line_ends: Vec<f64> = Vec::new();
        let labels: Vec<(usize, bool)> = faults
            .iter()
            .map(|f| {
                let (at, width) = (xm(f.start_ms), text_width(&f.label()) + 24.0);
                let leftward = at + width > WIDTH;
                let from = if leftward { at - width } else { at };
                let line = match line_ends.iter().position(|end| *end <= from) {
                    Some(line) => line,
                    None => {
                        line_ends.push(0.0);
                        line_ends.len() - 1
                    }
                };
                if let Some(end) = line_ends.get_mut(line) {
                    *end = from + width;
                }
                (line, leftward)
            })
            .collect();
        let top = LABELS_TOP + line_ends.len().max(1) as f64 * LABEL_LINE + 6.0;
        let y = |client: &str| top + row_of(client) as f64 * ROW;
        let bottom = top + order.len().max(1) as f64 * ROW + 10.0;

        let legend = self.legend_entries(&order, &color_of);
        let (legend_svg, legend_rows) = legend_svg(&legend, bottom + 40.0);
        let height = bottom + 40.0 + legend_rows as f64 * LEGEND_ROW + 10.0;

        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12" role="img" aria-label="{}">"#,
            esc(&self.title)
        );
        let _ = write!(
            s,
            r#"<rect width="100%" height="100%" fill="white"/><text x="10" y="22" font-size="16" font-weight="bold">{}</text>"#,
            esc(&self.title)
        );
        // Faults: a shaded span (when it lasted) and a dashed line at its start, with its label.
        for (i, f) in faults.iter().enumerate() {
            let kind = fault_kind(&f.fault);
            let x0 = xm(f.start_ms);
            let x1 = f.end_ms.map_or(x0, xm);
            let (line, leftward) = labels.get(i).copied().unwrap_or((0, false));
            let label_y = LABELS_TOP + line as f64 * LABEL_LINE;
            let (label_x, anchor) = if leftward {
                (x0 - 3.0, "end")
            } else {
                (x0 + 3.0, "start")
            };
            let _ = write!(
                s,
                r#"<g class="fault" data-fault="{}"><title>{} at {} ms{}</title>"#,
                kind.name,
                esc(&f.label()),
                f.start_ms,
                f.end_ms
                    .map(|e| format!(" until {e} ms"))
                    .unwrap_or_default()
            );
            if x1 > x0 + 1.0 {
                let _ = write!(
                    s,
                    r#"<rect class="fault-span" x="{x0:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="{}" opacity="0.12"/>"#,
                    x1 - x0,
                    bottom - top,
                    kind.color
                );
            }
            let _ = write!(
                s,
                r#"<line x1="{x0:.1}" y1="{:.1}" x2="{x0:.1}" y2="{bottom:.1}" stroke="{}" stroke-width="1.5" stroke-dasharray="4 3"/><text x="{label_x:.1}" y="{label_y:.1}" text-anchor="{anchor}" fill="{}">&#9889; {}</text></g>"#,
                label_y - 10.0,
                kind.color,
                kind.color,
                esc(&f.label())
            );
        }
        for client in &order {
            let yy = y(client);
            let _ = write!(
                s,
                r##"<text class="client" x="10" y="{:.1}" fill="{}" font-weight="bold">{}</text><line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#ddd"/>"##,
                yy + 20.0,
                color_of(client),
                esc(client),
                yy + 16.0,
                WIDTH - RIGHT,
                yy + 16.0
            );
        }
        let mut outlines = String::new();
        for v in &self.violations {
            let (x0, x1) = (xm(v.overlap_from_ms), xm(v.overlap_to_ms));
            let (a, b) = (y(&v.first.client), y(&v.second.client));
            let (top, bot) = (a.min(b) + 2.0, a.max(b) + 30.0);
            let (width, height, title) = ((x1 - x0).max(3.0), bot - top, esc(&v.to_string()));
            let _ = write!(
                s,
                r#"<rect class="violation" x="{x0:.1}" y="{top:.1}" width="{width:.1}" height="{height:.1}" fill="{VIOLATION_COLOR}" fill-opacity="0.3"><title>{title}</title></rect>"#
            );
            let _ = write!(
                outlines,
                r##"<rect class="violation-outline" x="{x0:.1}" y="{top:.1}" width="{width:.1}" height="{height:.1}" fill="none" stroke="#b71c1c" stroke-width="2"><title>{title}</title></rect>"##
            );
        }
        for h in &holds {
            let (x0, x1) = (xm(h.from_ms), xm(h.to_ms));
            let color = color_of(&h.client);
            let open = if h.open {
                r#" fill-opacity="0.55" stroke-dasharray="4 2""#
            } else {
                ""
            };
            let _ = write!(
                s,
                r#"<g class="hold" data-client="{}" data-open="{}"><rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="20" rx="3" fill="{color}" stroke="{color}"{open}><title>{} holds {} {}..{} ms{}{}</title></rect><text x="{:.1}" y="{:.1}" fill="white" font-size="11">{}"#,
                esc(&h.client),
                h.open,
                y(&h.client) + 6.0,
                (x1 - x0).max(2.0),
                esc(&h.client),
                esc(&h.resource),
                h.from_ms,
                h.to_ms,
                h.token.map(|t| format!(" token {t}")).unwrap_or_default(),
                if h.open { " (still held)" } else { "" },
                x0 + 4.0,
                y(&h.client) + 20.0,
                esc(&h.resource),
            );
            if let Some(t) = h.token {
                let _ = write!(
                    s,
                    r#" <tspan class="token" font-weight="bold">token {t}</tspan>"#
                );
            }
            s.push_str("</text></g>");
        }
        for e in &events {
            let Some((mark, glyph, color)) = event_mark(&e.kind) else {
                continue;
            };
            let _ = write!(
                s,
                r#"<text class="mark" data-mark="{mark}" x="{:.1}" y="{:.1}" fill="{color}" font-weight="bold">{glyph}<title>{} {:?}{} at {} ms</title></text>"#,
                xm(e.end_ms) - 3.0,
                y(&e.client) + 40.0,
                esc(&e.client),
                e.kind,
                e.token.map(|t| format!(" token {t}")).unwrap_or_default(),
                e.end_ms
            );
        }
        // The violations' outlines go over the holds, their shading under them (so the bars
        // keep their colours).
        s.push_str(&outlines);
        // Time axis: round ticks (1, 2 or 5 x 10^k ms or s).
        let ticks = Ticks::new(t_end, MAX_TICK_INTERVALS);
        let _ = write!(
            s,
            r##"<g class="axis"><line x1="{LEFT}" y1="{bottom:.1}" x2="{:.1}" y2="{bottom:.1}" stroke="#333"/>"##,
            WIDTH - RIGHT
        );
        for &t in &ticks.values {
            let _ = write!(
                s,
                r##"<g class="tick"><line x1="{0:.1}" y1="{bottom:.1}" x2="{0:.1}" y2="{1:.1}" stroke="#333"/><text x="{0:.1}" y="{2:.1}" text-anchor="middle" fill="#333">{3}</text></g>"##,
                x(t),
                bottom + 5.0,
                bottom + 18.0,
                ticks.label_ms(t)
            );
        }
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#666">time since the topology started</text></g>"##,
            WIDTH - RIGHT,
            bottom + 32.0
        );
        s.push_str(&legend_svg);
        s.push_str("</svg>");
        s
    }

    /// What the legend names: each client's colour, open holds, fencing tokens, the kinds of
    /// faults drawn (and their spans), the event marks and the violation, each only when the
    /// picture shows it.
    fn legend_entries(
        &self,
        clients: &[String],
        color_of: &dyn Fn(&str) -> &'static str,
    ) -> Vec<LegendEntry> {
        let holds = Checker::holds(&self.history);
        let events = self.history.events();
        let faults = self.history.faults();
        let mut entries = Vec::new();
        for client in clients {
            if holds.iter().any(|h| &h.client == client) {
                entries.push(LegendEntry {
                    mark: "holder",
                    attrs: format!(r#" data-client="{}""#, esc(client)),
                    swatch: Swatch::Bar(color_of(client)),
                    text: format!("{client} holds the lock"),
                });
            }
        }
        if holds.iter().any(|h| h.open) {
            entries.push(LegendEntry {
                mark: "open-hold",
                attrs: String::new(),
                swatch: Swatch::OpenBar,
                text: "still held at the end (no release seen)".into(),
            });
        }
        if holds.iter().any(|h| h.token.is_some()) {
            entries.push(LegendEntry {
                mark: "token",
                attrs: String::new(),
                swatch: Swatch::Glyph("token n", "#333"),
                text: "fencing token of the hold".into(),
            });
        }
        let mut kinds: Vec<FaultKind> = Vec::new();
        for f in &faults {
            let kind = fault_kind(&f.fault);
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        for kind in kinds {
            entries.push(LegendEntry {
                mark: "fault",
                attrs: format!(r#" data-fault="{}""#, kind.name),
                swatch: Swatch::FaultLine(kind.color),
                text: kind.legend.into(),
            });
        }
        if faults
            .iter()
            .any(|f| f.end_ms.is_some_and(|e| e > f.start_ms))
        {
            entries.push(LegendEntry {
                mark: "fault-span",
                attrs: String::new(),
                swatch: Swatch::Span,
                text: "while the fault lasted".into(),
            });
        }
        let mut marks: Vec<(&'static str, &'static str, &'static str)> = Vec::new();
        for e in &events {
            if let Some(m) = event_mark(&e.kind) {
                if !marks.contains(&m) {
                    marks.push(m);
                }
            }
        }
        for (mark, glyph, color) in marks {
            entries.push(LegendEntry {
                mark,
                attrs: String::new(),
                swatch: Swatch::Glyph(glyph, color),
                text: mark_words(mark).into(),
            });
        }
        if !self.violations.is_empty() {
            entries.push(LegendEntry {
                mark: "violation",
                attrs: String::new(),
                swatch: Swatch::Violation,
                text: "violation: two holders at once".into(),
            });
        }
        entries
    }

    /// A self-contained HTML page: the SVG, then the violations in words.
    pub fn to_html(&self) -> String {
        let mut s = format!(
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title></head><body style=\"font-family:sans-serif\">",
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
        let faults = self.history.faults();
        if faults.is_empty() {
            s.push_str("<h3>Faults</h3><p>None.</p></body></html>\n");
            return s;
        }
        s.push_str("<h3>Faults</h3><ul>");
        for f in faults {
            let end = f
                .end_ms
                .map(|e| format!(" until {e} ms"))
                .unwrap_or_default();
            let _ = write!(s, "<li>{} ms: {}{}</li>", f.start_ms, esc(&f.label()), end);
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

/// The mark of an event that is not an acquire or release: its `data-mark`, glyph and colour.
fn event_mark(kind: &EventKind) -> Option<(&'static str, &'static str, &'static str)> {
    match kind {
        EventKind::AcquireFailed => Some(("acquire-failed", "&#215;", "#616161")),
        EventKind::Lost => Some(("lost", "lost", "#d84315")),
        EventKind::Write { accepted: true } => Some(("write-accepted", "w&#10003;", "#1b5e20")),
        EventKind::Write { accepted: false } => Some(("write-rejected", "w&#10007;", "#b71c1c")),
        EventKind::ForeignRelease { accepted: true } => {
            Some(("foreign-release-accepted", "u!", "#6a1b9a"))
        }
        EventKind::ForeignRelease { accepted: false } => {
            Some(("foreign-release-refused", "u&#215;", "#9e9e9e"))
        }
        EventKind::Acquired | EventKind::AcquiredShared | EventKind::Released => None,
    }
}

/// The legend's words for an event mark.
fn mark_words(mark: &str) -> &'static str {
    match mark {
        "acquire-failed" => "acquire refused",
        "lost" => "holder learnt it lost the lock",
        "write-accepted" => "write accepted by the resource",
        "foreign-release-accepted" => "unlock by a non-holder accepted",
        "foreign-release-refused" => "unlock by a non-holder refused",
        _ => "write rejected by the resource (stale token)",
    }
}

/// The legend, laid out left to right from `top`, wrapping at the picture's width; returns the
/// SVG and the number of lines it takes.
fn legend_svg(entries: &[LegendEntry], top: f64) -> (String, usize) {
    let mut s = String::from(r#"<g class="legend">"#);
    let _ = write!(
        s,
        r#"<text x="10" y="{:.1}" font-weight="bold">Legend</text>"#,
        top + 13.0
    );
    let (start, mut x, mut line) = (70.0, 70.0, 0usize);
    for e in entries {
        let swatch_w = match e.swatch {
            // Marks are bold.
            Swatch::Glyph(glyph, _) => (text_width(glyph) * 1.3).max(14.0),
            Swatch::FaultLine(_) => 16.0,
            _ => 22.0,
        };
        let w = swatch_w + 6.0 + text_width(&e.text) + 22.0;
        if x > start && x + w > WIDTH - 10.0 {
            x = start;
            line += 1;
        }
        let y = top + line as f64 * LEGEND_ROW;
        let _ = write!(
            s,
            r#"<g class="legend-entry" data-mark="{}"{}>"#,
            e.mark, e.attrs
        );
        s.push_str(&swatch_svg(e.swatch, x, y));
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{}</text></g>"#,
            x + swatch_w + 6.0,
            y + 13.0,
            esc(&e.text)
        );
        x += w;
    }
    s.push_str("</g>");
    (s, line + 1)
}

/// A legend entry's sample at (`x`, `y`), the top left of its line.
fn swatch_svg(swatch: Swatch, x: f64, y: f64) -> String {
    match swatch {
        Swatch::Bar(color) => format!(
            r#"<rect x="{x:.1}" y="{:.1}" width="22" height="12" rx="2" fill="{color}"/>"#,
            y + 3.0
        ),
        Swatch::OpenBar => format!(
            r##"<rect x="{x:.1}" y="{:.1}" width="22" height="12" rx="2" fill="#777" fill-opacity="0.55" stroke="#777" stroke-dasharray="4 2"/>"##,
            y + 3.0
        ),
        Swatch::FaultLine(color) => format!(
            r#"<line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="{color}" stroke-width="2" stroke-dasharray="4 2"/><text x="{3:.1}" y="{4:.1}" fill="{color}">&#9889;</text>"#,
            x + 1.0,
            y + 1.0,
            y + 17.0,
            x + 5.0,
            y + 13.0
        ),
        Swatch::Span => format!(
            r##"<rect x="{x:.1}" y="{:.1}" width="22" height="14" fill="#8a5600" opacity="0.15"/>"##,
            y + 2.0
        ),
        Swatch::Glyph(glyph, color) => format!(
            r#"<text x="{x:.1}" y="{:.1}" fill="{color}" font-weight="bold">{glyph}</text>"#,
            y + 13.0
        ),
        Swatch::Violation => format!(
            r##"<rect x="{x:.1}" y="{:.1}" width="22" height="14" fill="{VIOLATION_COLOR}" fill-opacity="0.3" stroke="#b71c1c" stroke-width="2"/>"##,
            y + 2.0
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Event;
    use crate::{NodeId, Restart};
    use std::time::Duration;

    fn ev(client: &str, kind: EventKind, at: u64, token: Option<u64>) -> Event {
        Event::new(client, "orders", kind, at, at, token)
    }

    /// The legend part of a page.
    fn legend(page: &str) -> &str {
        let from = page.find(r#"<g class="legend">"#).unwrap();
        let to = from + page[from..].find("</svg>").unwrap();
        &page[from..to]
    }

    /// The `data-mark` values of the legend's entries, in order.
    fn legend_marks(page: &str) -> Vec<String> {
        legend(page)
            .split(r#"<g class="legend-entry" data-mark=""#)
            .skip(1)
            .map(|rest| rest.split('"').next().unwrap().to_string())
            .collect()
    }

    /// Two fenced holders overlapping under a failover, a pause and a clock jump; the stale
    /// holder's write is rejected.
    async fn overlapping_history() -> History {
        let h = History::new();
        h.record(ev("client-a", EventKind::Acquired, 0, Some(1)));
        h.record(ev(
            "client-a",
            EventKind::Write { accepted: true },
            10,
            Some(1),
        ));
        tokio::time::advance(Duration::from_millis(100)).await;
        h.fault(Fault::FailMaster {
            old: NodeId::from_index(0),
            new: NodeId::from_index(1),
        });
        tokio::time::advance(Duration::from_millis(100)).await;
        let pause = h.fault(Fault::Pause(
            NodeId::from_index(1),
            Duration::from_millis(300),
        ));
        tokio::time::advance(Duration::from_millis(300)).await;
        h.fault_ended(pause);
        h.fault(Fault::ClockJump(NodeId::from_index(1), 5000));
        h.record(ev("client-b", EventKind::AcquireFailed, 150, None));
        h.record(ev("client-b", EventKind::Acquired, 600, Some(2)));
        h.record(ev(
            "client-a",
            EventKind::Write { accepted: false },
            700,
            Some(1),
        ));
        h.record(ev("client-a", EventKind::Lost, 900, None));
        h.record(ev("client-b", EventKind::Released, 1234, Some(2)));
        h
    }

    #[tokio::test(start_paused = true)]
    async fn legend_names_each_holder_fault_token_mark_and_the_violation() {
        let h = overlapping_history().await;
        let timeline = Timeline::new("overlap", &h);
        assert_eq!(timeline.violations().len(), 1);
        let page = timeline.to_html();
        assert_eq!(
            legend_marks(&page),
            [
                "holder",
                "holder",
                "token",
                "fault",
                "fault",
                "fault",
                "fault-span",
                "write-accepted",
                "acquire-failed",
                "write-rejected",
                "lost",
                "violation"
            ]
        );
        let legend = legend(&page);
        for entry in [
            r#"data-mark="holder" data-client="client-a""#,
            r#"data-mark="holder" data-client="client-b""#,
            r#"data-mark="fault" data-fault="failover""#,
            r#"data-mark="fault" data-fault="pause""#,
            r#"data-mark="fault" data-fault="clock""#,
            ">client-a holds the lock<",
            ">fencing token of the hold<",
            ">clock jump<",
            ">violation: two holders at once<",
        ] {
            assert!(legend.contains(entry), "legend lacks {entry}");
        }
        // Each holder's legend colour is the colour of its bars.
        for (client, color) in [
            ("client-a", CLIENT_COLORS[0]),
            ("client-b", CLIENT_COLORS[1]),
        ] {
            let fill = format!(r#"fill="{color}""#);
            let entry = legend
                .split(&format!(r#"data-client="{client}">"#))
                .nth(1)
                .unwrap();
            assert!(entry[..entry.find("</g>").unwrap()].contains(&fill));
            let bar = page
                .split(&format!(r#"<g class="hold" data-client="{client}""#))
                .nth(1)
                .unwrap();
            assert!(bar[..bar.find("</g>").unwrap()].contains(&fill));
        }
        assert!(page.contains(r#"<tspan class="token" font-weight="bold">token 2</tspan>"#));
        assert_eq!(page.matches(r#"<rect class="violation""#).count(), 1);
        assert_eq!(page.matches(r#"<g class="fault" data-fault="#).count(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn legend_leaves_out_what_the_picture_does_not_draw() {
        let h = History::new();
        h.record(ev("client-a", EventKind::Acquired, 0, None));
        h.record(ev("client-a", EventKind::Released, 40, None));
        h.record(ev("client-b", EventKind::Acquired, 50, None));
        let page = Timeline::new("one after the other", &h).to_html();
        assert_eq!(legend_marks(&page), ["holder", "holder", "open-hold"]);
        for absent in ["violation", "token", "fault", "lost", "acquire-failed"] {
            assert!(
                !legend(&page).contains(&format!(r#"data-mark="{absent}""#)),
                "{absent}"
            );
        }
        assert!(!page.contains(r#"class="violation""#));
        assert!(page.contains("<p>No mutual-exclusion violation.</p>"));
        assert!(page.contains(r#"data-client="client-b" data-open="true""#));
    }

    #[tokio::test(start_paused = true)]
    async fn time_axis_ticks_are_round() {
        let h = overlapping_history().await;
        let page = Timeline::new("overlap", &h).to_svg();
        let labels: Vec<&str> = page
            .split(r#"<g class="tick">"#)
            .skip(1)
            .map(|t| {
                let text = &t[t.find("<text").unwrap()..];
                let from = text.find('>').unwrap() + 1;
                &text[from..from + text[from..].find('<').unwrap()]
            })
            .collect();
        // The history ends at 1234 ms; the axis (5 % longer) ticks every 200 ms.
        assert_eq!(
            labels,
            ["0 ms", "200 ms", "400 ms", "600 ms", "800 ms", "1000 ms", "1200 ms"]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_empty_history_still_draws_an_axis_and_a_legend() {
        let page = Timeline::new("nothing", &History::new()).to_html();
        assert!(page.contains(r#"<g class="tick">"#));
        assert!(legend_marks(&page).is_empty());
        assert!(page.contains(r#"<g class="legend">"#));
    }

    #[tokio::test(start_paused = true)]
    async fn fault_labels_stay_inside_the_picture_and_clear_each_other() {
        let h = History::new();
        h.record(ev("client-a", EventKind::Acquired, 0, None));
        h.fault(Fault::Kill(NodeId::from_index(3)));
        h.fault(Fault::Restart(NodeId::from_index(3), Restart::Empty));
        tokio::time::advance(Duration::from_millis(1000)).await;
        h.fault(Fault::Note("a late fault with a rather long label".into()));
        let svg = Timeline::new("labels", &h).to_svg();
        let label_ys: Vec<&str> = svg
            .split(r#"<g class="fault""#)
            .skip(1)
            .map(|f| {
                let text = &f[f.find("<text ").unwrap()..];
                text.split(" y=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
            })
            .collect();
        // The two labels at 0 ms take a line each; the late one fits on the first line again.
        assert_eq!(label_ys, ["42.0", "55.0", "42.0"]);
        let late = svg.split(r#"<g class="fault""#).nth(3).unwrap();
        assert!(late.contains(r#"text-anchor="end""#), "{late}");
    }

    #[test]
    fn each_fault_is_drawn_in_its_family() {
        let n = NodeId::from_index;
        let ms = Duration::from_millis;
        for (fault, label, kind) in [
            (
                Fault::FailMaster {
                    old: n(0),
                    new: n(1),
                },
                "fail_master n0 -> n1",
                "failover",
            ),
            (
                Fault::SwitchMaster {
                    old: n(0),
                    new: n(2),
                },
                "failover n0 -> n2",
                "failover",
            ),
            (Fault::Kill(n(1)), "kill n1", "node"),
            (
                Fault::Restart(n(1), Restart::Empty),
                "restart n1 (empty)",
                "node",
            ),
            (
                Fault::Restart(n(1), Restart::keep_data(ms(1000))),
                "restart n1 (kept data, lost last 1000 ms)",
                "node",
            ),
            (
                Fault::Partition(n(0), n(1)),
                "partition n0 | n1",
                "partition",
            ),
            (Fault::Isolate(n(2)), "isolate n2", "partition"),
            (Fault::Heal, "heal", "partition"),
            (Fault::Latency(n(1), ms(20)), "latency n1 20 ms", "network"),
            (Fault::DropTraffic(n(1)), "drop traffic n1", "network"),
            (
                Fault::ResetConnections {
                    node: n(0),
                    count: 3,
                },
                "reset 3 connection(s) of n0",
                "network",
            ),
            (
                Fault::LinkRule {
                    node: n(0),
                    label: "drop replies".into(),
                },
                "drop replies",
                "network",
            ),
            (Fault::Pause(n(1), ms(500)), "pause n1 500 ms", "pause"),
            (Fault::ClockJump(n(1), 500), "clock n1 +500 ms", "clock"),
            (Fault::ClockJump(n(1), -500), "clock n1 -500 ms", "clock"),
            (
                Fault::ReplicationDelay {
                    delay: ms(500),
                    jitter: ms(7),
                },
                "replication delay 500 ms",
                "replication",
            ),
            (
                Fault::ReplicationStall,
                "replication stalled",
                "replication",
            ),
            (
                Fault::ClientPause {
                    client: "client-a".into(),
                    duration: ms(6000),
                },
                "client-a paused 6000 ms",
                "pause",
            ),
            (Fault::Note("my own fault".into()), "my own fault", "other"),
        ] {
            assert_eq!(fault.to_string(), label);
            assert_eq!(fault_kind(&fault).name, kind, "{label}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn labels_are_escaped() {
        let h = History::new();
        h.record(ev("<a&b>", EventKind::Acquired, 0, None));
        h.fault(Fault::Note("my <fault>".into()));
        let page = Timeline::new("t", &h).to_html();
        assert!(page.contains("&lt;a&amp;b&gt; holds the lock"));
        assert!(page.contains("my &lt;fault&gt;"));
        assert!(!page.contains("<a&b>"));
    }
}
