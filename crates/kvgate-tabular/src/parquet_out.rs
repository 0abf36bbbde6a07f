//! Results tables as Parquet, written through polars: uncompressed, no statistics that depend on
//! anything but the values, so the same table gives the same bytes.

use kvgate_core::table::{Table, Values};
use polars::prelude::{Column, DataFrame, ParquetCompression, ParquetWriter};

/// The table as a Parquet file; absent values are nulls.
pub fn table_parquet(table: &Table) -> Result<Vec<u8>, String> {
    let columns: Vec<Column> = table
        .columns
        .iter()
        .map(|(name, values)| match values {
            Values::Text(v) => Column::new(name.as_str().into(), v.clone()),
            Values::Float(v) => Column::new(name.as_str().into(), v.clone()),
            Values::Int(v) => Column::new(name.as_str().into(), v.clone()),
            Values::Bool(v) => Column::new(name.as_str().into(), v.clone()),
        })
        .collect();
    let mut df = DataFrame::new(table.rows(), columns).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    ParquetWriter::new(&mut out)
        .with_compression(ParquetCompression::Uncompressed)
        .finish(&mut df)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::{ParquetReader, SerReader};

    #[test]
    fn a_table_round_trips_through_parquet_with_its_nulls_and_the_same_bytes() {
        let t = Table::new()
            .with(
                "cell",
                Values::Text(vec![Some("B0".into()), Some("Q8".into())]),
            )
            .with("delta", Values::Float(vec![None, Some(-0.125)]))
            .with("n", Values::Int(vec![Some(24), Some(24)]))
            .with("valid", Values::Bool(vec![Some(true), None]));
        let bytes = table_parquet(&t).unwrap();
        assert_eq!(bytes, table_parquet(&t).unwrap(), "deterministic");
        let df = ParquetReader::new(std::io::Cursor::new(bytes))
            .finish()
            .unwrap();
        assert_eq!(df.height(), 2);
        let delta = df.column("delta").unwrap().f64().unwrap();
        assert_eq!(delta.get(0), None);
        assert_eq!(delta.get(1), Some(-0.125));
        assert_eq!(df.column("valid").unwrap().bool().unwrap().get(1), None);
    }
}
