//! What `view` shows: a directory listing (size in characters, then path) and a file with line
//! numbers, optionally a range of its lines.

use super::MemoryError;
use engram_core::Block;

/// `view_range` as given: first and last line, counting from 1; `-1` as the last means to the
/// end.
pub type ViewRange = (i64, i64);

/// `block`'s value with a header (version, size against the limit) and numbered lines.
///
/// Errors: [`MemoryError::ViewRange`] when the range is outside the file.
pub(crate) fn file(
    path: &str,
    block: &Block,
    range: Option<ViewRange>,
) -> Result<String, MemoryError> {
    let lines: Vec<&str> = block.value.split('\n').collect();
    let count = lines.len();
    let (start, end) = match range {
        None => (1, count),
        Some((s, e)) => {
            let end = if e == -1 { count as i64 } else { e };
            if s < 1 || end < s || end as usize > count {
                return Err(MemoryError::ViewRange {
                    path: path.to_owned(),
                    start: s,
                    end: e,
                    lines: count,
                });
            }
            (s as usize, end as usize)
        }
    };
    let mut out = format!(
        "{path} (version {}, {} of {} characters), with line numbers:\n",
        block.version,
        block.value.chars().count(),
        block.limit
    );
    for (n, line) in lines.iter().enumerate().take(end).skip(start - 1) {
        out.push_str(&format!("{:>6}\t{line}\n", n + 1));
    }
    Ok(out)
}

/// A listing of `dir`: one line per file, its size in characters then its path.
pub(crate) fn dir(dir: &str, files: &[(String, usize)]) -> String {
    if files.is_empty() {
        return format!("{dir} holds no files yet; create one with the create command.\n");
    }
    let mut out = format!("Files in {dir} (size in characters, then path):\n");
    for (path, size) in files {
        out.push_str(&format!("{size}\t{path}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(value: &str) -> Block {
        Block {
            id: engram_core::BlockId::new(),
            label: "human".into(),
            value: value.into(),
            limit: 100,
            description: String::new(),
            read_only: false,
            version: 1,
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn files_show_numbered_lines_and_ranges() {
        let b = block("one\ntwo\nthree");
        let all = file("/memories/human.md", &b, None).unwrap();
        assert!(
            all.contains("     1\tone\n     2\ttwo\n     3\tthree\n"),
            "{all}"
        );
        assert!(all.contains("13 of 100 characters"), "{all}");
        let some = file("/memories/human.md", &b, Some((2, -1))).unwrap();
        assert!(!some.contains("\tone"), "{some}");
        assert!(some.contains("     2\ttwo\n     3\tthree\n"), "{some}");
        assert!(matches!(
            file("/memories/human.md", &b, Some((2, 9))),
            Err(MemoryError::ViewRange { lines: 3, .. })
        ));
    }
}
