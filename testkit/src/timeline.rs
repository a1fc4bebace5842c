//! Where scenario timelines go: `<target>/tmp/locksmith-timelines/<name>.html`.

use locksmith_harness::{History, Timeline};
use std::path::{Path, PathBuf};

/// Writes the timeline of `history` for scenario `name` under `tmp_dir` (a test's
/// `CARGO_TARGET_TMPDIR`); returns its path. Tests call it through [`crate::write_timeline!`].
pub fn write(tmp_dir: &Path, name: &str, title: &str, history: &History) -> PathBuf {
    let path = tmp_dir
        .join("locksmith-timelines")
        .join(format!("{name}.html"));
    if let Err(e) = Timeline::new(title, history).write_html(&path) {
        panic!("cannot write the timeline {}: {e}", path.display());
    }
    eprintln!("timeline: {}", path.display());
    path
}

/// `write_timeline!(name, title, &history)`: writes a scenario's timeline to
/// `<target>/tmp/locksmith-timelines/<name>.html` and returns the path (the directory is the
/// calling test's `CARGO_TARGET_TMPDIR`, known only where the test is compiled).
#[macro_export]
macro_rules! write_timeline {
    ($name:expr, $title:expr, $history:expr $(,)?) => {
        $crate::timeline::write(
            ::std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
            $name,
            $title,
            $history,
        )
    };
}
