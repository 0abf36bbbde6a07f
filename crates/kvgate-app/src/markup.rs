//! Text from a study as markup content: the one escape for the packet's HTML report and every
//! SVG chart. Names, model output and imported text are data, never markup.

/// Escapes text for element content and attribute values of HTML and XML (SVG). Control
/// characters XML cannot hold (all of C0 but tab, newline and carriage return) become U+FFFD, so
/// a stray byte in a name never makes a chart unreadable.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(ch),
            c if c.is_control() && (c as u32) < 0x20 => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn markup_in_text_is_escaped() {
        assert_eq!(
            escape("<img src=x onerror=\"alert('x')\"> & co"),
            "&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt; &amp; co"
        );
    }

    #[test]
    fn control_characters_xml_cannot_hold_are_replaced() {
        assert_eq!(escape("a\u{1}b\tc\nd"), "a\u{fffd}b\tc\nd");
    }
}
