use clap::Args;
use kvgate_app::domain::kv_capacity::{
    kv_bytes, token_capacity, BlockScales, ElementSize, KvShape, ScaleMetadata, SkippedLayersTerm,
    SlidingWindowTerm, NOT_FOR_LATENT_OR_HYBRID,
};
use kvgate_app::{AppError, ErrorCode};
use serde::Serialize;

use crate::{print_json, Outcome};

/// Unsharded KV payload bytes = 2 × layers × KV heads × head dim × retained positions × bytes
/// per element, plus the optional terms given as flags
#[derive(Debug, Args)]
pub struct KvCapacityArgs {
    /// Decoder layers
    #[arg(long)]
    layers: u32,
    /// KV heads (not query heads: grouped-query attention enters here)
    #[arg(long)]
    kv_heads: u32,
    /// Head dimension
    #[arg(long)]
    head_dim: u32,
    /// Retained positions per sequence
    #[arg(long)]
    tokens: u64,
    /// Bytes per element: 2 (f16/bf16), 1 (fp8, q8_0 payload), a decimal such as 0.5, or a fraction such as 34/32
    #[arg(long, value_parser = parse_element_size)]
    bytes_per_element: ElementSize,
    /// Sequences of that many positions
    #[arg(long, default_value_t = 1)]
    sequences: u32,
    /// Round each sequence up to whole blocks of this many positions
    #[arg(long)]
    block_size: Option<u32>,
    /// Layers kept at full precision, e.g. 0,1,31
    #[arg(long, value_delimiter = ',')]
    skipped_layers: Vec<u32>,
    /// Bytes per element of the skipped layers
    #[arg(long, value_parser = parse_element_size, default_value = "2")]
    skipped_bytes_per_element: ElementSize,
    /// Window of the sliding-window layers, in positions
    #[arg(long, requires = "sliding_layers")]
    sliding_window: Option<u64>,
    /// Layers that attend over the sliding window only, e.g. 0,2,4
    #[arg(long, value_delimiter = ',', requires = "sliding_window")]
    sliding_layers: Vec<u32>,
    /// Elements per scale block (llama.cpp q8_0: 32)
    #[arg(long, requires = "scale_bytes")]
    scale_block_elements: Option<u32>,
    /// Bytes per block scale (llama.cpp q8_0: 2)
    #[arg(long, requires = "scale_block_elements")]
    scale_bytes: Option<u32>,
    /// Bytes of one scale per layer, KV head and K/V (per-head calibration)
    #[arg(long)]
    per_head_scale_bytes: Option<u32>,
    /// Bytes of one scale per layer and K/V (per-tensor calibration)
    #[arg(long)]
    per_tensor_scale_bytes: Option<u32>,
    /// Also report how many positions a KV budget of this many bytes holds
    #[arg(long)]
    budget_bytes: Option<u64>,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report {
    shape: KvShape,
    positions_per_sequence: u64,
    sequences: u32,
    breakdown: kvgate_app::domain::kv_capacity::KvBytesBreakdown,
    #[serde(skip_serializing_if = "Option::is_none")]
    capacity: Option<kvgate_app::domain::kv_capacity::TokenCapacity>,
}

pub fn run(args: KvCapacityArgs) -> Result<Outcome, AppError> {
    let shape = KvShape {
        num_layers: args.layers,
        num_kv_heads: args.kv_heads,
        head_dim: args.head_dim,
        element_size: args.bytes_per_element,
        sliding_window: args
            .sliding_window
            .map(|window_positions| SlidingWindowTerm {
                window_positions,
                layers: args.sliding_layers.clone(),
            }),
        skipped_layers: (!args.skipped_layers.is_empty()).then(|| SkippedLayersTerm {
            layers: args.skipped_layers.clone(),
            element_size: args.skipped_bytes_per_element,
        }),
        block_size: args.block_size,
        scale_metadata: ScaleMetadata {
            per_block: args.scale_block_elements.zip(args.scale_bytes).map(
                |(elements_per_block, bytes_per_scale)| BlockScales {
                    elements_per_block,
                    bytes_per_scale,
                },
            ),
            per_head_scale_bytes: args.per_head_scale_bytes,
            per_tensor_scale_bytes: args.per_tensor_scale_bytes,
        },
    };
    let invalid = |e: kvgate_app::domain::kv_capacity::KvCapacityError| {
        AppError::new(ErrorCode::InvalidInput, e.to_string())
    };
    let positions = vec![args.tokens; args.sequences as usize];
    let breakdown = kv_bytes(&shape, &positions).map_err(invalid)?;
    let capacity = args
        .budget_bytes
        .map(|b| token_capacity(&shape, b))
        .transpose()
        .map_err(invalid)?;
    let report = Report {
        shape,
        positions_per_sequence: args.tokens,
        sequences: args.sequences,
        breakdown,
        capacity,
    };
    if args.json {
        print_json(&report)?;
        return Ok(Outcome::Success);
    }
    let b = &report.breakdown;
    let rows = [
        ("payload", b.payload_bytes),
        ("skipped layers", b.skipped_layers_bytes),
        ("block rounding", b.block_rounding_bytes),
        ("per-block scales", b.per_block_scale_bytes),
        ("per-head scales", b.per_head_scale_bytes),
        ("per-tensor scales", b.per_tensor_scale_bytes),
        ("total", b.total_bytes),
    ];
    for (name, bytes) in rows {
        println!("{name:<18} {bytes:>20} bytes  {:>14.2} MiB", mib(bytes));
    }
    if let Some(c) = &report.capacity {
        println!(
            "capacity           {:>20} positions in {} bytes ({} bytes per position{})",
            c.positions,
            c.budget_bytes,
            c.bytes_per_position,
            c.blocks
                .map(|n| format!(", {n} blocks"))
                .unwrap_or_default()
        );
    }
    println!("note: {NOT_FOR_LATENT_OR_HYBRID}");
    Ok(Outcome::Success)
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// `2`, `0.5`, `1.0625` or `34/32` as an exact fraction of bytes per element.
fn parse_element_size(s: &str) -> Result<ElementSize, String> {
    let bad = || format!("expected bytes per element such as 2, 0.5 or 34/32, found {s:?}");
    let (num, den): (u64, u64) = if let Some((a, b)) = s.split_once('/') {
        (
            a.trim().parse().map_err(|_| bad())?,
            b.trim().parse().map_err(|_| bad())?,
        )
    } else {
        let (int, frac) = s.trim().split_once('.').unwrap_or((s.trim(), ""));
        if frac.len() > 6 || !frac.chars().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        let scale = 10u64.pow(frac.len() as u32);
        let int: u64 = if int.is_empty() {
            0
        } else {
            int.parse().map_err(|_| bad())?
        };
        let frac: u64 = if frac.is_empty() {
            0
        } else {
            frac.parse().map_err(|_| bad())?
        };
        (int * scale + frac, scale)
    };
    if num == 0 || den == 0 {
        return Err(bad());
    }
    let g = gcd(num, den);
    let (num, den) = (num / g, den / g);
    Ok(ElementSize::new(
        u32::try_from(num).map_err(|_| bad())?,
        u32::try_from(den).map_err(|_| bad())?,
    ))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_sizes_parse_exactly() {
        assert_eq!(parse_element_size("2"), Ok(ElementSize::new(2, 1)));
        assert_eq!(parse_element_size("0.5"), Ok(ElementSize::new(1, 2)));
        assert_eq!(parse_element_size("34/32"), Ok(ElementSize::new(17, 16)));
        assert_eq!(parse_element_size("1.0625"), Ok(ElementSize::new(17, 16)));
        assert!(parse_element_size("0").is_err());
        assert!(parse_element_size("two").is_err());
        assert!(parse_element_size("1/0").is_err());
    }
}
