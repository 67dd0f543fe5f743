//! `docs/RTP.md` shows Rust examples that are doctests of this crate and
//! of the stack's queue-mode sockets (the doctests run them and check what
//! they do). This test keeps the copies the same: every ```` ```rust ````
//! block of `docs/RTP.md` must name its source file (the last
//! `` `media/src/….rs` `` or `` `stack/src/….rs` `` before the block) and
//! equal one of that file's doctests without its hidden (`# `) lines.

/// The files `docs/RTP.md` may take examples from.
const SOURCES: &[(&str, &str)] = &[
    ("media/src/lib.rs", include_str!("../src/lib.rs")),
    (
        "stack/src/socket/group.rs",
        include_str!("../../stack/src/socket/group.rs"),
    ),
];

const RTP_MD: &str = include_str!("../../docs/RTP.md");

/// The ```` ```rust ```` blocks of a Markdown text, each with the text
/// before it.
fn rust_blocks(markdown: &str) -> Vec<(&str, Vec<&str>)> {
    let mut blocks = Vec::new();
    let mut lines = markdown.lines();
    let mut offset = 0;
    while let Some(line) = lines.next() {
        offset += line.len() + 1;
        if line.trim_end() != "```rust" {
            continue;
        }
        let before = &markdown[..offset];
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| l.trim_end() != "```")
            .collect();
        offset += body.iter().map(|l| l.len() + 1).sum::<usize>() + 4;
        blocks.push((before, body));
    }
    blocks
}

/// A source file's doctests (in `//!` or `///` comments), each without its
/// hidden lines.
fn doctests(source: &str) -> Vec<Vec<&str>> {
    let mut tests = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in source.lines() {
        let line = line.trim_start();
        let Some(doc) = line
            .strip_prefix("//!")
            .or_else(|| line.strip_prefix("///"))
        else {
            continue;
        };
        let doc = doc.strip_prefix(' ').unwrap_or(doc);
        if doc.starts_with("```") {
            match current.take() {
                Some(test) => tests.push(test),
                None => current = Some(Vec::new()),
            }
        } else if let Some(test) = &mut current {
            if doc != "#" && !doc.starts_with("# ") {
                test.push(doc);
            }
        }
    }
    tests
}

/// The last `` `media/src/….rs` `` or `` `stack/src/….rs` `` named in
/// `text`.
fn last_source(text: &str) -> Option<&str> {
    let at = ["`media/src/", "`stack/src/"]
        .iter()
        .filter_map(|crate_src| text.rfind(crate_src))
        .max()?;
    let name = &text[at + 1..];
    Some(&name[..name.find('`')?])
}

#[test]
fn every_rust_example_in_rtp_md_is_a_doctest_verbatim() {
    let blocks = rust_blocks(RTP_MD);
    assert_eq!(blocks.len(), 2, "the inline and the queue-mode relay");
    for (before, block) in blocks {
        let file = last_source(before).expect("a ```rust block names its source file");
        let (_, source) = SOURCES
            .iter()
            .find(|(name, _)| *name == file)
            .unwrap_or_else(|| panic!("{file} is not in SOURCES"));
        let tests = doctests(source);
        assert!(
            tests.contains(&block),
            "docs/RTP.md's example from {file} is none of its doctests (without hidden lines):\n\
             {}\n\nthe doctests:\n{}",
            block.join("\n"),
            tests
                .iter()
                .map(|t| t.join("\n"))
                .collect::<Vec<_>>()
                .join("\n----\n"),
        );
    }
}

#[test]
fn the_comparison_sees_a_changed_line() {
    let source = "//! ```\n//! # use x;\n//! let a = 1;\n//! ```\n";
    assert_eq!(doctests(source), vec![vec!["let a = 1;"]]);
    let markdown = "In `stack/src/x.rs`:\n\n```rust\nlet a = 2;\n```\n";
    let blocks = rust_blocks(markdown);
    assert_eq!(blocks.len(), 1);
    assert_eq!(last_source(blocks[0].0), Some("stack/src/x.rs"));
    let later = "`stack/src/x.rs`, then `media/src/y.rs`:\n";
    assert_eq!(last_source(later), Some("media/src/y.rs"));
    assert_ne!(blocks[0].1, doctests(source)[0]);
}
