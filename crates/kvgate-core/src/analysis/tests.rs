//! Hand-computed cases for the analysis rules.

use super::*;
use crate::policy::Policy;

fn policy(segments: &str) -> Policy {
    Policy::from_json_text(&format!(
        r#"{{"classes": [{{"name": "short", "max_input_tokens": 100,
                           "slo": {{"ttft_ms": 100, "itl_ms": 10, "e2e_ms": 1000}}}}],
            "goodput": {{"interval_s": 10, "drain_s": 5}},
            "alpha": 0.05,
            "segments": {segments}}}"#
    ))
    .unwrap()
}

const SEGMENTS: &str = r#"[{"name": "de", "filter": {"language": "de"}, "floor": 0.5, "margin": 0.1, "protected": true},
                          {"name": "numeric", "filter": {"task_type": "numeric"}, "margin": 0.1, "protected": true},
                          {"name": "all-en", "filter": {"language": "en"}, "margin": 0.1, "protected": false}]"#;

#[allow(clippy::too_many_arguments)]
fn req(
    planned: f64,
    status: RequestStatus,
    dispatch: Option<f64>,
    first: Option<f64>,
    finish: Option<f64>,
    prompt: u64,
    out: u64,
    accepted: Option<bool>,
) -> RequestRow {
    RequestRow {
        item: None,
        repeat: 0,
        status,
        planned_ms: planned,
        dispatch_ms: dispatch,
        first_token_ms: first,
        finish_ms: finish,
        prompt_tokens: Some(prompt),
        completion_tokens: Some(out),
        accepted,
    }
}

fn cell(name: &str, test_cell: TestCell, runs: Vec<RunInput>) -> CellInput {
    CellInput {
        cell: name.into(),
        test_cell,
        manifest_sha256: "0".repeat(64),
        invalid_reasons: Vec::new(),
        runs,
        capacity: CapacityEvidence::default(),
    }
}

fn load(run_id: i64, requests: Vec<RequestRow>) -> RunInput {
    RunInput {
        run_id,
        kind: RunKind::Load,
        clocked: true,
        requests,
    }
}

use RequestStatus::{Error, Ok as Done, Timeout};

fn goodput_run() -> Vec<RequestRow> {
    vec![
        // Good: TTFT 50, e2e 500, ITL (500 − 50) / 45 = 10, exactly the limit.
        req(
            0.0,
            Done,
            Some(0.0),
            Some(50.0),
            Some(500.0),
            10,
            46,
            Some(true),
        ),
        // TTFT 150 > 100.
        req(
            1000.0,
            Done,
            Some(1000.0),
            Some(1150.0),
            Some(1500.0),
            10,
            10,
            Some(true),
        ),
        // Rejected by the validator.
        req(
            2000.0,
            Done,
            Some(2000.0),
            Some(2010.0),
            Some(2100.0),
            10,
            10,
            Some(false),
        ),
        req(
            3000.0,
            Error,
            Some(3000.0),
            None,
            Some(3001.0),
            10,
            0,
            Some(false),
        ),
        req(
            4000.0,
            Timeout,
            Some(4000.0),
            Some(4010.0),
            None,
            10,
            3,
            Some(false),
        ),
        // Finished at 16 000, after the drain deadline 0 + 10 000 + 5 000.
        req(
            5000.0,
            Done,
            Some(5000.0),
            Some(5050.0),
            Some(16000.0),
            10,
            10,
            Some(true),
        ),
        // One output token: the ITL SLO does not apply; good.
        req(
            9999.0,
            Done,
            Some(10000.0),
            Some(10050.0),
            Some(10060.0),
            10,
            1,
            Some(true),
        ),
        // Planned at t0 + interval: outside the cohort.
        req(
            10000.0,
            Done,
            Some(10000.0),
            Some(10010.0),
            Some(10100.0),
            10,
            10,
            Some(true),
        ),
        // No class takes 500 input tokens: in the cohort, never good.
        req(
            100.0,
            Done,
            Some(100.0),
            Some(110.0),
            Some(200.0),
            500,
            10,
            Some(true),
        ),
    ]
}

#[test]
fn goodput_counts_the_cohort_the_drain_deadline_and_every_miss() {
    let p = policy(SEGMENTS);
    let input = StudyInput {
        items: Vec::new(),
        cells: vec![cell("B0", TestCell::B0, vec![load(1, goodput_run())])],
    };
    let a = analyze(&p, &input);
    let g = &a.cells[0].goodput["short"];
    assert_eq!(g.cohort, 7);
    assert_eq!(g.good, 2);
    assert_eq!(g.per_s, Some(0.2));
    assert_eq!(g.misses.ttft, 1);
    assert_eq!(g.misses.not_accepted, 1);
    assert_eq!(g.misses.after_drain, 1);
    assert_eq!((g.failed, g.unfinished, g.rejected), (1, 1, 0));
    assert_eq!(g.itl_not_applicable, 1);
    assert!(!g.slo_only);
    let u = &a.cells[0].goodput[UNCLASSIFIED];
    assert_eq!((u.cohort, u.good), (1, 0));
    // Every request is offered, whatever its status.
    let r = &a.cells[0].requests;
    assert_eq!((r.offered, r.completed, r.failed, r.timeout), (9, 7, 1, 1));
    assert_eq!((r.validated, r.accepted), (9, 6));
    // The accepted share keeps the failure and the timeout in its denominator.
    assert_eq!(a.cells[0].accepted_share, Some(6.0 / 9.0));
    // Latency of `ok` requests of the class: TTFT 50, 150, 10, 50, 50, 10.
    let l = &a.cells[0].latency["short"];
    assert_eq!(l.count, 6);
    assert_eq!(l.ttft_ms.count, 6);
    // numpy.percentile([10, 10, 50, 50, 50, 150], 50) = 50.0
    assert_eq!(l.ttft_ms.p50, Some(50.0));
    // numpy.percentile([10, 10, 50, 50, 50, 150], 90) = 100.0
    assert_eq!(l.ttft_ms.p90, Some(100.0));
    assert_eq!(l.itl_not_applicable, 1);
    assert_eq!(l.ttft_cdf_ms.len(), 101);
    assert_eq!(
        (l.ttft_cdf_ms[0], l.ttft_cdf_ms[50], l.ttft_cdf_ms[100]),
        (10.0, 50.0, 150.0)
    );
}

#[test]
fn a_run_without_verdicts_counts_slos_only_and_says_so() {
    let p = policy(SEGMENTS);
    let rows: Vec<RequestRow> = goodput_run()
        .into_iter()
        .map(|mut r| {
            r.accepted = None;
            r
        })
        .collect();
    let input = StudyInput {
        items: Vec::new(),
        cells: vec![cell("B0", TestCell::B0, vec![load(1, rows)])],
    };
    let g = &analyze(&p, &input).cells[0].goodput["short"];
    assert!(g.slo_only);
    // The validator-rejected request now counts: it meets every SLO.
    assert_eq!(g.good, 3);
    assert_eq!(g.misses.not_accepted, 0);
}

#[test]
fn an_unclocked_run_feeds_latency_but_never_goodput() {
    // Per-request rows without send times (an old vLLM bench file): each is timed from its own
    // send at 0 ms, so all would "arrive" at once and fit any cohort. They must not count.
    let p = policy(SEGMENTS);
    let mut unclocked = load(1, goodput_run());
    unclocked.clocked = false;
    let input = StudyInput {
        items: Vec::new(),
        cells: vec![cell("B0", TestCell::B0, vec![unclocked.clone()])],
    };
    let a = analyze(&p, &input);
    for g in a.cells[0].goodput.values() {
        assert!(
            g.runs.is_empty() && g.cohort == 0 && g.per_s.is_none(),
            "{g:?}"
        );
    }
    assert_eq!(a.cells[0].latency["short"].ttft_ms.count, 6);
    // Beside a clocked run, only the clocked run is goodput.
    let input = StudyInput {
        items: Vec::new(),
        cells: vec![cell(
            "B0",
            TestCell::B0,
            vec![unclocked, load(2, goodput_run())],
        )],
    };
    let g = &analyze(&p, &input).cells[0].goodput["short"];
    assert_eq!((g.cohort, g.good), (7, 2));
    assert_eq!(g.runs.len(), 1);
}

#[test]
fn repeats_give_mean_sd_and_an_interval() {
    let p = policy(SEGMENTS);
    let one = |id| {
        load(
            id,
            vec![req(
                0.0,
                Done,
                Some(0.0),
                Some(10.0),
                Some(20.0),
                10,
                2,
                Some(true),
            )],
        )
    };
    let mut two = one(2);
    two.requests.push(req(
        5.0,
        Done,
        Some(5.0),
        Some(15.0),
        Some(25.0),
        10,
        2,
        Some(true),
    ));
    let input = StudyInput {
        items: Vec::new(),
        cells: vec![cell("B0", TestCell::B0, vec![one(1), two])],
    };
    let g = &analyze(&p, &input).cells[0].goodput["short"];
    assert_eq!(g.runs.len(), 2);
    assert_eq!(g.repeats.n, 2);
    // Good per second 0.1 and 0.2: mean 0.15, sd = sqrt(0.005).
    assert!((g.per_s.unwrap() - 0.15).abs() < 1e-12);
    assert!((g.repeats.sd.unwrap() - 0.005f64.sqrt()).abs() < 1e-12);
    assert!(g.repeats.ci_low.unwrap() < 0.1 && g.repeats.ci_high.unwrap() > 0.2);
}

/// Items 0..8: de-numeric, de-literal, en-numeric, en-literal, twice each.
fn items() -> Vec<(String, Option<ItemStrata>)> {
    let mut out = Vec::new();
    for i in 0..8 {
        let lang = if i % 4 < 2 { "de" } else { "en" };
        let task = if i % 2 == 0 { "numeric" } else { "literal" };
        let id = format!("evaluation-7-{lang}-long-middle-{task}-present-{i:03}");
        let strata = ItemStrata::from_item_id(&id);
        assert!(strata.is_some());
        out.push((id, strata));
    }
    out
}

fn quality(run_id: i64, verdicts: &[bool]) -> RunInput {
    RunInput {
        run_id,
        kind: RunKind::Quality,
        clocked: true,
        requests: verdicts
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let mut r = req(
                    i as f64,
                    Done,
                    Some(i as f64),
                    Some(i as f64 + 1.0),
                    Some(i as f64 + 2.0),
                    10,
                    2,
                    Some(v),
                );
                r.item = Some(i as u32);
                r
            })
            .collect(),
    }
}

#[test]
fn pairs_strata_segments_holm_and_the_noise_floor() {
    let p = policy(SEGMENTS);
    let b0 = [true, true, true, true, true, true, false, true];
    let c1 = [false, true, true, true, false, true, true, true];
    let b0_again = [true, true, true, true, true, false, false, true];
    let input = StudyInput {
        items: items(),
        cells: vec![
            cell(
                "B0",
                TestCell::B0,
                vec![quality(1, &b0), quality(3, &b0_again)],
            ),
            cell("C1", TestCell::C1, vec![quality(2, &c1)]),
        ],
    };
    let a = analyze(&p, &input);
    // B0's first pass (run 1) against its second (run 3): item 5 flips.
    let nf = a.noise_floor.as_ref().unwrap();
    assert_eq!((nf.n, nf.b, nf.c), (8, 1, 0));
    assert_eq!(nf.flip_rate, 0.125);
    let c = &a.cells[1];
    let row = |name: &str| c.paired.iter().find(|r| r.stratum == name).unwrap();
    // b: items 0 and 4 (B0 accepted, C1 rejected); c: item 6.
    let o = row("overall");
    assert_eq!((o.n, o.b, o.c), (8, 2, 1));
    assert_eq!(o.delta, Some(-1.0 / 8.0));
    // de = items 0, 1, 4, 5: b = 2, c = 0.
    let de = row("de");
    assert_eq!((de.n, de.b, de.c, de.protected), (4, 2, 0, true));
    assert_eq!(de.alpha, 0.025);
    // numeric = items 0, 2, 4, 6: b = 2, c = 1.
    let num = row("numeric");
    assert_eq!((num.n, num.b, num.c), (4, 2, 1));
    // Holm over the two protected p-values: the smaller is doubled, then monotone.
    let (pd, pn) = (de.mcnemar_p, num.mcnemar_p);
    let (lo, hi) = if pd <= pn { (pd, pn) } else { (pn, pd) };
    let holm_lo = (2.0 * lo).min(1.0);
    let holm_hi = hi.max(holm_lo).min(1.0);
    let (hd, hn) = if pd <= pn {
        (holm_lo, holm_hi)
    } else {
        (holm_hi, holm_lo)
    };
    assert!((de.mcnemar_p_holm.unwrap() - hd).abs() < 1e-12);
    assert!((num.mcnemar_p_holm.unwrap() - hn).abs() < 1e-12);
    let en = row("all-en");
    assert_eq!(
        (en.protected, en.alpha, en.mcnemar_p_holm),
        (false, 0.05, None)
    );
    // Marginal strata exist for each value seen.
    assert_eq!(row("language=de").n, 4);
    assert_eq!(row("task_type=literal").n, 4);
    assert_eq!(row("length_class=long").n, 8);
    // Read: overall, protected segments, the other segments, then the marginal strata by
    // dimension and value as declared (en before de), not alphabetically.
    let order: Vec<&str> = reading_order(&c.paired)
        .into_iter()
        .map(|i| c.paired[i].stratum.as_str())
        .collect();
    assert_eq!(
        order,
        [
            "overall",
            "de",
            "numeric",
            "all-en",
            "language=en",
            "language=de",
            "length_class=long",
            "position=middle",
            "task_type=literal",
            "task_type=numeric",
            "answer_kind=present",
        ]
    );
    // Floors: C1 accepts 2 of 4 de items = 0.5, exactly the floor.
    let f = &c.floors[0];
    assert_eq!(
        (f.segment.as_str(), f.n, f.accepted, f.passes),
        ("de", 4, 2, Some(true))
    );
    // Four pairs cannot show non-inferiority: collect more evidence, never "equivalent".
    assert_eq!(de.verdict, PairedVerdict::CollectMoreEvidence);
    assert_eq!(c.decision.outcome, SuggestedOutcome::CollectMoreEvidence);
    assert_eq!(c.decision.quality_qualifies, None);
}

fn many(run_id: i64, n: usize, reject_every: usize) -> RunInput {
    let flags: Vec<bool> = (0..n)
        .map(|i| reject_every == 0 || i % reject_every != 0)
        .collect();
    quality(run_id, &flags)
}

fn many_items(n: usize) -> Vec<(String, Option<ItemStrata>)> {
    (0..n)
        .map(|i| {
            let id = format!("evaluation-7-de-long-end-numeric-present-{i:03}");
            let s = ItemStrata::from_item_id(&id);
            (id, s)
        })
        .collect()
}

#[test]
fn a_clear_regression_rejects_c1_with_calibrate_and_c2_with_rollback() {
    let p = policy(SEGMENTS);
    let input = StudyInput {
        items: many_items(400),
        cells: vec![
            cell("B0", TestCell::B0, vec![many(1, 400, 0)]),
            cell("C1", TestCell::C1, vec![many(2, 400, 3)]),
            cell("C2", TestCell::C2, vec![many(3, 400, 3)]),
        ],
    };
    let a = analyze(&p, &input);
    for (i, outcome) in [
        (1, SuggestedOutcome::Calibrate),
        (2, SuggestedOutcome::Rollback),
    ] {
        let c = &a.cells[i];
        let de = c.paired.iter().find(|r| r.stratum == "de").unwrap();
        assert_eq!((de.b, de.c), (134, 0));
        assert_eq!(de.verdict, PairedVerdict::Inferior);
        assert_eq!(c.decision.quality_qualifies, Some(false));
        assert_eq!(c.decision.outcome, outcome, "{:?}", c.decision.rules);
        assert!(!c.decision.next_experiment.is_empty());
        assert!(
            c.decision
                .rules
                .iter()
                .any(|r| r.contains("`de`: inferior")),
            "{:?}",
            c.decision.rules
        );
    }
    assert_eq!(
        a.cells[1].decision.table_decision.as_deref(),
        Some("Reject on any protected-segment gate breach")
    );
}

#[test]
fn quality_holding_without_a_goodput_gain_retains_b0_and_a_clear_gain_promotes() {
    let p = policy(SEGMENTS);
    let fast = |id, k: usize| {
        let mut r = many(id, 400, 0);
        r.kind = RunKind::Quality;
        // k requests per run meet the SLOs; the rest miss TTFT.
        for (i, q) in r.requests.iter_mut().enumerate() {
            if i >= k {
                q.first_token_ms = Some(q.dispatch_ms.unwrap() + 500.0);
                q.finish_ms = Some(q.dispatch_ms.unwrap() + 600.0);
            }
        }
        r
    };
    let run = |id, k| {
        let mut r = fast(id, k);
        r.run_id = id;
        r
    };
    let b0 = cell("B0", TestCell::B0, vec![run(1, 100), run(2, 102)]);
    let same = cell("C2", TestCell::C2, vec![run(3, 101), run(4, 101)]);
    let better = cell("C1", TestCell::C1, vec![run(5, 300), run(6, 302)]);
    let input = StudyInput {
        items: many_items(400),
        cells: vec![b0, same, better],
    };
    let a = analyze(&p, &input);
    let same = &a.cells[1];
    assert_eq!(
        same.decision.quality_qualifies,
        Some(true),
        "{:?}",
        same.decision.rules
    );
    assert_eq!(same.decision.goodput_qualifies, Some(false));
    assert_eq!(same.decision.outcome, SuggestedOutcome::Retain);
    let better = &a.cells[2];
    assert_eq!(
        better.decision.goodput_qualifies,
        Some(true),
        "{:?}",
        better.decision.rules
    );
    assert_eq!(better.decision.outcome, SuggestedOutcome::Promote);
}

#[test]
fn an_invalid_cell_gets_no_score() {
    let p = policy(SEGMENTS);
    let mut bad = cell("C1", TestCell::C1, vec![many(2, 400, 0)]);
    bad.invalid_reasons
        .push("invalid — compatibility evidence missing".into());
    let input = StudyInput {
        items: many_items(400),
        cells: vec![cell("B0", TestCell::B0, vec![many(1, 400, 0)]), bad],
    };
    let c = &analyze(&p, &input).cells[1];
    assert!(!c.valid);
    assert_eq!(c.decision.outcome, SuggestedOutcome::Invalid);
    assert!(
        c.paired.is_empty() && c.floors.is_empty() && c.goodput.is_empty() && c.latency.is_empty()
    );
    assert_eq!(c.goodput_total.mean, None);
    // Its requests stay visible as offered demand.
    assert_eq!(c.requests.offered, 400);
}

#[test]
fn a_rollback_that_does_not_fit_is_named_with_the_admission_to_reduce_to() {
    let p = policy(SEGMENTS);
    let mut c1 = cell("C1", TestCell::C1, vec![many(2, 400, 0)]);
    c1.capacity.rollback_fit = Some(crate::kv_capacity::RollbackFit {
        required_bytes: 200,
        budget_bytes: 100,
        fits: false,
        shortfall_bytes: Some(100),
        max_sequences_that_fit: 7,
        caveat: String::new(),
    });
    let input = StudyInput {
        items: many_items(400),
        cells: vec![cell("B0", TestCell::B0, vec![many(1, 400, 0)]), c1],
    };
    let d = &analyze(&p, &input).cells[1].decision;
    assert!(
        d.rules
            .iter()
            .any(|r| r.contains("reduce admission to 7 sequences")),
        "{:?}",
        d.rules
    );
}

#[test]
fn a_floor_b0_misses_too_is_not_a_regression_and_keeps_b0() {
    let p = policy(SEGMENTS);
    let input = StudyInput {
        items: many_items(400),
        cells: vec![
            cell("B0", TestCell::B0, vec![many(1, 400, 1)]),
            cell("C2", TestCell::C2, vec![many(2, 400, 1)]),
        ],
    };
    let a = analyze(&p, &input);
    assert_eq!(a.cells[0].floors[0].passes, Some(false));
    let c = &a.cells[1];
    let de = c.paired.iter().find(|r| r.stratum == "de").unwrap();
    assert_eq!(de.verdict, PairedVerdict::NonInferior, "no pair differs");
    assert_eq!(c.decision.quality_qualifies, Some(false));
    assert_eq!(
        c.decision.outcome,
        SuggestedOutcome::Retain,
        "{:?}",
        c.decision.rules
    );
    assert!(c
        .decision
        .rules
        .iter()
        .any(|r| r.contains("B0 is below it too")));
    assert!(c.decision.next_experiment.is_empty());
}

#[test]
fn adjudications_recount_the_pairs_they_label_and_leave_the_rest() {
    let p = policy(SEGMENTS);
    let b0 = [true, true, true, true, true, true, false, true];
    let c1 = [false, true, true, true, false, true, true, true];
    let input = StudyInput {
        items: items(),
        cells: vec![
            cell("B0", TestCell::B0, vec![quality(1, &b0)]),
            cell("C1", TestCell::C1, vec![quality(2, &c1)]),
        ],
    };
    let automatic = analyze(&p, &input).cells[1].paired.clone();
    let none = adjudicated_paired(&p, &input, "C1", &HashMap::new());
    assert_eq!(none, automatic, "no label: the automatic rows");
    // Item 0 (b): both acceptable; item 4 (b): ambiguous, left out; item 6 (c): baseline error.
    let mut labels = HashMap::new();
    labels.insert(input.items[0].0.clone(), Some((true, true)));
    labels.insert(input.items[4].0.clone(), None);
    labels.insert(input.items[6].0.clone(), Some((false, true)));
    let rows = adjudicated_paired(&p, &input, "C1", &labels);
    let o = rows.iter().find(|r| r.stratum == "overall").unwrap();
    assert_eq!((o.n, o.b, o.c), (7, 0, 1));
    let auto = automatic.iter().find(|r| r.stratum == "overall").unwrap();
    assert_eq!((auto.n, auto.b, auto.c), (8, 2, 1));
    assert!(adjudicated_paired(&p, &input, "C9", &labels).is_empty());
}

#[test]
fn a_cell_without_offered_requests_has_no_accepted_share_rather_than_zero() {
    let c = cell("B0", TestCell::B0, Vec::new());
    assert_eq!(counts(&c).offered, 0);
    assert_eq!(accepted_share(&counts(&c)), None);
}
