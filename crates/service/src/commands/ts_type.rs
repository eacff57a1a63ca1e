//! A Rust type as the UI's TypeScript names it, with the generated files that declare it.

use std::collections::BTreeMap;
use ts_rs::{Config, TS, TypeVisitor};

/// A Rust type as TypeScript: its name there, and the generated files it needs.
pub(super) struct TsType {
    pub(super) name: String,
    /// Imported name → module path relative to the bindings directory (`args/GetAgentArgs`).
    pub(super) imports: BTreeMap<String, String>,
}

impl TsType {
    pub(super) fn of<T: TS + 'static>(cfg: &Config) -> Self {
        let mut imports = BTreeMap::new();
        Collect(cfg, &mut imports).visit::<T>();
        Self {
            name: T::name(cfg),
            imports,
        }
    }
}

/// Gathers a type and its type arguments (`Vec<Block>` needs `Block`) that have files.
struct Collect<'a>(&'a Config, &'a mut BTreeMap<String, String>);

impl TypeVisitor for Collect<'_> {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        if let Some(path) = T::output_path() {
            let module = path.with_extension("").to_string_lossy().replace('\\', "/");
            self.1.insert(T::ident(self.0), module);
        }
        T::visit_generics(self);
    }
}
