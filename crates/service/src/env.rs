//! How the engine reads its environment.

use std::sync::Arc;

/// Looks up an environment variable (`None` when unset or empty). Injectable so tests need not
/// touch the process environment; values read through it are never persisted.
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;
