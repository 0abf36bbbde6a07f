//! `make bench`: runs each benchmark and its anchor in the same process run and prints one
//! table with the ratio, so figures are always compared under the same machine load.
//! Benchmarks are registered by the features they measure; none is registered yet.

fn main() {
    println!(
        "{:<40} {:>14} {:<8} {:<36} {:>14} {:>8}",
        "benchmark", "figure", "unit", "anchor", "anchor figure", "ratio"
    );
    println!("(no benchmarks registered yet)");
}
