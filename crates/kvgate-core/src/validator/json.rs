//! A strict JSON reader for model responses that keeps each number's text as written.
//!
//! `serde_json` would turn `nominal_torque` into an `f64` (losing `12.500000000000000001`) and
//! would silently keep the last of two duplicate keys; the validator needs neither, so it reads
//! responses with this small RFC 8259 reader instead. It accepts exactly one JSON value with
//! optional surrounding whitespace and nothing else.

/// Deeper nesting than this is rejected rather than risking the stack on hostile output.
const MAX_DEPTH: usize = 64;

/// One parsed JSON value with the exact text it was read from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node<'a> {
    pub raw: &'a str,
    pub value: Value<'a>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value<'a> {
    /// Members in the order written, duplicates kept.
    Object(Vec<(String, Node<'a>)>),
    Array(Vec<Node<'a>>),
    String(String),
    /// The number's text as written (already checked against JSON number syntax).
    Number(&'a str),
    Bool(bool),
    Null,
}

/// Why a text is not exactly one JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonError {
    /// Byte offset into the text where reading failed.
    pub offset: usize,
    pub message: &'static str,
}

/// Reads `text` as exactly one JSON value surrounded by optional JSON whitespace.
pub(crate) fn parse_single(text: &str) -> Result<Node<'_>, JsonError> {
    let mut reader = Reader { text, pos: 0 };
    reader.skip_whitespace();
    let node = reader.value(0)?;
    reader.skip_whitespace();
    if reader.pos != text.len() {
        return Err(reader.error("unexpected text after the JSON value"));
    }
    Ok(node)
}

struct Reader<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Reader<'a> {
    fn error(&self, message: &'static str) -> JsonError {
        JsonError {
            offset: self.pos,
            message,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn expect_literal(&mut self, literal: &'static str) -> Result<(), JsonError> {
        if self.text[self.pos..].starts_with(literal) {
            self.pos += literal.len();
            Ok(())
        } else {
            Err(self.error("expected a JSON value"))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node<'a>, JsonError> {
        if depth > MAX_DEPTH {
            return Err(self.error("JSON nested too deeply"));
        }
        let start = self.pos;
        let value = match self.peek() {
            Some(b'{') => self.object(depth)?,
            Some(b'[') => self.array(depth)?,
            Some(b'"') => Value::String(self.string()?),
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(b't') => {
                self.expect_literal("true")?;
                Value::Bool(true)
            }
            Some(b'f') => {
                self.expect_literal("false")?;
                Value::Bool(false)
            }
            Some(b'n') => {
                self.expect_literal("null")?;
                Value::Null
            }
            Some(_) => return Err(self.error("expected a JSON value")),
            None => return Err(self.error("unexpected end of text")),
        };
        Ok(Node {
            raw: &self.text[start..self.pos],
            value,
        })
    }

    fn object(&mut self, depth: usize) -> Result<Value<'a>, JsonError> {
        self.pos += 1;
        let mut members = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(members));
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a quoted key"));
            }
            let key = self.string()?;
            self.skip_whitespace();
            if self.peek() != Some(b':') {
                return Err(self.error("expected `:` after a key"));
            }
            self.pos += 1;
            self.skip_whitespace();
            let value = self.value(depth + 1)?;
            members.push((key, value));
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(members));
                }
                _ => return Err(self.error("expected `,` or `}` in an object")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value<'a>, JsonError> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_whitespace();
            items.push(self.value(depth + 1)?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.error("expected `,` or `]` in an array")),
            }
        }
    }

    fn number(&mut self) -> Result<Value<'a>, JsonError> {
        let start = self.pos;
        while matches!(
            self.peek(),
            Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
        ) {
            self.pos += 1;
        }
        let text = &self.text[start..self.pos];
        if super::Decimal::parse_json_number(text).is_none() {
            self.pos = start;
            return Err(self.error("invalid JSON number"));
        }
        Ok(Value::Number(text))
    }

    fn string(&mut self) -> Result<String, JsonError> {
        self.pos += 1;
        let mut out = String::new();
        let mut run_start = self.pos;
        loop {
            match self.peek() {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => {
                    out.push_str(&self.text[run_start..self.pos]);
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    out.push_str(&self.text[run_start..self.pos]);
                    self.pos += 1;
                    self.escape(&mut out)?;
                    run_start = self.pos;
                }
                Some(byte) if byte < 0x20 => {
                    return Err(self.error("control character inside a string"))
                }
                Some(_) => self.pos += 1,
            }
        }
    }

    fn escape(&mut self, out: &mut String) -> Result<(), JsonError> {
        let c = match self.peek() {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                self.pos += 1;
                let first = self.hex4()?;
                let code = if (0xD800..0xDC00).contains(&first) {
                    if !self.text[self.pos..].starts_with("\\u") {
                        return Err(self.error("unpaired surrogate in a string"));
                    }
                    self.pos += 2;
                    let second = self.hex4()?;
                    if !(0xDC00..0xE000).contains(&second) {
                        return Err(self.error("unpaired surrogate in a string"));
                    }
                    0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                } else {
                    first
                };
                let c = char::from_u32(code)
                    .ok_or_else(|| self.error("unpaired surrogate in a string"))?;
                out.push(c);
                return Ok(());
            }
            _ => return Err(self.error("invalid escape in a string")),
        };
        out.push(c);
        self.pos += 1;
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let digits = self
            .text
            .get(self.pos..self.pos + 4)
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.error("expected four hex digits after \\u"))?;
        self.pos += 4;
        u32::from_str_radix(digits, 16)
            .map_err(|_| self.error("expected four hex digits after \\u"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object_members(text: &str) -> Vec<(String, String)> {
        match parse_single(text).unwrap().value {
            Value::Object(members) => members
                .into_iter()
                .map(|(k, v)| (k, v.raw.to_owned()))
                .collect(),
            other => panic!("expected an object, found {other:?}"),
        }
    }

    #[test]
    fn keeps_number_text_and_member_order() {
        let members =
            object_members(" {\"b\": 12.50, \"a\" :[1, {\"x\": null}], \"c\": \"N.m\"}\n");
        assert_eq!(
            members,
            vec![
                ("b".to_owned(), "12.50".to_owned()),
                ("a".to_owned(), "[1, {\"x\": null}]".to_owned()),
                ("c".to_owned(), "\"N.m\"".to_owned()),
            ]
        );
    }

    #[test]
    fn keeps_duplicate_keys() {
        let members = object_members(r#"{"asset": "AX-104", "asset": "AX-140"}"#);
        assert_eq!(members.len(), 2);
    }

    #[test]
    fn decodes_escapes_and_surrogate_pairs() {
        let node = parse_single(r#""a\"b\\c\/\n\u00e4\ud83d\ude00""#).unwrap();
        assert_eq!(node.value, Value::String("a\"b\\c/\nä😀".to_owned()));
        let raw = parse_single("\"Nenndrehmoment grün\"").unwrap();
        assert_eq!(raw.value, Value::String("Nenndrehmoment grün".to_owned()));
    }

    #[test]
    fn rejects_everything_that_is_not_exactly_one_value() {
        for (text, offset) in [
            ("", 0),
            ("{} {}", 3),
            ("Here is the answer: {}", 0),
            ("{} thanks", 3),
            ("{\"a\": 1,}", 8),
            ("{'a': 1}", 1),
            ("{\"a\": 01}", 6),
            ("{\"a\": NaN}", 6),
            ("{\"a\": \"x\ny\"}", 8),
            ("{\"a\": \"\\ud83d\"}", 13),
            ("{\"a\" 1}", 5),
            ("[1 2]", 3),
            ("tru", 0),
            ("\"open", 5),
        ] {
            let err = parse_single(text).expect_err(text);
            assert_eq!(err.offset, offset, "{text:?}: {}", err.message);
        }
    }

    #[test]
    fn limits_nesting_depth() {
        let deep = "[".repeat(MAX_DEPTH + 2) + &"]".repeat(MAX_DEPTH + 2);
        assert_eq!(
            parse_single(&deep).unwrap_err().message,
            "JSON nested too deeply"
        );
        let fine = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse_single(&fine).is_ok());
    }

    #[test]
    fn reads_literals_and_numbers() {
        assert_eq!(parse_single("true").unwrap().value, Value::Bool(true));
        assert_eq!(parse_single(" null ").unwrap().value, Value::Null);
        assert_eq!(
            parse_single("-1.5e3").unwrap().value,
            Value::Number("-1.5e3")
        );
    }
}
