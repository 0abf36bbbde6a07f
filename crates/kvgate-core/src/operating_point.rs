//! Operating points and arrival identity. A run offers a load (an arrival rate, a trace, a number
//! of requests in flight) against an admission limit (the manifest's scheduler limit): that pair
//! is its **operating point**. Runs at different points are different experiments, never
//! repeats of each other; repeats are runs at the same point only.
//!
//! A goodput comparison between two cells also needs the same arrivals: the same trace (its
//! sha256) or the same arrival spec and seed. A run's **arrival identity** names them; cells whose
//! runs at the compared point do not share them are shown side by side, not compared.
//!
//! The full envelope (sweeps over offered load and admission limits, the knee) is not decided
//! here; this module only keeps points apart.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

use crate::canonical::{canonical_sha256, format_number};
use crate::run::RunKind;

/// The load a run offered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OfferedLoad {
    /// Open loop at a mean arrival rate, requests per second.
    Rate { per_s: f64 },
    /// Open loop replaying a recorded arrival trace.
    Trace { sha256: String },
    /// Closed loop: this many requests in flight.
    Concurrency { requests: u32 },
    /// Every request sent at once (an infinite request rate).
    Unbounded,
    /// The run records no offered load.
    Unknown,
}

/// Where a run was measured: the load it offered and the admission limit it met.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct OperatingPoint {
    pub offered: OfferedLoad,
    /// The manifest's scheduler limit on sequences (vLLM `max_num_seqs`, llama.cpp slots);
    /// absent when unknown.
    pub admission_limit: Option<u32>,
    /// The client's own cap on requests in flight (vLLM bench `max_concurrency`, AIPerf's
    /// `--concurrency` beside a rate), read from the file; never an admission limit. Absent when
    /// the client set none, and for closed loops, whose concurrency is the offered load itself.
    #[serde(default)]
    pub client_concurrency: Option<u32>,
}

impl OperatingPoint {
    /// The point in words, for rules and reasons.
    pub fn describe(&self) -> String {
        let offered = match &self.offered {
            OfferedLoad::Rate { per_s } => format!("{} requests/s offered", number(*per_s)),
            OfferedLoad::Trace { sha256 } => format!("arrival trace {}", short(sha256)),
            OfferedLoad::Concurrency { requests } => format!("closed loop × {requests}"),
            OfferedLoad::Unbounded => "all requests at once".to_owned(),
            OfferedLoad::Unknown => "offered load unknown".to_owned(),
        };
        let client = self
            .client_concurrency
            .map(|c| format!(", client cap {c} in flight"))
            .unwrap_or_default();
        match self.admission_limit {
            Some(limit) => format!("{offered}{client}, admission limit {limit}"),
            None => format!("{offered}{client}, admission limit unknown"),
        }
    }
}

fn number(v: f64) -> String {
    format_number(v).unwrap_or_else(|| v.to_string())
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// What a run's configuration says about its arrivals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct RunArrivals {
    pub offered: OfferedLoad,
    /// The client's own cap on requests in flight, as the file states it (see
    /// [`OperatingPoint::client_concurrency`]).
    #[serde(default)]
    pub client_concurrency: Option<u32>,
    /// What makes two runs' arrivals the same: the trace digest, or the arrival spec with its
    /// seed, in words. Absent when the run records neither (most imports).
    pub identity: Option<String>,
}

impl Default for RunArrivals {
    fn default() -> Self {
        RunArrivals {
            offered: OfferedLoad::Unknown,
            client_concurrency: None,
            identity: None,
        }
    }
}

impl RunArrivals {
    /// Reads a run's stored configuration: KV Gate's own runs (`kind`, `mode`, `seed`,
    /// `concurrency`, `corpus`), or an import (`import` + the tool's `source_config`).
    pub fn from_config(kind: RunKind, config: &Value) -> RunArrivals {
        if config.get("import").is_some_and(Value::is_object) {
            let point = imported_point(&config["source_config"]);
            return RunArrivals {
                offered: point.offered,
                client_concurrency: point.client_concurrency,
                // No import format records its arrival seed: the same spec is not proven the
                // same arrivals.
                identity: None,
            };
        }
        let seed = config["seed"].as_u64();
        let corpus = config["corpus"]["items_sha256"].as_str();
        if let Some(open) = config["mode"].get("open_loop") {
            let rate = open["rate"].as_f64().filter(|r| r.is_finite() && *r > 0.0);
            return match open["kind"].as_str() {
                Some("trace") => match open["sha256"].as_str() {
                    Some(sha) => RunArrivals {
                        offered: OfferedLoad::Trace { sha256: sha.into() },
                        client_concurrency: None,
                        identity: Some(format!("arrival trace sha256 {sha}")),
                    },
                    None => RunArrivals::default(),
                },
                Some(process) => {
                    let seed = open["seed"].as_u64();
                    let seeded = process != "constant";
                    let shape = open["shape"]
                        .as_f64()
                        .map(|s| format!(" shape {}", number(s)))
                        .unwrap_or_default();
                    RunArrivals {
                        offered: rate
                            .map_or(OfferedLoad::Unknown, |per_s| OfferedLoad::Rate { per_s }),
                        client_concurrency: None,
                        // Constant arrivals need no seed; the others are drawn from it.
                        identity: rate.filter(|_| !seeded || seed.is_some()).map(|r| {
                            let seed = seed.map(|s| format!(", seed {s}")).unwrap_or_default();
                            format!("{process} {} /s{shape}{seed}", number(r))
                        }),
                    }
                }
                None => RunArrivals::default(),
            };
        }
        let (workers, what) = if let Some(closed) = config["mode"].get("closed_loop") {
            (closed["concurrency"].as_u64(), "closed loop")
        } else if kind == RunKind::Quality || config["kind"] == "quality" {
            // A quality pass is a closed loop over its selected items (one in flight unless set).
            (
                Some(config["concurrency"].as_u64().unwrap_or(1)),
                "quality pass",
            )
        } else {
            (None, "")
        };
        let Some(workers) = workers.and_then(|w| u32::try_from(w).ok()) else {
            return RunArrivals::default();
        };
        // In a closed loop the next request leaves when one ends: what is sent, in which
        // order, is the corpus (or the selected items), the repeats and the seed.
        let sent = canonical_sha256(&serde_json::json!({
            "corpus": corpus,
            "selected": config["corpus"]["selected"],
            "repeats": config["repeats"],
        }));
        RunArrivals {
            // KV Gate's closed loop: its workers are the offered load, not a cap beside one.
            offered: OfferedLoad::Concurrency { requests: workers },
            client_concurrency: None,
            identity: seed.map(|seed| {
                format!(
                    "{what} × {workers} over requests {}, seed {seed}",
                    short(&sent)
                )
            }),
        }
    }
}

/// The point an imported file states: its offered load and the client's in-flight cap.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedPoint {
    pub offered: OfferedLoad,
    pub client_concurrency: Option<u32>,
}

/// The point an imported tool's configuration states, read, never guessed: vLLM bench
/// `request_rate` (`"inf"`: all at once) with `max_concurrency` as the client cap; GuideLLM's
/// strategy (`benchmark.config.strategy`: `synchronous` and `concurrent` are closed loops,
/// `throughput` all at once, rate strategies their `rate`, each with its `max_concurrency` as the
/// client cap); AIPerf's load settings (`input_config.phases[]` of the profiling phase, or the
/// older `input_config.loadgen`); inference-perf's stage `requested_rate`. Unknown otherwise.
pub fn imported_point(source: &Value) -> ImportedPoint {
    let point = |offered, client_concurrency| ImportedPoint {
        offered,
        client_concurrency,
    };
    let unknown = || point(OfferedLoad::Unknown, None);
    match &source["request_rate"] {
        Value::Number(n) => {
            return match n.as_f64() {
                Some(per_s) if per_s.is_finite() && per_s > 0.0 => point(
                    OfferedLoad::Rate { per_s },
                    count(&source["max_concurrency"]),
                ),
                _ => unknown(),
            }
        }
        Value::String(s) if is_infinite(s) => {
            return point(OfferedLoad::Unbounded, count(&source["max_concurrency"]));
        }
        Value::String(_) => return unknown(),
        _ => {}
    }
    let strategy = [
        &source["benchmark"]["config"]["strategy"],
        &source["strategy"],
    ]
    .into_iter()
    .find(|s| s.is_object());
    if let Some(strategy) = strategy {
        let cap = count(&strategy["max_concurrency"]);
        return match strategy["type_"].as_str().or(strategy["type"].as_str()) {
            // One request at a time, the next when it ends: a closed loop of one.
            Some("synchronous") => point(OfferedLoad::Concurrency { requests: 1 }, None),
            Some("concurrent") => count(&strategy["streams"]).map_or_else(unknown, |requests| {
                point(OfferedLoad::Concurrency { requests }, None)
            }),
            Some("throughput") => point(OfferedLoad::Unbounded, cap),
            Some(_) => rate(&strategy["rate"])
                .map_or_else(unknown, |per_s| point(OfferedLoad::Rate { per_s }, cap)),
            None => unknown(),
        };
    }
    if let Some(input) = source.get("input_config").filter(|v| v.is_object()) {
        return aiperf_point(input, source["phase"].as_str().unwrap_or("profiling"));
    }
    // inference-perf: a stage's `load_summary.requested_rate`, kept in the config on import.
    if let Some(per_s) = rate(&source["requested_rate"]) {
        return point(OfferedLoad::Rate { per_s }, None);
    }
    unknown()
}

/// AIPerf's offered load in the run's phase: a rate (`request_rate`/`rate`, with `concurrency`
/// as the client cap) or, without one, a closed loop at `concurrency` (`concurrency` phases,
/// `concurrency_burst`).
fn aiperf_point(input: &Value, phase: &str) -> ImportedPoint {
    let phases = input["phases"].as_array();
    let settings = match phases {
        Some(phases) => phases
            .iter()
            .find(|p| p["name"] == phase)
            .unwrap_or(&Value::Null),
        None => &input["loadgen"],
    };
    let concurrency = count(&settings["concurrency"]);
    let rated = rate(&settings["request_rate"]).or_else(|| rate(&settings["rate"]));
    let unknown = ImportedPoint {
        offered: OfferedLoad::Unknown,
        client_concurrency: None,
    };
    match (rated, concurrency) {
        (Some(per_s), cap) => ImportedPoint {
            offered: OfferedLoad::Rate { per_s },
            client_concurrency: cap,
        },
        (None, Some(requests)) => {
            let kind = settings["type"]
                .as_str()
                .or(settings["request_rate_mode"].as_str());
            // A rate mode whose rate is missing is not a closed loop: unknown, not guessed.
            match kind {
                None | Some("concurrency") | Some("concurrency_burst") => ImportedPoint {
                    offered: OfferedLoad::Concurrency { requests },
                    client_concurrency: None,
                },
                Some(_) => unknown,
            }
        }
        (None, None) => unknown,
    }
}

fn is_infinite(s: &str) -> bool {
    s.eq_ignore_ascii_case("inf") || s.eq_ignore_ascii_case("infinity")
}

fn count(v: &Value) -> Option<u32> {
    v.as_u64()
        .and_then(|c| u32::try_from(c).ok())
        .filter(|c| *c > 0)
}

fn rate(v: &Value) -> Option<f64> {
    v.as_f64().filter(|r| r.is_finite() && *r > 0.0)
}

/// Whether B0 and a candidate are compared on goodput, and if not, why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, JsonSchema)]
pub struct GoodputComparison {
    pub comparable: bool,
    /// The point both cells were measured at, when they share one.
    pub point: Option<OperatingPoint>,
    /// Why the cells are not compared; absent when they are.
    pub reason: Option<String>,
}

/// The arrival identities of one cell's goodput runs at one point, and the runs lacking one.
pub struct PointArrivals<'a> {
    pub identities: Vec<&'a str>,
    /// Runs at the point whose arrivals are not identified.
    pub unidentified: Vec<i64>,
}

/// The comparison of a candidate's goodput runs with B0's at a shared point: comparable when
/// every run on both sides has an arrival identity and both sides have the same set of them (each
/// repeat of one side has its counterpart on the other).
pub fn compare_arrivals(
    cell: &str,
    point: &OperatingPoint,
    candidate: &PointArrivals<'_>,
    baseline: &PointArrivals<'_>,
) -> GoodputComparison {
    let not = |reason: String| GoodputComparison {
        comparable: false,
        point: Some(point.clone()),
        reason: Some(reason),
    };
    let unidentified: Vec<String> = baseline
        .unidentified
        .iter()
        .map(|r| format!("B0 run {r}"))
        .chain(
            candidate
                .unidentified
                .iter()
                .map(|r| format!("{cell} run {r}")),
        )
        .collect();
    if !unidentified.is_empty() {
        return not(format!(
            "the arrivals of {} are not recorded (no trace digest, no arrival spec with its seed): not the same arrivals, proven",
            unidentified.join(", ")
        ));
    }
    let set = |v: &[&str]| {
        let mut v: Vec<String> = v.iter().map(|s| (*s).to_owned()).collect();
        v.sort();
        v.dedup();
        v
    };
    let (c, b) = (set(&candidate.identities), set(&baseline.identities));
    if c != b {
        return not(format!(
            "different arrivals at {}: B0 {}; {cell} {}",
            point.describe(),
            b.join(" | "),
            c.join(" | ")
        ));
    }
    GoodputComparison {
        comparable: true,
        point: Some(point.clone()),
        reason: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn open_loop_rates_traces_and_closed_loops_are_read_from_the_run_config() {
        let poisson = json!({"kind": "load", "seed": 1,
            "mode": {"open_loop": {"kind": "poisson", "rate": 2.0, "seed": 1}}});
        let a = RunArrivals::from_config(RunKind::Load, &poisson);
        assert_eq!(a.offered, OfferedLoad::Rate { per_s: 2.0 });
        let same = RunArrivals::from_config(RunKind::Load, &poisson);
        assert_eq!(a.identity, same.identity);
        let other_seed = json!({"kind": "load", "seed": 2,
            "mode": {"open_loop": {"kind": "poisson", "rate": 2.0, "seed": 2}}});
        let b = RunArrivals::from_config(RunKind::Load, &other_seed);
        assert_eq!(b.offered, a.offered, "the same offered rate");
        assert_ne!(b.identity, a.identity, "not the same arrivals");

        let trace = json!({"kind": "load", "seed": 1, "mode": {"open_loop":
            {"kind": "trace", "sha256": "c".repeat(64), "arrivals": 10, "spec": "trace:x.txt"}}});
        let t = RunArrivals::from_config(RunKind::Load, &trace);
        assert_eq!(
            t.offered,
            OfferedLoad::Trace {
                sha256: "c".repeat(64)
            }
        );
        assert!(t.identity.unwrap().contains(&"c".repeat(64)));

        let closed = json!({"kind": "load", "seed": 3, "corpus": {"items_sha256": "d".repeat(64)},
            "mode": {"closed_loop": {"concurrency": 4}}});
        let c = RunArrivals::from_config(RunKind::Load, &closed);
        assert_eq!(c.offered, OfferedLoad::Concurrency { requests: 4 });
        assert!(c.identity.unwrap().contains("seed 3"));

        let quality = json!({"kind": "quality", "seed": 7, "concurrency": 1, "repeats": 1,
            "corpus": {"items_sha256": "e".repeat(64), "selected": ["a", "b"]}});
        let q = RunArrivals::from_config(RunKind::Quality, &quality);
        assert_eq!(q.offered, OfferedLoad::Concurrency { requests: 1 });
        let mut fewer = quality.clone();
        fewer["corpus"]["selected"] = json!(["a"]);
        assert_ne!(
            q.identity,
            RunArrivals::from_config(RunKind::Quality, &fewer).identity,
            "other items sent: other arrivals"
        );
    }

    #[test]
    fn imports_state_their_rate_but_never_their_arrival_seed() {
        let vllm = json!({"import": {"format": "vllm_bench"},
            "source_config": {"request_rate": 8.0, "max_concurrency": 16}});
        let r = RunArrivals::from_config(RunKind::Load, &vllm);
        assert_eq!(r.offered, OfferedLoad::Rate { per_s: 8.0 });
        assert_eq!(
            r.client_concurrency,
            Some(16),
            "the client cap beside the rate"
        );
        assert_eq!(r.identity, None);
        let guidellm = json!({"import": {}, "source_config": {"strategy": {"type_": "constant", "rate": 4.0}}});
        assert_eq!(
            RunArrivals::from_config(RunKind::Load, &guidellm).offered,
            OfferedLoad::Rate { per_s: 4.0 }
        );
        let nothing = json!({"import": {}, "source_config": {}});
        assert_eq!(
            RunArrivals::from_config(RunKind::Load, &nothing),
            RunArrivals::default()
        );
    }

    #[test]
    fn an_infinite_rate_is_all_at_once_and_its_max_concurrency_a_client_cap() {
        // Synthetic, the header of `vllm bench serve --request-rate inf --max-concurrency 2`.
        let inf =
            json!({"import": {}, "source_config": {"request_rate": "inf", "max_concurrency": 2}});
        let a = RunArrivals::from_config(RunKind::Load, &inf);
        assert_eq!(a.offered, OfferedLoad::Unbounded, "not a closed loop of 2");
        assert_eq!(a.client_concurrency, Some(2));
        // `max_concurrency: null` (no cap) stays absent, never 0.
        let uncapped = imported_point(&json!({"request_rate": "inf", "max_concurrency": null}));
        assert_eq!(uncapped.offered, OfferedLoad::Unbounded);
        assert_eq!(uncapped.client_concurrency, None);
        // A rate string that is not infinity is not read as a number: unknown.
        assert_eq!(
            imported_point(&json!({"request_rate": "8"})).offered,
            OfferedLoad::Unknown
        );
        // A zero or negative rate is no rate: unknown, never 0 requests/s.
        assert_eq!(
            imported_point(&json!({"request_rate": 0.0})).offered,
            OfferedLoad::Unknown
        );
        // The client cap is the client's: the point keeps it apart from the server's limit.
        let p = OperatingPoint {
            offered: a.offered,
            admission_limit: Some(4),
            client_concurrency: a.client_concurrency,
        };
        assert_eq!(
            p.describe(),
            "all requests at once, client cap 2 in flight, admission limit 4"
        );
    }

    #[test]
    fn guidellm_strategies_are_read_where_the_report_keeps_them() {
        // Synthetic, shaped as GuideLLM 0.8.1 stores a benchmark (`benchmark.config.strategy`).
        let at = |strategy: Value| {
            imported_point(&json!({"benchmark": {"config": {"strategy": strategy}}}))
        };
        let constant = at(json!({"type_": "constant", "rate": 0.6, "max_concurrency": 10240}));
        assert_eq!(constant.offered, OfferedLoad::Rate { per_s: 0.6 });
        assert_eq!(constant.client_concurrency, Some(10240));
        let sync = at(json!({"type_": "synchronous", "max_concurrency": 1}));
        assert_eq!(sync.offered, OfferedLoad::Concurrency { requests: 1 });
        assert_eq!(
            sync.client_concurrency, None,
            "a closed loop's concurrency is its load"
        );
        let concurrent = at(json!({"type_": "concurrent", "streams": 4, "max_concurrency": 4}));
        assert_eq!(concurrent.offered, OfferedLoad::Concurrency { requests: 4 });
        let throughput = at(json!({"type_": "throughput", "max_concurrency": 64}));
        assert_eq!(throughput.offered, OfferedLoad::Unbounded);
        assert_eq!(throughput.client_concurrency, Some(64));
        // A rate strategy without its rate is unknown, not a guess.
        assert_eq!(
            at(json!({"type_": "poisson"})).offered,
            OfferedLoad::Unknown
        );
    }

    #[test]
    fn aiperf_load_settings_give_a_rate_with_a_cap_or_a_closed_loop() {
        // Synthetic, after AIPerf 0.13.0's `input_config.phases` and 0.1.1's `loadgen`.
        let phases = json!([
            {"name": "warmup", "kind": "warmup", "type": "concurrency", "concurrency": 8},
            {"name": "profiling", "kind": "profiling", "type": "concurrency", "concurrency": 2}]);
        let closed =
            imported_point(&json!({"phase": "profiling", "input_config": {"phases": phases}}));
        assert_eq!(
            closed.offered,
            OfferedLoad::Concurrency { requests: 2 },
            "the run's phase"
        );
        let warmup =
            imported_point(&json!({"phase": "warmup", "input_config": {"phases": phases}}));
        assert_eq!(warmup.offered, OfferedLoad::Concurrency { requests: 8 });
        let elsewhere =
            imported_point(&json!({"phase": "other", "input_config": {"phases": phases}}));
        assert_eq!(
            elsewhere.offered,
            OfferedLoad::Unknown,
            "a phase not configured: unknown"
        );
        let rated = imported_point(&json!({"input_config": {"phases": [
            {"name": "profiling", "kind": "profiling", "type": "request_rate", "request_rate": 5.0, "concurrency": 3}]}}));
        assert_eq!(rated.offered, OfferedLoad::Rate { per_s: 5.0 });
        assert_eq!(rated.client_concurrency, Some(3));
        let burst = imported_point(&json!({"input_config": {"loadgen":
            {"concurrency": 100, "request_rate_mode": "concurrency_burst", "request_count": 100}}}));
        assert_eq!(burst.offered, OfferedLoad::Concurrency { requests: 100 });
        // A rate mode whose rate is missing: the concurrency is a cap beside an unknown rate.
        let no_rate = imported_point(&json!({"input_config": {"loadgen":
            {"concurrency": 4, "request_rate_mode": "poisson"}}}));
        assert_eq!(no_rate.offered, OfferedLoad::Unknown);
        assert_eq!(
            imported_point(&json!({"input_config": {"phases": []}})).offered,
            OfferedLoad::Unknown
        );
    }

    #[test]
    fn an_inference_perf_stage_is_at_its_requested_rate() {
        let stage =
            imported_point(&json!({"report": "lifecycle", "stage": 1, "requested_rate": 0.6}));
        assert_eq!(stage.offered, OfferedLoad::Rate { per_s: 0.6 });
        let summary =
            imported_point(&json!({"report": "lifecycle", "stage": null, "requested_rate": null}));
        assert_eq!(summary.offered, OfferedLoad::Unknown);
    }

    #[test]
    fn arrivals_that_differ_or_are_unknown_are_not_compared() {
        let point = OperatingPoint {
            offered: OfferedLoad::Rate { per_s: 2.0 },
            admission_limit: Some(64),
            client_concurrency: None,
        };
        let side = |ids: Vec<&'static str>, unidentified: Vec<i64>| PointArrivals {
            identities: ids,
            unidentified,
        };
        let same = compare_arrivals(
            "C1",
            &point,
            &side(vec!["t1", "t1"], vec![]),
            &side(vec!["t1"], vec![]),
        );
        assert!(same.comparable, "{same:?}");
        assert_eq!(same.reason, None);
        let differ = compare_arrivals(
            "C1",
            &point,
            &side(vec!["t2"], vec![]),
            &side(vec!["t1"], vec![]),
        );
        assert!(!differ.comparable);
        let reason = differ.reason.unwrap();
        assert!(
            reason.contains("different arrivals") && reason.contains("t1") && reason.contains("t2"),
            "{reason}"
        );
        let unknown = compare_arrivals(
            "C1",
            &point,
            &side(vec![], vec![9]),
            &side(vec!["t1"], vec![]),
        );
        assert!(!unknown.comparable);
        assert!(unknown.reason.unwrap().contains("C1 run 9"));
    }

    #[test]
    fn a_point_says_its_load_and_admission_limit() {
        let p = OperatingPoint {
            offered: OfferedLoad::Rate { per_s: 2.5 },
            admission_limit: Some(64),
            client_concurrency: None,
        };
        assert_eq!(p.describe(), "2.5 requests/s offered, admission limit 64");
        let q = OperatingPoint {
            offered: OfferedLoad::Unknown,
            admission_limit: None,
            client_concurrency: None,
        };
        assert_eq!(
            q.describe(),
            "offered load unknown, admission limit unknown"
        );
    }
}
