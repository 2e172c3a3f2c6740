//! The events table of `docs/local-development.md`: every sample file, the function to invoke
//! it with, what it shows and the answer it must get, in invoking order.

use super::Sample;

/// The README's table: file, function, what it shows, expected outcome, in invoking order.
pub fn readme_table(samples: &[Sample]) -> String {
    let mut t = String::from(
        "| `events/…` | invoke | shows | expected answer |\n| --- | --- | --- | --- |\n",
    );
    for s in samples {
        let stale = if s.timestamped { " ⏱" } else { "" };
        t.push_str(&format!(
            "| `{}`{stale} | `{}` | {} | {} |\n",
            s.file,
            s.function.name(),
            s.shows,
            s.expected.describe()
        ));
    }
    t
}
