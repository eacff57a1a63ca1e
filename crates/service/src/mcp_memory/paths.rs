//! `/memories/…` paths and the blocks they name: `/memories/<label>.md` for one agent,
//! `/memories/<agent>/<label>.md` for several. A path-like label (`notes/work`) is a file in a
//! subdirectory (`/memories/notes/work.md`); the label itself is never rewritten.

use super::{MemoryClient, MemoryError, MemoryGrant};

/// The directory every file lives under.
pub const ROOT: &str = "/memories";
/// The extension every block file has.
const EXT: &str = ".md";

/// What a path names, before looking at the blocks.
#[derive(Debug)]
pub(crate) enum Target<'c> {
    /// `/memories` itself with several agents: one directory per agent.
    Root,
    /// A directory of one agent's files: `prefix` is the label prefix (`""` for all of them,
    /// `notes/` for a subdirectory).
    Dir {
        /// Whose.
        grant: &'c MemoryGrant,
        /// Labels under it start with this.
        prefix: String,
    },
    /// One block, by label. `explicit` is false when the path had no `.md` (it may still be
    /// a directory).
    File {
        /// Whose.
        grant: &'c MemoryGrant,
        /// The block's label.
        label: String,
        /// Whether the path ended in `.md`.
        explicit: bool,
    },
}

fn bad(path: &str, reason: &str) -> MemoryError {
    MemoryError::BadPath {
        path: path.to_owned(),
        reason: reason.to_owned(),
    }
}

/// Reads `path` for `client`. Errors: [`MemoryError::BadPath`] outside `/memories`, with `..`
/// or an empty segment; [`MemoryError::NoSuchFile`] for an agent directory the client was not
/// given.
pub(crate) fn parse<'c>(client: &'c MemoryClient, path: &str) -> Result<Target<'c>, MemoryError> {
    let trimmed = path.trim();
    let rest = trimmed
        .strip_prefix(ROOT)
        .ok_or_else(|| bad(path, "memory files live under /memories"))?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return Err(bad(path, "memory files live under /memories"));
    }
    let rest = rest.trim_start_matches('/').trim_end_matches('/');
    let segments: Vec<&str> = if rest.is_empty() {
        Vec::new()
    } else {
        rest.split('/').collect()
    };
    if segments
        .iter()
        .any(|s| s.is_empty() || *s == "." || *s == "..")
    {
        return Err(bad(path, "empty, '.' and '..' segments are not allowed"));
    }
    let (grant, segments) = if client.per_agent_dirs() {
        let Some((first, more)) = segments.split_first() else {
            return Ok(Target::Root);
        };
        let grant = client
            .grants
            .iter()
            .find(|g| g.dir == *first)
            .ok_or_else(|| MemoryError::NoSuchFile(trimmed.to_owned()))?;
        (grant, more.to_vec())
    } else {
        (&client.grants[0], segments)
    };
    let joined = segments.join("/");
    if joined.is_empty() {
        return Ok(Target::Dir {
            grant,
            prefix: String::new(),
        });
    }
    match joined.strip_suffix(EXT) {
        Some(label) if !label.is_empty() && !label.ends_with('/') => Ok(Target::File {
            grant,
            label: label.to_owned(),
            explicit: true,
        }),
        _ => Ok(Target::File {
            grant,
            label: joined,
            explicit: false,
        }),
    }
}

/// The path of `label` of `grant`'s agent as `client` sees it.
pub fn file_path(client: &MemoryClient, grant: &MemoryGrant, label: &str) -> String {
    format!("{}{label}{EXT}", dir_path(client, grant))
}

/// The directory (with a trailing `/`) holding `grant`'s files.
pub(crate) fn dir_path(client: &MemoryClient, grant: &MemoryGrant) -> String {
    if client.per_agent_dirs() {
        format!("{ROOT}/{}/", grant.dir)
    } else {
        format!("{ROOT}/")
    }
}

/// Picks each agent's directory name: its name when that is a usable, unique path segment,
/// else its id.
pub(crate) fn agent_dirs(agents: &[(engram_core::AgentId, String)]) -> Vec<String> {
    agents
        .iter()
        .map(|(id, name)| {
            let usable = !name.is_empty()
                && !name.contains('/')
                && name != "."
                && name != ".."
                && name.trim() == name
                && agents.iter().filter(|(_, n)| n == name).count() == 1;
            if usable {
                name.clone()
            } else {
                id.as_str().to_owned()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_core::AgentId;

    fn client(dirs: &[&str]) -> MemoryClient {
        MemoryClient {
            name: "t".into(),
            grants: dirs
                .iter()
                .map(|d| MemoryGrant {
                    agent_id: AgentId::from(format!("agent-{d}")),
                    dir: (*d).to_owned(),
                    write: true,
                    approve: false,
                })
                .collect(),
            approval_timeout: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn one_agent_files_sit_at_the_root() {
        let c = client(&["a"]);
        assert!(
            matches!(parse(&c, "/memories").unwrap(), Target::Dir { prefix, .. } if prefix.is_empty())
        );
        assert!(
            matches!(parse(&c, "/memories/human.md").unwrap(), Target::File { label, explicit: true, .. } if label == "human")
        );
        assert!(
            matches!(parse(&c, "/memories/notes/work.md").unwrap(), Target::File { label, .. } if label == "notes/work")
        );
        assert!(
            matches!(parse(&c, "/memories/notes/").unwrap(), Target::File { label, explicit: false, .. } if label == "notes")
        );
        assert_eq!(
            file_path(&c, &c.grants[0], "notes/work"),
            "/memories/notes/work.md"
        );
    }

    #[test]
    fn several_agents_get_a_directory_each() {
        let c = client(&["a", "b"]);
        assert!(matches!(parse(&c, "/memories/").unwrap(), Target::Root));
        assert!(
            matches!(parse(&c, "/memories/b/human.md").unwrap(), Target::File { grant, .. } if grant.dir == "b")
        );
        assert!(matches!(
            parse(&c, "/memories/c/human.md"),
            Err(MemoryError::NoSuchFile(_))
        ));
        assert_eq!(file_path(&c, &c.grants[1], "human"), "/memories/b/human.md");
    }

    #[test]
    fn paths_outside_memories_are_refused() {
        let c = client(&["a"]);
        for p in [
            "/etc/passwd",
            "/memoriesx/a.md",
            "/memories/../x.md",
            "memories/a.md",
        ] {
            assert!(
                matches!(parse(&c, p), Err(MemoryError::BadPath { .. })),
                "{p}"
            );
        }
    }

    #[test]
    fn directory_names_fall_back_to_ids() {
        let dirs = agent_dirs(&[
            (AgentId::from("agent-1"), "Sam".into()),
            (AgentId::from("agent-2"), "a/b".into()),
            (AgentId::from("agent-3"), "Twin".into()),
            (AgentId::from("agent-4"), "Twin".into()),
        ]);
        assert_eq!(dirs, ["Sam", "agent-2", "agent-3", "agent-4"]);
    }
}
