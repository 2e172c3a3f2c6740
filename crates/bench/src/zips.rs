//! The release zips' sizes, read from their central directory.

use std::path::Path;

use anyhow::{Context, Result};

/// (compressed file size, sum of the entries' uncompressed sizes), from the central directory.
pub fn zip_sizes(path: &Path) -> Result<(u64, u64)> {
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let size = file.metadata()?.len();
    let mut zip = zip::ZipArchive::new(file).with_context(|| format!("{}", path.display()))?;
    let mut unpacked = 0;
    for i in 0..zip.len() {
        unpacked += zip.by_index_raw(i)?.size();
    }
    Ok((size, unpacked))
}
