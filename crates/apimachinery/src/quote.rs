//! Go's `strconv.Quote` (and so `fmt`'s `%q` of a string), which kube's
//! messages use for names, values and field paths: `"`, `\` escaped;
//! printable runes as they are; `\a \b \f \n \r \t \v`; other runes below
//! U+0020 and U+007F as `\xNN`; other unprintable runes as `\uNNNN` or
//! `\UNNNNNNNN`.
//!
//! Printable is Go's `strconv.IsPrint`: letters, marks, numbers,
//! punctuation, symbols and the ASCII space. The runes that are not
//! (controls, format characters, separators and spaces other than U+0020,
//! private use, noncharacters) are listed below; a code point Unicode has
//! not assigned yet is printed as it is, where Go's tables escape it.

/// Go's `strconv.Quote(s)`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if is_print(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub fn go_quote_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

/// The runes above U+00FF `strconv.IsPrint` refuses (inclusive ranges):
/// separators and spaces (Zl, Zp, Zs), format characters (Cf), private use
/// (Co) and noncharacters.
const NOT_PRINT: &[(u32, u32)] = &[
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x1680, 0x1680),
    (0x180E, 0x180E),
    (0x2000, 0x200F),
    (0x2028, 0x202F),
    (0x205F, 0x2064),
    (0x2066, 0x206F),
    (0x3000, 0x3000),
    (0xE000, 0xF8FF),
    (0xFDD0, 0xFDEF),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
    (0xF0000, 0x10FFFF),
];

/// Go's `strconv.IsPrint`.
fn is_print(c: char) -> bool {
    let r = c as u32;
    if r <= 0xFF {
        return (0x20..=0x7E).contains(&r) || ((0xA1..=0xFF).contains(&r) && r != 0xAD);
    }
    // Every plane's last two code points are noncharacters.
    if r & 0xFFFE == 0xFFFE {
        return false;
    }
    !NOT_PRINT.iter().any(|(lo, hi)| (*lo..=*hi).contains(&r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_as_strconv_quote() {
        // Values from Go's strconv.Quote.
        assert_eq!(go_quote("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\x01""#);
        assert_eq!(go_quote("héllo ☺"), "\"héllo ☺\"");
        assert_eq!(
            go_quote("\u{7}\u{8}\u{c}\r\t\u{b}\u{7f}"),
            r#""\a\b\f\r\t\v\x7f""#
        );
        assert_eq!(
            go_quote("\u{a0}\u{ad}\u{200b}\u{feff}"),
            r#""\u00a0\u00ad\u200b\ufeff""#
        );
        assert_eq!(go_quote("\u{85}"), r#""\u0085""#);
        assert_eq!(go_quote("\u{10ffff}\u{e0041}"), r#""\U0010ffff\U000e0041""#);
        assert_eq!(go_quote("日本\u{1f600}"), "\"日本\u{1f600}\"");
        assert_eq!(go_quote(""), "\"\"");
    }

    #[test]
    fn quotes_a_list_as_fmt_q() {
        assert_eq!(go_quote_list(&["a".into(), "b\"".into()]), r#"["a" "b\""]"#);
        assert_eq!(go_quote_list(&[]), "[]");
    }
}
