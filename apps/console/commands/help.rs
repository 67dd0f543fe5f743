//! `help`, generated from the command table in testpmd's layout: the plain
//! `help` lists the sections; `help SECTION` lists each command of the
//! section (its syntax, then its help indented); `help all` every section.

use super::{commands, Section};
use std::fmt::Write;

/// The text of `help` (no topic), `help SECTION` or `help all`. An unknown
/// topic gets the plain `help`.
pub fn text(topic: Option<&str>) -> String {
    match topic {
        Some("all") => Section::ALL.iter().map(|s| section(*s) + "\n").collect(),
        Some(name) => match Section::ALL.iter().find(|s| s.name() == name) {
            Some(s) => section(*s),
            None => sections(),
        },
        None => sections(),
    }
}

fn sections() -> String {
    let mut out = String::from("\nHelp is available for the following sections:\n\n");
    for s in Section::ALL {
        let _ = writeln!(
            out,
            "    {:<32}: {}",
            format!("help {}", s.name()),
            s.summary()
        );
    }
    let _ = writeln!(out, "    {:<32}: All of the above sections.\n", "help all");
    out
}

fn section(s: Section) -> String {
    let title = s.title();
    let mut out = format!("\n{title}\n{}\n", "-".repeat(title.len()));
    if let Some(note) = s.note() {
        let _ = writeln!(out, "{note}");
    }
    out.push('\n');
    for command in commands().filter(|c| c.section == s) {
        let _ = writeln!(out, "{}\n    {}\n", command.syntax(), command.help);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_help_lists_the_sections_as_testpmd() {
        let expected = "
Help is available for the following sections:

    help control                    : Start and stop forwarding.
    help display                    : Displaying port, stats and config information.
    help config                     : Configuration information.
    help ports                      : Configuring ports.
    help stack                      : The TCP/IP stack: addresses, routes, ping, echo.
    help all                        : All of the above sections.

";
        assert_eq!(text(None), expected);
        assert_eq!(text(Some("nosuch")), expected);
    }

    #[test]
    fn a_section_lists_its_commands_with_their_help() {
        let expected = "
Control forwarding:
-------------------

start
    Start packet forwarding with current configuration.

start tx_first
    Start packet forwarding with current config after sending one burst of packets.

stop
    Stop packet forwarding, and display accumulated statistics.

quit
    Stop forwarding, close the ports and exit.

help
    List the help sections.

help (control|display|config|ports|stack|all)
    Show the commands of a section, or of all.

";
        assert_eq!(text(Some("control")), expected);
    }

    #[test]
    fn config_has_testpmds_note_and_set_fwd_lists_the_engines() {
        let config = text(Some("config"));
        assert!(config.starts_with(
            "\nConfiguration:\n--------------\nConfiguration changes only become active when \
             forwarding is started/restarted.\n\n"
        ));
        assert!(config.contains(
            "\nset fwd (io|mac|macswap|rxonly|txonly|stack)\n    Set packet forwarding mode.\n"
        ));
    }

    #[test]
    fn the_stack_section_says_how_to_run_it_and_lists_its_forms() {
        let stack = text(Some("stack"));
        assert!(stack.starts_with(
            "\nTCP/IP stack (set fwd stack):\n-----------------------------\nThese act on the \
             stack while it runs: set fwd stack, then start."
        ));
        for form in [
            "\nip addr add (ip_addr/len|default) port (port_id)\n    Add an address",
            "\nroute add (ip_addr/len|default) via (ip_addr)\n",
            "\nping (ip_addr) count (num)\n",
            "\nudp-echo (start|stop) (port)\n",
        ] {
            assert!(stack.contains(form), "{form:?} in {stack}");
        }
    }

    #[test]
    fn help_all_is_every_section_in_order() {
        let all = text(Some("all"));
        let mut at = 0;
        for s in Section::ALL {
            let title = s.title();
            let found = all[at..].find(title);
            assert!(found.is_some(), "{title} missing or out of order");
            at += found.unwrap_or(0) + title.len();
        }
        for command in commands() {
            assert!(
                all.contains(&format!("\n{}\n    ", command.syntax())),
                "{}",
                command.syntax()
            );
        }
    }
}
