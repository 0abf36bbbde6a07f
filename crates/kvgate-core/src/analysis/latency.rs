//! Per-class latency percentiles of a cell, and the per-request timing rules goodput shares.

use super::*;

pub(super) fn class_name(policy: &Policy, class: Option<usize>) -> String {
    class.map_or_else(
        || UNCLASSIFIED.to_owned(),
        |i| policy.classes[i].name.clone(),
    )
}

pub(super) fn ttft(r: &RequestRow) -> Option<f64> {
    Some(r.first_token_ms.get()? - r.dispatch_ms.get()?)
}

pub(super) fn e2e(r: &RequestRow) -> Option<f64> {
    Some(r.finish_ms.get()? - r.dispatch_ms.get()?)
}

/// Mean inter-token latency of one request; `None` when not applicable or not measured.
pub(super) fn itl(r: &RequestRow) -> Option<f64> {
    let out = r.completion_tokens.get()?;
    if out <= 1 {
        return None;
    }
    Some((e2e(r)? - ttft(r)?) / (out - 1) as f64)
}

pub(super) fn latency(policy: &Policy, cell: &CellInput) -> BTreeMap<String, ClassLatency> {
    let buckets = policy.classes.len() + 1;
    let mut v: Vec<[Vec<f64>; 3]> = (0..buckets).map(|_| Default::default()).collect();
    // Client delay and engine per-token time, apart from the three client timings.
    let mut queue: Vec<[Vec<f64>; 2]> = (0..buckets).map(|_| Default::default()).collect();
    let mut count = vec![0u64; buckets];
    let mut na = vec![0u64; buckets];
    let mut seen = vec![false; buckets];
    for r in cell.runs.iter().flat_map(|r| &r.requests) {
        let class = policy.class_of(r.input_tokens(), None);
        let k = class.unwrap_or(policy.classes.len());
        seen[k] = true;
        if let Some(x) = r.client_delay_ms.get().filter(|x| x.is_finite()) {
            queue[k][0].push(x);
        }
        if r.status != RequestStatus::Ok {
            continue;
        }
        if let Some(x) = r.engine_itl_ms.get().filter(|x| x.is_finite()) {
            queue[k][1].push(x);
        }
        count[k] += 1;
        if let Some(x) = ttft(r) {
            v[k][0].push(x);
        }
        if let Some(x) = e2e(r) {
            v[k][2].push(x);
        }
        if r.completion_tokens.get().is_some_and(|t| t <= 1) {
            na[k] += 1;
        } else if let Some(x) = itl(r) {
            v[k][1].push(x);
        }
    }
    let mut out = BTreeMap::new();
    for (k, [t, i, e]) in v.iter_mut().enumerate() {
        if k == policy.classes.len() && !seen[k] {
            continue;
        }
        let name = class_name(policy, (k < policy.classes.len()).then_some(k));
        let ((ttft_cdf_ms, ttft_ms), (e2e_cdf_ms, e2e_ms)) = (cdf(t), cdf(e));
        let itl_ms = percentiles(i);
        let [delay, engine] = &mut queue[k];
        out.insert(
            name,
            ClassLatency {
                ttft_ms,
                itl_ms,
                e2e_ms,
                count: count[k],
                itl_not_applicable: na[k],
                client_delay_ms: percentiles(delay),
                engine_itl_ms: percentiles(engine),
                ttft_cdf_ms,
                e2e_cdf_ms,
            },
        );
    }
    out
}
