//! iperf3's number formats: adaptive units (bytes in powers of 1024, bits in
//! powers of 1000, three significant digits as `unit_snprintf` prints them)
//! and the fixed line layouts of its reports.

/// `bytes` as iperf prints a transfer: "1.20 GByte" (the caller adds "s").
pub fn bytes(bytes: f64) -> String {
    adaptive(bytes, 1024.0, ["Byte", "KByte", "MByte", "GByte", "TByte"])
}

/// `bytes_per_sec` as iperf prints a bitrate: "10.3 Gbit" (the caller adds
/// "s/sec").
pub fn bits(bytes_per_sec: f64) -> String {
    adaptive(
        bytes_per_sec * 8.0,
        1000.0,
        ["bit", "Kbit", "Mbit", "Gbit", "Tbit"],
    )
}

fn adaptive(mut value: f64, step: f64, labels: [&str; 5]) -> String {
    let mut unit = 0;
    while value >= step && unit < labels.len() - 1 {
        value /= step;
        unit += 1;
    }
    let label = labels[unit];
    if value < 9.995 {
        format!("{value:4.2} {label}")
    } else if value < 99.95 {
        format!("{value:4.1} {label}")
    } else {
        format!("{value:4.0} {label}")
    }
}

/// `[  5][TX-C]   0.00-1.00   sec  1.20 GBytes  10.3 Gbits/sec`: the part
/// every report line starts with (`id` is "  5" or "SUM").
pub fn line_start(id: &str, role: &str, start: f64, end: f64, transferred: u64) -> String {
    let seconds = (end - start).max(1e-9);
    format!(
        "[{id}]{role} {start:6.2}-{end:<6.2} sec  {}s  {}s/sec",
        bytes(transferred as f64),
        bits(transferred as f64 / seconds)
    )
}

/// The stream id column: right-aligned in three characters.
pub fn id(id: u32) -> String {
    format!("{id:3}")
}

/// A UDP loss figure: "0/77 (0%)" (`%.2g` of the percentage, as iperf).
pub fn loss(lost: i64, total: i64) -> String {
    let percent = if total > 0 {
        100.0 * lost as f64 / total as f64
    } else {
        0.0
    };
    format!("{lost}/{total} ({}%)", two_significant(percent))
}

/// C's `%.2g`: two significant digits, no trailing zeros.
fn two_significant(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs().log10().floor() as i32;
    if !(-5..2).contains(&magnitude) {
        let s = format!("{x:.1e}");
        // Rust prints 1.5e3; C prints 1.5e+03.
        return match s.split_once('e') {
            Some((m, e)) => {
                let e: i32 = e.parse().unwrap_or(0);
                let m = m.trim_end_matches('0').trim_end_matches('.');
                format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
            }
            None => s,
        };
    }
    let decimals = (1 - magnitude).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_match_iperf3_output() {
        // From `iperf3 -c` on this machine: 1.20 GBytes 10.3 Gbits/sec,
        // 648 MBytes, 895 KBytes, 9.96 Mbits/sec.
        assert_eq!(bytes(1.2 * 1024.0 * 1024.0 * 1024.0), "1.20 GByte");
        assert_eq!(bits(1.2 * 1024.0 * 1024.0 * 1024.0), "10.3 Gbit");
        assert_eq!(bytes(648.0 * 1024.0 * 1024.0), " 648 MByte");
        assert_eq!(bytes(895.0 * 1024.0), " 895 KByte");
        assert_eq!(bits(9.96e6 / 8.0), "9.96 Mbit");
        assert_eq!(bytes(0.0), "0.00 Byte");
    }

    #[test]
    fn report_lines_have_iperf3_columns() {
        let gib = 1024 * 1024 * 1024;
        assert_eq!(
            line_start(&id(5), "", 0.0, 1.0, gib * 12 / 10),
            "[  5]   0.00-1.00   sec  1.20 GBytes  10.3 Gbits/sec"
        );
        assert_eq!(
            line_start("SUM", "[TX-C]", 1.0, 2.0, 0),
            "[SUM][TX-C]   1.00-2.00   sec  0.00 Bytes  0.00 bits/sec"
        );
    }

    #[test]
    fn loss_percentages_print_like_c_percent_point_2g() {
        assert_eq!(loss(0, 77), "0/77 (0%)");
        assert_eq!(loss(1, 3), "1/3 (33%)");
        assert_eq!(loss(1, 8), "1/8 (12%)");
        assert_eq!(loss(1, 1000), "1/1000 (0.1%)");
        assert_eq!(loss(5, 5), "5/5 (1e+02%)");
        assert_eq!(loss(0, 0), "0/0 (0%)");
    }
}
