//! `LOLWUT [VERSION v] [args]`, Redis 7.0's: the version line, or with `VERSION 5` Georg
//! Nees's *Schotter* in Braille dots, with `VERSION 6` a skyline in the four grays of a color
//! terminal (ported from `lolwut5.c` and `lolwut6.c`; the randomness is the node's).

use super::{Args, CmdResult, Command, CommandError, Ctx};
use bytes::Bytes;
use locksmith_resp::Frame;
use rand::rngs::StdRng;
use rand::Rng;

/// The family's table.
pub(crate) static COMMANDS: &[Command] = &[Command::new("lolwut", lolwut)];

/// The most pixels a Schotter canvas holds (16 MB).
const MAX_PIXELS: i64 = 16 << 20;

/// A canvas of `width` × `height` pixels holding colors.
struct Canvas {
    width: i64,
    height: i64,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: i64, height: i64, color: u8) -> Canvas {
        let size = usize::try_from(width * height).unwrap_or(0);
        Canvas {
            width,
            height,
            pixels: vec![color; size],
        }
    }

    /// The pixel's index, if it is on the canvas.
    fn index(&self, x: i64, y: i64) -> Option<usize> {
        ((0..self.width).contains(&x) && (0..self.height).contains(&y))
            .then(|| usize::try_from(x + y * self.width).ok())
            .flatten()
    }

    /// Sets a pixel; outside the canvas nothing happens.
    fn draw(&mut self, x: i64, y: i64, color: u8) {
        if let Some(i) = self.index(x, y) {
            self.pixels[i] = color;
        }
    }

    /// A pixel's color, 0 outside the canvas.
    fn get(&self, x: i64, y: i64) -> u8 {
        self.index(x, y).map_or(0, |i| self.pixels[i])
    }

    /// Bresenham's line from (x1, y1) to (x2, y2).
    fn line(&mut self, mut x1: i64, mut y1: i64, x2: i64, y2: i64, color: u8) {
        let (dx, dy) = ((x2 - x1).abs(), (y2 - y1).abs());
        let (sx, sy) = (if x1 < x2 { 1 } else { -1 }, if y1 < y2 { 1 } else { -1 });
        let mut err = dx - dy;
        loop {
            self.draw(x1, y1, color);
            if x1 == x2 && y1 == y2 {
                break;
            }
            let e2 = err * 2;
            if e2 > -dy {
                err -= dy;
                x1 += sx;
            }
            if e2 < dx {
                err += dx;
                y1 += sy;
            }
        }
    }

    /// A square centered at (x, y) with side `size`, rotated by `angle`.
    fn square(&mut self, x: i64, y: i64, size: f32, angle: f32, color: u8) {
        let size = (size / std::f32::consts::SQRT_2).round();
        let mut k = std::f32::consts::FRAC_PI_4 + angle;
        let mut points = [(0i64, 0i64); 4];
        for p in &mut points {
            *p = (
                (k.sin() * size + x as f32).round() as i64,
                (k.cos() * size + y as f32).round() as i64,
            );
            k += std::f32::consts::FRAC_PI_2;
        }
        for j in 0..4 {
            let ((x1, y1), (x2, y2)) = (points[j], points[(j + 1) % 4]);
            self.line(x1, y1, x2, y2, color);
        }
    }
}

/// `LOLWUT VERSION 5 [columns] [squares-per-row] [squares-per-col]`.
fn schotter(rng: &mut StdRng, cols: i64, per_row: i64, per_col: i64, version: &str) -> String {
    let width = cols * 2;
    let padding = if width > 4 { 2 } else { 0 };
    let side = (width - padding * 2) as f32 / per_row as f32;
    // Redis's limits still allow a 2000 × 400 000 canvas (800 MB); the picture is cut at
    // MAX_PIXELS instead (only its lower rows are lost).
    let height = ((side * per_col as f32) as i64 + padding * 2).min(MAX_PIXELS / width);
    let mut canvas = Canvas::new(width, height, 0);
    let random = |rng: &mut StdRng, y: i64| rng.random::<f32>() / per_col as f32 * y as f32;
    for y in 0..per_col {
        for x in 0..per_row {
            let mut sx = (x as f32 * side + side / 2.0) as i64 + padding;
            let mut sy = (y as f32 * side + side / 2.0) as i64 + padding;
            let mut angle = 0.0;
            // Rotated and moved at random, more so down the rows.
            if y > 1 {
                let mut r = [random(rng, y), random(rng, y), random(rng, y)];
                for v in &mut r {
                    if rng.random::<bool>() {
                        *v = -*v;
                    }
                }
                angle = r[0];
                sx = (sx as f32 + r[1] * side / 3.0) as i64;
                sy = (sy as f32 + r[2] * side / 3.0) as i64;
            }
            canvas.square(sx, sy, side, angle, 1);
        }
    }
    // Each Braille character shows 2 × 4 pixels.
    let mut text = String::new();
    let mut y = 0;
    while y < canvas.height {
        let mut x = 0;
        while x < canvas.width {
            let bits = [
                (0, 0, 0),
                (0, 1, 1),
                (0, 2, 2),
                (1, 0, 3),
                (1, 1, 4),
                (1, 2, 5),
                (0, 3, 6),
                (1, 3, 7),
            ];
            let byte = bits
                .iter()
                .filter(|(dx, dy, _)| canvas.get(x + dx, y + dy) != 0)
                .fold(0u32, |b, (_, _, bit)| b | 1 << bit);
            text.push(char::from_u32(0x2800 + byte).unwrap_or(' '));
            x += 2;
        }
        if y != canvas.height - 1 {
            text.push('\n');
        }
        y += 4;
    }
    format!("{text}\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. {version}\n")
}

/// One building of the skyline: the roof two pixels narrower each side, windows two pixels
/// wide and one tall in one of the grays.
#[allow(clippy::too_many_arguments)]
fn skyscraper(
    canvas: &mut Canvas,
    rng: &mut StdRng,
    xoff: i64,
    width: i64,
    height: i64,
    windows: bool,
    color: u8,
) {
    let start = canvas.height - 1;
    let end = start - height + 1;
    let mut y = start;
    while y >= end {
        for x in xoff..xoff + width {
            if y == end && (x <= xoff + 1 || x >= xoff + width - 2) {
                continue;
            }
            let mut c = color;
            if windows && x > xoff + 1 && x < xoff + width - 2 && y > end + 1 && y < start - 1 {
                let (relx, rely) = (x - (xoff + 1), y - (end + 1));
                if (relx / 2) % 2 != 0 && rely % 2 != 0 {
                    c = loop {
                        let gray = 1 + rng.random_range(0..2u8);
                        if gray != color {
                            break gray;
                        }
                    };
                    if relx % 2 != 0 {
                        c = canvas.get(x - 1, y);
                    }
                }
            }
            canvas.draw(x, y, c);
        }
        y -= 1;
    }
}

/// `LOLWUT VERSION 6 [columns] [rows]`: a skyline inspired by 8-bit parallax backgrounds.
fn skyline(rng: &mut StdRng, cols: i64, rows: i64, version: &str) -> String {
    let mut canvas = Canvas::new(cols, rows, 3);
    let h = canvas.height;
    let rand = |rng: &mut StdRng, n: i64| rng.random_range(0..n.max(1));
    // Background buildings without windows, the lighter ones behind.
    for color in [2u8, 1] {
        let mut offset = -10;
        while offset < canvas.width {
            offset += rand(rng, 8);
            let width = 10 + rand(rng, 9);
            let height = if color == 2 {
                h / 2 + rand(rng, h) / 2
            } else {
                h / 2 + rand(rng, h) / 3
            };
            skyscraper(&mut canvas, rng, offset, width, height, false, color);
            offset += if color == 2 { width / 2 } else { width + 1 };
        }
    }
    // Then the black ones in front, with windows.
    let mut offset = -10;
    while offset < canvas.width {
        offset += rand(rng, 8);
        let mut width = 5 + rand(rng, 14);
        if width % 4 != 0 {
            width += width % 3;
        }
        let height = h / 3 + rand(rng, h) / 2;
        skyscraper(&mut canvas, rng, offset, width, height, true, 0);
        offset += width + 5;
    }
    let mut text = String::new();
    for y in 0..canvas.height {
        for x in 0..canvas.width {
            let escape = match canvas.get(x, y) {
                1 => "0;90;100m",
                2 => "0;37;47m",
                3 => "0;97;107m",
                _ => "0;30;40m",
            };
            text.push_str(&format!("\x1b[{escape} \x1b[0m"));
        }
        if y != canvas.height - 1 {
            text.push('\n');
        }
    }
    format!(
        "{text}\nDedicated to the 8 bit game developers of past and present.\n\
         Original 8 bit image from Plaguemon by hikikomori. Redis ver. {version}\n"
    )
}

/// The numeric argument `i` of the art's arguments, `default` when absent.
fn number(args: &[Bytes], i: usize, default: i64) -> Result<i64, CommandError> {
    args.get(i).map_or(Ok(default), |a| super::parse_i64(a))
}

/// ```text
/// LOLWUT [VERSION version] [argument ...]
/// ```
fn lolwut(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> CmdResult {
    let mut rest = args.rest();
    let mut version = None;
    if rest.len() >= 2 && rest[0].eq_ignore_ascii_case(b"version") {
        version = Some(super::parse_i64(&rest[1])?);
        rest = &rest[2..];
    }
    let ours = ctx.node.config.profile().version;
    let rng = &mut ctx.state.rng;
    // Redis prints the version as an unsigned int ("%u.0.0") and looks at its first digits.
    let text = match version.map(|v| v as u32) {
        Some(5) => {
            let cols = number(rest, 0, 66)?.clamp(1, 1000);
            let per_row = number(rest, 1, 8)?.clamp(1, 200);
            let per_col = number(rest, 2, 12)?.clamp(1, 200);
            schotter(rng, cols, per_row, per_col, ours)
        }
        Some(6) => {
            let cols = number(rest, 0, 80)?.clamp(1, 1000);
            let rows = number(rest, 1, 20)?.clamp(1, 1000);
            skyline(rng, cols, rows, ours)
        }
        _ => format!("Redis ver. {ours}\n"),
    };
    Ok(Frame::Verbatim {
        format: *b"txt",
        text: Bytes::from(text),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn art_has_the_requested_size() {
        let mut rng = StdRng::seed_from_u64(1);
        let art = schotter(&mut rng, 10, 2, 3, "7.0.15");
        let lines: Vec<&str> = art.lines().collect();
        // 20 pixels wide (10 characters), 3 squares of 8 pixels plus padding = 28 tall
        // (7 character rows), then, as Redis prints it, an empty line and the caption.
        assert_eq!(lines.len(), 9);
        assert!(lines[..7].iter().all(|l| l.chars().count() == 10));
        assert!(lines[7].is_empty());
        assert!(lines[8].starts_with("Georg Nees"));
        let sky = skyline(&mut rng, 12, 5, "7.0.15");
        let lines: Vec<&str> = sky.lines().collect();
        assert_eq!(lines.len(), 7);
        assert_eq!(lines[0].matches('\x1b').count(), 24);
        let tiny = skyline(&mut rng, 1, 1, "7.0.15");
        assert!(tiny.contains("Redis ver."));
    }
}
