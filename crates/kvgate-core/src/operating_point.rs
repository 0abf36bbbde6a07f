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
        match self.admission_limit {
            Some(limit) => format!("{offered}, admission limit {limit}"),
            None => format!("{offered}, admission limit unknown"),
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
    /// What makes two runs' arrivals the same: the trace digest, or the arrival spec with its
    /// seed, in words. Absent when the run records neither (most imports).
    pub identity: Option<String>,
}

impl Default for RunArrivals {
    fn default() -> Self {
        RunArrivals {
            offered: OfferedLoad::Unknown,
            identity: None,
        }
    }
}

impl RunArrivals {
    /// Reads a run's stored configuration: KV Gate's own runs (`kind`, `mode`, `seed`,
    /// `concurrency`, `corpus`), or an import (`import` + the tool's `source_config`).
    pub fn from_config(kind: RunKind, config: &Value) -> RunArrivals {
        if config.get("import").is_some_and(Value::is_object) {
            return RunArrivals {
                offered: imported_load(&config["source_config"]),
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
            offered: OfferedLoad::Concurrency { requests: workers },
            identity: seed.map(|seed| {
                format!(
                    "{what} × {workers} over requests {}, seed {seed}",
                    short(&sent)
                )
            }),
        }
    }
}

/// The offered load an imported tool's configuration states: vLLM bench `request_rate` (with
/// `max_concurrency`), GuideLLM's strategy (`rate`, `streams`); unknown otherwise.
fn imported_load(source: &Value) -> OfferedLoad {
    let concurrency = |v: &Value| {
        v.as_u64()
            .and_then(|c| u32::try_from(c).ok())
            .map(|requests| OfferedLoad::Concurrency { requests })
    };
    match &source["request_rate"] {
        Value::Number(n) => {
            return match n.as_f64() {
                Some(per_s) if per_s.is_finite() && per_s > 0.0 => OfferedLoad::Rate { per_s },
                _ => OfferedLoad::Unknown,
            }
        }
        Value::String(s) if s.eq_ignore_ascii_case("inf") || s == "Infinity" => {
            return concurrency(&source["max_concurrency"]).unwrap_or(OfferedLoad::Unbounded);
        }
        _ => {}
    }
    let strategy = &source["strategy"];
    match strategy["type_"].as_str().or(strategy["type"].as_str()) {
        Some("synchronous") => OfferedLoad::Concurrency { requests: 1 },
        Some("concurrent") => concurrency(&strategy["streams"]).unwrap_or(OfferedLoad::Unknown),
        Some("throughput") => OfferedLoad::Unbounded,
        Some(_) => match strategy["rate"].as_f64() {
            Some(per_s) if per_s.is_finite() && per_s > 0.0 => OfferedLoad::Rate { per_s },
            _ => OfferedLoad::Unknown,
        },
        None => OfferedLoad::Unknown,
    }
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
        let vllm =
            json!({"import": {"format": "vllm_bench"}, "source_config": {"request_rate": 8.0}});
        let r = RunArrivals::from_config(RunKind::Load, &vllm);
        assert_eq!(r.offered, OfferedLoad::Rate { per_s: 8.0 });
        assert_eq!(r.identity, None);
        let inf =
            json!({"import": {}, "source_config": {"request_rate": "inf", "max_concurrency": 16}});
        assert_eq!(
            RunArrivals::from_config(RunKind::Load, &inf).offered,
            OfferedLoad::Concurrency { requests: 16 }
        );
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
    fn arrivals_that_differ_or_are_unknown_are_not_compared() {
        let point = OperatingPoint {
            offered: OfferedLoad::Rate { per_s: 2.0 },
            admission_limit: Some(64),
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
        };
        assert_eq!(p.describe(), "2.5 requests/s offered, admission limit 64");
        let q = OperatingPoint {
            offered: OfferedLoad::Unknown,
            admission_limit: None,
        };
        assert_eq!(
            q.describe(),
            "offered load unknown, admission limit unknown"
        );
    }
}
