//! Tab completion and the `?` listing, generated from the command table.
//!
//! Both look at the text before the cursor: its finished words (followed
//! by a blank) must start some command; the unfinished last word (maybe
//! empty) is a prefix of what comes next. Completion offers the words that
//! may come next (keywords, choices, engine names, `all` and port ids);
//! the listing gives one line per alternative with its help, in testpmd's
//! layout: ` WORD [TYPE]: HELP`, ` [UINT16]: HELP` for a number,
//! ` [IPADDR]` / ` [IPNET]` for an address / prefix, and ` [RETURN]` when
//! the words already make a command.

use super::{commands, Command, Token};
use crate::engines::ENGINES;

/// The words that may replace the unfinished last word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// Byte offset of the unfinished word in the text.
    pub start: usize,
    /// The unfinished word.
    pub partial: String,
    /// Distinct candidates, in table order.
    pub candidates: Vec<String>,
}

/// Splits `before` into its finished words and the unfinished one (with
/// its byte offset).
fn split(before: &str) -> (Vec<&str>, &str, usize) {
    let head = before.trim_end_matches(|c: char| !c.is_whitespace());
    (
        head.split_whitespace().collect(),
        &before[head.len()..],
        head.len(),
    )
}

/// The commands whose first tokens accept `words`, with the token after
/// them (`None` if the words make the whole command).
fn continuing<'a>(
    words: &'a [&str],
) -> impl Iterator<Item = (&'static Command, Option<Token>)> + 'a {
    commands()
        .filter(|c| c.accepts_prefix(words))
        .map(|c| (c, c.tokens.get(words.len()).copied()))
}

impl Completion {
    /// What may complete the text `before` (the line up to the cursor);
    /// `ports` are the valid port ids.
    pub fn of(before: &str, ports: &[u16]) -> Completion {
        let (words, partial, start) = split(before);
        let mut candidates: Vec<String> = Vec::new();
        for (_, next) in continuing(&words) {
            let Some(token) = next else { continue };
            for word in token_words(token, ports) {
                if word.starts_with(partial) && !candidates.contains(&word) {
                    candidates.push(word);
                }
            }
        }
        Completion {
            start,
            partial: partial.to_owned(),
            candidates,
        }
    }

    /// The text a Tab inserts at the cursor: the rest of the only
    /// candidate and a blank, or the rest of the candidates' longest common
    /// prefix; `None` if Tab cannot add anything.
    pub fn extension(&self) -> Option<String> {
        match self.candidates.as_slice() {
            [] => None,
            [only] => Some(format!("{} ", &only[self.partial.len()..])),
            [first, rest @ ..] => {
                let common = rest.iter().fold(first.len(), |n, c| {
                    first
                        .bytes()
                        .zip(c.bytes())
                        .take(n)
                        .take_while(|(a, b)| a == b)
                        .count()
                });
                (common > self.partial.len() && first.is_char_boundary(common))
                    .then(|| first[self.partial.len()..common].to_owned())
            }
        }
    }
}

/// The words a token can be completed with.
fn token_words(token: Token, ports: &[u16]) -> Vec<String> {
    let ids = || ports.iter().map(|p| p.to_string());
    match token {
        Token::Word(w) => vec![w.to_owned()],
        Token::Choice(choices) => choices.iter().map(|c| (*c).to_owned()).collect(),
        Token::Mode => ENGINES.iter().map(|e| e.name.to_owned()).collect(),
        Token::Port => ids().collect(),
        Token::PortOrAll => std::iter::once("all".to_owned()).chain(ids()).collect(),
        Token::Number(_) | Token::Addr | Token::Prefix | Token::Endpoint | Token::Text(_) => {
            Vec::new()
        }
    }
}

/// The `?` listing for the text `before`: one line per alternative, as
/// testpmd prints them (without the line feed).
pub fn alternatives(before: &str) -> Vec<String> {
    let (words, partial, _) = split(before);
    let mut lines: Vec<String> = Vec::new();
    let mut add = |line: String| {
        if !lines.contains(&line) {
            lines.push(line);
        }
    };
    let number_fits = partial.bytes().all(|b| b.is_ascii_digit());
    for (command, next) in continuing(&words) {
        let help = format!("{}: {}", command.syntax(), command.help);
        let Some(token) = next else {
            if partial.is_empty() {
                add(" [RETURN]".to_owned());
            }
            continue;
        };
        let word = |w: &str, kind: &str, help: &str| format!(" {w} [{kind}]: {help}");
        match token {
            Token::Word(w) if w.starts_with(partial) => add(word(w, "Fixed STRING", &help)),
            Token::Choice(choices) => choices
                .iter()
                .filter(|c| c.starts_with(partial))
                .for_each(|c| add(word(c, "Mul-choice STRING", &help))),
            Token::Mode => ENGINES
                .iter()
                .filter(|e| e.name.starts_with(partial))
                .for_each(|e| {
                    let mode_help = format!(
                        "{}: {}",
                        command.syntax().replace(&Token::Mode.syntax(), e.name),
                        e.help
                    );
                    add(word(e.name, "Mul-choice STRING", &mode_help));
                }),
            Token::PortOrAll | Token::Port | Token::Number(_) => {
                if token == Token::PortOrAll && "all".starts_with(partial) {
                    add(word("all", "Fixed STRING", &help));
                }
                if number_fits {
                    add(format!(" [UINT16]: {help}"));
                }
            }
            Token::Addr => add(format!(" [IPADDR]: {help}")),
            Token::Prefix => add(format!(" [IPNET]: {help}")),
            Token::Endpoint => add(format!(" [IPADDR:PORT]: {help}")),
            Token::Text(_) => add(format!(" [TOKEN]: {help}")),
            Token::Word(_) => {}
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    const PORTS: &[u16] = &[0, 1];

    fn completion(before: &str) -> (Vec<String>, Option<String>) {
        let c = Completion::of(before, PORTS);
        let ext = c.extension();
        (c.candidates, ext)
    }

    #[test]
    fn tab_completes_a_unique_prefix_with_a_blank() {
        assert_eq!(completion("sh").1.as_deref(), Some("ow "));
        assert_eq!(completion("show po").1.as_deref(), Some("rt "));
        assert_eq!(completion("show port x").1.as_deref(), Some("stats "));
        assert_eq!(completion("set fwd macs").1.as_deref(), Some("wap "));
        assert_eq!(completion("set link-d").1.as_deref(), Some("own "));
        assert_eq!(completion("show port stats a").1.as_deref(), Some("ll "));
    }

    #[test]
    fn tab_extends_a_common_prefix_and_stops_when_ambiguous() {
        assert_eq!(
            completion("s"),
            (
                vec!["start".into(), "stop".into(), "show".into(), "set".into()],
                None
            )
        );
        assert_eq!(
            completion("st"),
            (vec!["start".into(), "stop".into()], None)
        );
        assert_eq!(completion("set fwd m").1.as_deref(), Some("ac"));
        assert_eq!(completion("set fwd mac").1, None, "mac or macswap");
        assert_eq!(
            completion("show port stats ").0,
            ["all", "0", "1"],
            "all, then the port ids"
        );
        assert_eq!(completion("frob").0, Vec::<String>::new());
        assert_eq!(completion("set burst ").0, Vec::<String>::new(), "numbers");
    }

    #[test]
    fn completion_starts_at_the_unfinished_word() {
        let c = Completion::of("show  port su", PORTS);
        assert_eq!((c.start, c.partial.as_str()), (11, "su"));
        assert_eq!(c.candidates, ["summary"]);
        let c = Completion::of("show port ", PORTS);
        assert_eq!((c.start, c.partial.as_str()), (10, ""));
    }

    #[test]
    fn set_fwd_completion_is_the_engines_table() {
        let names: Vec<&str> = ENGINES.iter().map(|e| e.name).collect();
        assert_eq!(completion("set fwd ").0, names);
    }

    #[test]
    fn the_listing_has_testpmds_layout() {
        assert_eq!(
            alternatives("start "),
            [
                " [RETURN]",
                " tx_first [Fixed STRING]: start tx_first: Start packet forwarding with current \
                 config after sending one burst of packets."
            ]
        );
        assert_eq!(
            alternatives("show port stats "),
            [
                " all [Fixed STRING]: show port stats (port_id|all): Display port statistics, \
                 with rates since the last show.",
                " [UINT16]: show port stats (port_id|all): Display port statistics, with rates \
                 since the last show."
            ]
        );
        assert_eq!(
            alternatives("set promisc 0 o"),
            [
                " on [Mul-choice STRING]: set promisc (port_id|all) (on|off): Set the \
                 promiscuous mode on port_id, or all.",
                " off [Mul-choice STRING]: set promisc (port_id|all) (on|off): Set the \
                 promiscuous mode on port_id, or all."
            ]
        );
    }

    #[test]
    fn the_set_fwd_listing_is_the_engines_help() {
        let lines = alternatives("set fwd ");
        assert_eq!(lines.len(), ENGINES.len());
        for (line, engine) in lines.iter().zip(ENGINES) {
            assert_eq!(
                *line,
                format!(
                    " {0} [Mul-choice STRING]: set fwd {0}: {1}",
                    engine.name, engine.help
                )
            );
        }
        assert_eq!(
            alternatives("set fwd rx"),
            [" rxonly [Mul-choice STRING]: set fwd rxonly: receive and free packets"]
        );
    }

    #[test]
    fn the_listing_after_a_shared_word_names_every_continuation() {
        let lines = alternatives("show port ");
        for expected in [
            " info [Fixed STRING]: show port info (port_id|all): ",
            " stats [Fixed STRING]: ",
            " xstats [Fixed STRING]: ",
            " summary [Fixed STRING]: ",
            " [UINT16]: show port (port_id) rss-hash: ",
        ] {
            assert!(
                lines.iter().any(|l| l.starts_with(expected)),
                "no {expected:?} in {lines:#?}"
            );
        }
        assert!(alternatives("frob ").is_empty());
        assert!(alternatives("show port stats x").is_empty());
    }
}
