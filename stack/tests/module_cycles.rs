//! The layering rule of stack/src, checked: no module imports a module
//! that imports it back, directly or round a longer circle.
//!
//! A module is a source file (`foo.rs` or `foo/mod.rs`). An edge is any
//! path in its non-test code that starts with `crate::`, `super::` or
//! `self::`, resolved to the longest module it names. Paths to a module's
//! own ancestors are not edges: a parent declares and re-exports its
//! children, so those always point back. Test code (from the first
//! `#[cfg(test)]` on) is left out: tests may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("stack/src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file defines, e.g. `iface/udp/mod.rs` -> `[iface, udp]`.
fn module_of(root: &Path, file: &Path) -> Module {
    let relative = file.strip_prefix(root).expect("under the root");
    let mut names: Module = relative
        .with_extension("")
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    if matches!(names.last().map(String::as_str), Some("mod" | "lib")) {
        names.pop();
    }
    names
}

/// The longest known module named by `path` (`crate::a::b::Item`) as seen
/// from module `from`.
fn resolve(modules: &BTreeSet<Module>, from: &Module, path: &[&str]) -> Option<Module> {
    let (mut base, rest): (Module, &[&str]) = match *path.first()? {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (from.clone(), &path[1..]),
        "super" => {
            let mut base = from.clone();
            let mut rest = path;
            while rest.first() == Some(&"super") {
                base.pop();
                rest = &rest[1..];
            }
            (base, rest)
        }
        _ => return None,
    };
    let mut best = modules.contains(&base).then(|| base.clone());
    for segment in rest {
        base.push((*segment).to_owned());
        if modules.contains(&base) {
            best = Some(base.clone());
        }
    }
    best
}

/// Every `crate::`/`super::`/`self::` path in `code`, split at `::`.
fn paths(code: &str) -> Vec<Vec<&str>> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let starts_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let rest = &code[i..];
        if starts_word
            && ["crate::", "super::", "self::"]
                .iter()
                .any(|p| rest.starts_with(p))
        {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            let segments: Vec<&str> = rest[..end].split("::").filter(|s| !s.is_empty()).collect();
            found.push(segments);
            i += end.max(1);
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    found
}

fn without_comments_and_tests(source: &str) -> String {
    let code = source.split("#[cfg(test)]").next().unwrap_or("");
    code.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn import_graph(root: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut files = Vec::new();
    source_files(root, &mut files);
    let files: Vec<(Module, PathBuf)> = files
        .into_iter()
        .map(|f| (module_of(root, &f), f))
        .filter(|(m, _)| !m.iter().any(|n| n == "tests"))
        .collect();
    let modules: BTreeSet<Module> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut graph = BTreeMap::new();
    for (module, file) in &files {
        let source = std::fs::read_to_string(file).expect("a readable source file");
        let code = without_comments_and_tests(&source);
        let edges: BTreeSet<Module> = paths(&code)
            .iter()
            .filter_map(|p| resolve(&modules, module, p))
            .filter(|target| target != module && !module.starts_with(target))
            .collect();
        graph.insert(module.clone(), edges);
    }
    graph
}

/// The circles of `graph`: its strongly connected components of more than
/// one module (Tarjan's algorithm).
fn circles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct Walk<'g> {
        graph: &'g BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'g Module, usize>,
        low: BTreeMap<&'g Module, usize>,
        stack: Vec<&'g Module>,
        found: Vec<Vec<Module>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g Module) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in self.graph.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.found
}

#[test]
fn no_module_of_the_stack_imports_one_that_imports_it_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = import_graph(&root);
    assert!(graph.len() > 50, "the walk found the stack's modules");
    let found = circles(&graph);
    let names: Vec<String> = found
        .iter()
        .map(|c| {
            c.iter()
                .map(|m| m.join("::"))
                .collect::<Vec<_>>()
                .join(" <-> ")
        })
        .collect();
    assert!(found.is_empty(), "module circles: {names:#?}");
}

#[test]
fn the_check_sees_a_circle_when_there_is_one() {
    let module = |s: &str| -> Module { s.split("::").map(str::to_owned).collect() };
    let mut graph = BTreeMap::new();
    graph.insert(module("iface::rx"), BTreeSet::from([module("iface::tx")]));
    graph.insert(
        module("iface::tx"),
        BTreeSet::from([module("iface::next_hop")]),
    );
    graph.insert(
        module("iface::next_hop"),
        BTreeSet::from([module("iface::rx")]),
    );
    graph.insert(module("wire"), BTreeSet::new());
    assert_eq!(circles(&graph).len(), 1);
    let modules: BTreeSet<Module> = graph.keys().cloned().collect();
    let from = module("iface::rx");
    assert_eq!(
        resolve(&modules, &from, &["super", "tx", "send"]),
        Some(module("iface::tx"))
    );
    assert_eq!(
        resolve(&modules, &from, &["crate", "wire", "x"]),
        Some(module("wire"))
    );
    assert_eq!(
        paths("use super::tx::{a, b}; let x = crate::wire::y;"),
        vec![vec!["super", "tx"], vec!["crate", "wire", "y"]]
    );
}
