//! A small column-typed table: what the results tables of a packet are written from, as CSV here
//! and as Parquet by the analysis crate. Absent values stay absent (an empty CSV field, a Parquet
//! null), never 0; numbers are written in full (shortest round-trip form), never rounded.

/// One column's values.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    Text(Vec<Option<String>>),
    Float(Vec<Option<f64>>),
    Int(Vec<Option<i64>>),
    Bool(Vec<Option<bool>>),
}

impl Values {
    pub fn len(&self) -> usize {
        match self {
            Values::Text(v) => v.len(),
            Values::Float(v) => v.len(),
            Values::Int(v) => v.len(),
            Values::Bool(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn cell(&self, row: usize) -> Option<String> {
        match self {
            Values::Text(v) => v[row].clone(),
            Values::Float(v) => v[row].map(|x| format!("{x}")),
            Values::Int(v) => v[row].map(|x| x.to_string()),
            Values::Bool(v) => v[row].map(|x| x.to_string()),
        }
    }
}

/// Named columns of equal length.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    pub columns: Vec<(String, Values)>,
}

/// Quotes a CSV field when it needs it (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

impl Table {
    pub fn new() -> Table {
        Table::default()
    }

    /// Adds a column; panics when its length differs from the columns already there (a bug).
    pub fn with(mut self, name: &str, values: Values) -> Table {
        if let Some((_, first)) = self.columns.first() {
            assert_eq!(
                first.len(),
                values.len(),
                "column {name} has another length"
            );
        }
        self.columns.push((name.to_owned(), values));
        self
    }

    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, v)| v.len())
    }

    /// RFC 4180 CSV with a header line, `\n` line ends; an absent value is an empty field.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        let header: Vec<String> = self.columns.iter().map(|(n, _)| csv_field(n)).collect();
        out.push_str(&header.join(","));
        out.push('\n');
        for row in 0..self.rows() {
            let fields: Vec<String> = self
                .columns
                .iter()
                .map(|(_, v)| v.cell(row).map(|c| csv_field(&c)).unwrap_or_default())
                .collect();
            out.push_str(&fields.join(","));
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_keeps_absent_values_empty_and_numbers_whole() {
        let t = Table::new()
            .with(
                "cell",
                Values::Text(vec![Some("B0".into()), Some("say \"hi\", ok".into())]),
            )
            .with("delta", Values::Float(vec![Some(0.1 + 0.2), None]))
            .with("n", Values::Int(vec![Some(24), Some(0)]))
            .with("ok", Values::Bool(vec![None, Some(true)]));
        assert_eq!(
            t.to_csv(),
            "cell,delta,n,ok\nB0,0.30000000000000004,24,\n\"say \"\"hi\"\", ok\",,0,true\n"
        );
        assert_eq!(t.rows(), 2);
    }
}
