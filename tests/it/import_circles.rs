//! No import circles between the files of one crate: a file that uses another must not be used
//! by it, directly or around a loop. A circle means a small shared type sits in the wrong file,
//! and it makes both files one unit that can only be read, tested and moved together.
//!
//! The sources are parsed with `syn`. A file's uses are the `crate::`, `super::` and `self::`
//! paths in its code (outside `#[cfg(test)]` items) and, in a module with children, paths that
//! start with a child's name. A name re-exported with `pub use` resolves to the file that defines
//! it, and a `pub use` itself is a facade, not a use.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// One crate's modules: module path (`""` for the crate root, `"tools::memory"`) → its file.
struct Crate {
    files: BTreeMap<String, PathBuf>,
}

impl Crate {
    fn load(src: &Path) -> Crate {
        let mut files = BTreeMap::new();
        let root = if src.join("lib.rs").exists() {
            src.join("lib.rs")
        } else {
            src.join("main.rs")
        };
        collect(&root, String::new(), &mut files);
        Crate { files }
    }
}

/// Walks `mod x;` declarations from `file` (module `path`), as the compiler does.
fn collect(file: &Path, path: String, files: &mut BTreeMap<String, PathBuf>) {
    let text = std::fs::read_to_string(file).expect("readable source");
    let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let dir = match file.file_name().and_then(|n| n.to_str()) {
        Some("lib.rs" | "main.rs" | "mod.rs") => file.parent().expect("dir").to_owned(),
        _ => file.with_extension(""),
    };
    files.insert(path.clone(), file.to_owned());
    for item in &ast.items {
        if let syn::Item::Mod(m) = item
            && m.content.is_none()
            && !is_test(&m.attrs)
        {
            let name = m.ident.to_string();
            let child = [
                dir.join(format!("{name}.rs")),
                dir.join(&name).join("mod.rs"),
            ]
            .into_iter()
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("{}: mod {name} has no file", file.display()));
            let child_path = if path.is_empty() {
                name
            } else {
                format!("{path}::{name}")
            };
            collect(&child, child_path, files);
        }
    }
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// What one file names: absolute module paths (segments) it uses, and its `pub use` re-exports
/// (name → the path it points at).
#[derive(Default)]
struct Names {
    uses: Vec<Vec<String>>,
    reexports: HashMap<String, Vec<String>>,
}

struct Collector<'a> {
    module: Vec<String>,
    children: &'a BTreeSet<String>,
    names: Names,
}

impl Collector<'_> {
    /// `segments` made absolute from this module, or `None` for an external path.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let mut out = self.module.clone();
        let mut rest = segments;
        match rest.first().map(String::as_str) {
            Some("crate") => {
                out.clear();
                rest = &rest[1..];
            }
            Some("self") => rest = &rest[1..],
            Some("super") => {
                while rest.first().is_some_and(|s| s == "super") {
                    out.pop();
                    rest = &rest[1..];
                }
            }
            Some(first) if self.children.contains(first) => {}
            _ => return None,
        }
        out.extend(rest.iter().cloned());
        Some(out)
    }

    fn use_tree(&mut self, prefix: Vec<String>, tree: &syn::UseTree, public: bool) {
        match tree {
            syn::UseTree::Path(p) => {
                let mut next = prefix;
                next.push(p.ident.to_string());
                self.use_tree(next, &p.tree, public);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix.clone(), t, public);
                }
            }
            syn::UseTree::Name(n) => self.used(prefix, n.ident.to_string(), None, public),
            syn::UseTree::Rename(r) => self.used(
                prefix,
                r.ident.to_string(),
                Some(r.rename.to_string()),
                public,
            ),
            syn::UseTree::Glob(_) => {
                if let Some(path) = self.absolute(&prefix)
                    && !public
                {
                    self.names.uses.push(path);
                }
            }
        }
    }

    fn used(&mut self, mut path: Vec<String>, name: String, alias: Option<String>, public: bool) {
        if name == "self" {
            let Some(abs) = self.absolute(&path) else {
                return;
            };
            if public {
                let alias = alias.unwrap_or_else(|| path.last().cloned().unwrap_or_default());
                self.names.reexports.insert(alias, abs);
            } else {
                self.names.uses.push(abs);
            }
            return;
        }
        path.push(name.clone());
        let Some(abs) = self.absolute(&path) else {
            return;
        };
        if public {
            self.names.reexports.insert(alias.unwrap_or(name), abs);
        } else {
            self.names.uses.push(abs);
        }
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if is_test(attrs) {
            return;
        }
        if let syn::Item::Use(u) = item {
            let public = !matches!(u.vis, syn::Visibility::Inherited);
            self.use_tree(Vec::new(), &u.tree, public);
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1
            && let Some(abs) = self.absolute(&segments)
        {
            self.names.uses.push(abs);
        }
        syn::visit::visit_path(self, path);
    }
}

/// The file a use of `path` lands in: the deepest module of `path` that has a file, followed
/// through that module's re-exports of the next segment.
fn resolve(
    path: &[String],
    modules: &BTreeMap<String, PathBuf>,
    names: &HashMap<String, Names>,
    depth: usize,
) -> Option<String> {
    let mut best = None;
    for n in (0..=path.len()).rev() {
        let key = path[..n].join("::");
        if modules.contains_key(&key) {
            best = Some((key, n));
            break;
        }
    }
    let (module, n) = best?;
    if depth < 8
        && let Some(next) = path.get(n)
        && let Some(target) = names.get(&module).and_then(|m| m.reexports.get(next))
    {
        let mut through = target.clone();
        through.extend(path[n + 1..].iter().cloned());
        return resolve(&through, modules, names, depth + 1).or(Some(module));
    }
    Some(module)
}

/// The circles (strongly connected groups of more than one file) among `crate_dir/src`.
fn circles(crate_dir: &Path) -> Vec<Vec<String>> {
    let krate = Crate::load(&crate_dir.join("src"));
    let mut names = HashMap::new();
    for (module, file) in &krate.files {
        let text = std::fs::read_to_string(file).expect("readable source");
        let ast = syn::parse_file(&text).expect("parses");
        let segments: Vec<String> = if module.is_empty() {
            Vec::new()
        } else {
            module.split("::").map(str::to_owned).collect()
        };
        let prefix = if module.is_empty() {
            String::new()
        } else {
            format!("{module}::")
        };
        let children: BTreeSet<String> = krate
            .files
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix).filter(|_| k != module))
            .filter(|rest| !rest.contains("::") && !rest.is_empty())
            .map(str::to_owned)
            .collect();
        let mut c = Collector {
            module: segments,
            children: &children,
            names: Names::default(),
        };
        c.visit_file(&ast);
        names.insert(module.clone(), c.names);
    }
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, n) in &names {
        for path in &n.uses {
            if let Some(target) = resolve(path, &krate.files, &names, 0)
                && &target != module
            {
                edges.entry(module.clone()).or_default().insert(target);
            }
        }
    }
    strongly_connected(&krate.files.keys().cloned().collect::<Vec<_>>(), &edges)
        .into_iter()
        .filter(|group| group.len() > 1)
        .map(|group| {
            group
                .iter()
                .map(|m| {
                    krate.files[m]
                        .strip_prefix(crate_dir)
                        .unwrap_or(&krate.files[m])
                        .display()
                        .to_string()
                })
                .collect()
        })
        .collect()
}

/// Tarjan's strongly connected components.
fn strongly_connected(
    nodes: &[String],
    edges: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: HashMap<String, usize>,
        low: HashMap<String, usize>,
        stack: Vec<String>,
        on_stack: BTreeSet<String>,
        out: Vec<Vec<String>>,
    }
    fn visit(s: &mut State<'_>, v: &str) {
        let i = s.index.len();
        s.index.insert(v.to_owned(), i);
        s.low.insert(v.to_owned(), i);
        s.stack.push(v.to_owned());
        s.on_stack.insert(v.to_owned());
        let next: Vec<String> = s
            .edges
            .get(v)
            .map(|e| e.iter().cloned().collect())
            .unwrap_or_default();
        for w in next {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let low = s.low[v].min(s.low[&w]);
                s.low.insert(v.to_owned(), low);
            } else if s.on_stack.contains(&w) {
                let low = s.low[v].min(s.index[&w]);
                s.low.insert(v.to_owned(), low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(&w);
                let done = w == v;
                group.push(w);
                if done {
                    break;
                }
            }
            group.sort();
            s.out.push(group);
        }
    }
    let mut s = State {
        edges,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for n in nodes {
        if !s.index.contains_key(n) {
            visit(&mut s, n);
        }
    }
    s.out
}

fn workspace_crates() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    dirs.push(root.join("src-tauri"));
    dirs.sort();
    dirs
}

#[test]
fn no_crate_has_an_import_circle_between_its_files() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for dir in workspace_crates() {
        let name = dir
            .strip_prefix(&root)
            .unwrap_or(&dir)
            .display()
            .to_string();
        for circle in circles(&dir) {
            found.push(format!("{name}: {}", circle.join(" ↔ ")));
        }
    }
    assert!(
        found.is_empty(),
        "import circles (move the shared names into a file both can use):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_circle_check_sees_a_circle_and_follows_reexports() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("lib.rs"),
        "mod a;\nmod b;\nmod c;\npub use a::Alpha;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("a.rs"),
        "pub struct Alpha;\nfn f() { crate::b::g(); }\n",
    )
    .unwrap();
    std::fs::write(src.join("b.rs"), "use crate::Alpha;\npub fn g() {}\n").unwrap();
    std::fs::write(
        src.join("c.rs"),
        "#[cfg(test)]\nmod tests { use crate::a::Alpha; }\n",
    )
    .unwrap();
    assert_eq!(
        circles(dir.path()),
        vec![vec!["src/a.rs".to_owned(), "src/b.rs".to_owned()]]
    );
}
