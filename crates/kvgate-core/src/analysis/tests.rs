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
        prompt: None,
        repeat: 0,
        status,
        planned_ms: planned,
        dispatch_ms: dispatch.into(),
        first_token_ms: first.into(),
        finish_ms: finish.into(),
        prompt_tokens: Some(prompt).into(),
        completion_tokens: Some(out).into(),
        accepted,
        item_input_tokens: Tokens::ABSENT,
        client_delay_ms: Ms::ABSENT,
        engine_itl_ms: Ms::ABSENT,
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
        evaluation_corpus_sha256: None,
        admission_limit: Some(8),
        manifest: Some(manifest(name)),
        interventions: Vec::new(),
    }
}

/// B0's fixture manifest renamed to `name`: every held-constant field equal to B0's.
fn manifest(name: &str) -> crate::manifest::Manifest {
    let mut m = crate::manifest::Manifest::from_json(include_str!(
        "../../../../fixtures/manifests/llama31-8b-h100-b0.json"
    ))
    .unwrap();
    m.cell = name.into();
    m
}

/// Arrivals every test run shares unless it says otherwise: the same point, the same arrivals.
fn arrivals(kind: RunKind) -> RunArrivals {
    match kind {
        RunKind::Load => RunArrivals {
            client_concurrency: None,
            offered: crate::operating_point::OfferedLoad::Rate { per_s: 1.0 },
            identity: Some("poisson 1 /s, seed 1".into()),
        },
        RunKind::Quality => RunArrivals {
            client_concurrency: None,
            offered: crate::operating_point::OfferedLoad::Concurrency { requests: 1 },
            identity: Some("quality pass × 1, seed 1".into()),
        },
    }
}

/// Prompt digests of the test items: item i was sent as prompt i.
fn digests() -> Vec<String> {
    (0..1000).map(|i| format!("{i:064x}")).collect()
}

fn load(run_id: i64, requests: Vec<RequestRow>) -> RunInput {
    RunInput {
        run_id,
        kind: RunKind::Load,
        clocked: true,
        requests,
        arrivals: arrivals(RunKind::Load),
        corpus_sha256: None,
        prompt_note: None,
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
        prompts: digests(),
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
    assert_eq!((g.failed, g.unfinished, g.refused), (1, 1, 0));
    assert_eq!(g.itl_not_applicable, 1);
    assert!(!g.slo_only);
    let u = &a.cells[0].goodput[UNCLASSIFIED];
    assert_eq!((u.cohort, u.good), (1, 0));
    // Every request is offered, whatever its status.
    let r = &a.cells[0].requests;
    assert_eq!((r.offered, r.completed, r.failed, r.timeout), (9, 7, 1, 1));
    assert_eq!((r.validated, r.accepted), (Some(9), Some(6)));
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
        prompts: digests(),
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
        prompts: digests(),
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
        prompts: digests(),
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
        prompts: digests(),
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
                r.prompt = Some(i as u32);
                r
            })
            .collect(),
        arrivals: arrivals(RunKind::Quality),
        corpus_sha256: None,
        prompt_note: None,
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
        prompts: digests(),
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
            "output_length=short",
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

/// The noise floor compares B0's earliest (run, repeat) with its second-earliest, whatever order
/// the runs and rows are stored in: a later run stored first, a run's second repeat, a run with
/// a lower id stored after a higher one, and a row judging a key twice at the same (run, repeat),
/// of which the first read counts.
#[test]
fn the_noise_floor_reads_the_second_earliest_pass_whatever_the_stored_order() {
    let p = policy(SEGMENTS);
    let all = [true; 8];
    // Run 1, repeat 1, items 0-3; the duplicate of item 2 (rejected) comes after its first row.
    let mut run1 = quality(1, &all);
    let mut again = quality(1, &[false, false, true, true]).requests;
    for r in &mut again {
        r.repeat = 1;
    }
    let mut duplicate = again[2].clone();
    duplicate.accepted = Some(false);
    again.push(duplicate);
    run1.requests.extend(again);
    // Run 5 rejects items 2-4 and is stored first; run 3 (items 4-7: accepted, rejected,
    // accepted, accepted) is stored last and comes before it.
    let run5 = quality(5, &[true, true, false, false, false, true, true, true]);
    let mut run3 = quality(3, &[true, true, true, true, true, false, true, true]);
    run3.requests.drain(..4);
    let input = StudyInput {
        items: items(),
        prompts: digests(),
        cells: vec![
            cell("B0", TestCell::B0, vec![run5, run1, run3]),
            cell("C1", TestCell::C1, vec![quality(2, &all)]),
        ],
    };
    let a = analyze(&p, &input);
    // First pass: run 1, repeat 0, all accepted (not run 5, stored first). Second: items 0-3
    // from run 1's repeat 1 (rejected, rejected, accepted: the first of item 2's two rows,
    // accepted), items 4-7 from run 3 (not run 5): items 0, 1 and 5 flip.
    let nf = a.noise_floor.as_ref().unwrap();
    assert_eq!((nf.n, nf.b, nf.c), (8, 3, 0));
    // C1 pairs against B0's first pass: nothing flips.
    let o = a.cells[1]
        .paired
        .iter()
        .find(|r| r.stratum == "overall")
        .unwrap();
    assert_eq!((o.n, o.b, o.c), (8, 0, 0));
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
        prompts: digests(),
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
    // The rules read as the screens do: the bound and the margin in percentage points, never a
    // 17-digit float (the raw figures stay in the paired rows).
    let rules = &a.cells[1].decision.rules;
    let inferior = rules.iter().find(|r| r.contains("`de`: inferior")).unwrap();
    assert!(
        inferior.contains(" pp < −10.0 pp)"),
        "the bound beside the margin: {inferior}"
    );
    for rule in rules {
        let long_fraction = rule
            .split(|c: char| !c.is_ascii_digit() && c != '.')
            .any(|t| t.split_once('.').is_some_and(|(_, f)| f.len() > 4));
        assert!(!long_fraction, "a raw float in a rule: {rule}");
    }
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
                q.first_token_ms = Some(q.dispatch_ms.get().unwrap() + 500.0).into();
                q.finish_ms = Some(q.dispatch_ms.get().unwrap() + 600.0).into();
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
        prompts: digests(),
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
        prompts: digests(),
        cells: vec![cell("B0", TestCell::B0, vec![many(1, 400, 0)]), bad],
    };
    let c = &analyze(&p, &input).cells[1];
    assert!(!c.valid);
    assert_eq!(c.decision.outcome, SuggestedOutcome::Invalid);
    assert!(
        c.paired.is_empty() && c.floors.is_empty() && c.goodput.is_empty() && c.latency.is_empty()
    );
    assert_eq!(c.goodput_total.mean, None);
    // Its requests stay visible as offered demand; nothing it answered is counted as a result.
    assert_eq!(c.requests.offered, 400);
    assert_eq!((c.requests.validated, c.requests.accepted), (None, None));
    assert_eq!(c.accepted_share, None);
    assert_eq!(
        c.decision.table_decision.as_deref(),
        Some("Mark invalid; do not manufacture a result")
    );
    assert!(c
        .decision
        .headline
        .contains("Mark invalid; do not manufacture a result"));
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
        prompts: digests(),
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
        prompts: digests(),
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
        prompts: digests(),
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
    assert_eq!(counts(&c, true).offered, 0);
    assert_eq!(accepted_share(&counts(&c, true)), None);
}

use crate::operating_point::OfferedLoad;
use crate::pairing::UnpairedReason;

fn reasons(c: &CellAnalysis) -> Vec<(&str, UnpairedReason)> {
    c.unpaired
        .iter()
        .map(|u| (u.key.as_str(), u.reason))
        .collect()
}

/// The same item id sent with another prompt (another corpus, preset or tokenizer made the same
/// id) is not a pair: it is left out of every paired row and named.
#[test]
fn the_same_item_id_with_another_prompt_is_not_a_pair_and_is_named() {
    let p = policy(SEGMENTS);
    let mut c1 = quality(2, &[false; 8]);
    // Items 0 and 1 were sent to C1 with other prompts (digests 900, 901).
    c1.requests[0].prompt = Some(900);
    c1.requests[1].prompt = Some(901);
    let input = StudyInput {
        items: items(),
        prompts: digests(),
        cells: vec![
            cell("B0", TestCell::B0, vec![quality(1, &[true; 8])]),
            cell("C1", TestCell::C1, vec![c1]),
        ],
    };
    let a = analyze(&p, &input);
    let c = &a.cells[1];
    let overall = c.paired.iter().find(|r| r.stratum == "overall").unwrap();
    assert_eq!(
        (overall.n, overall.b),
        (6, 6),
        "items 0 and 1 are not pairs"
    );
    assert_eq!(
        reasons(c),
        [
            // By item id.
            (items()[1].0.as_str(), UnpairedReason::PromptDiffers),
            (items()[0].0.as_str(), UnpairedReason::PromptDiffers),
        ]
    );
    assert!(
        c.unpaired[0].detail.contains("not the same prompt"),
        "{:?}",
        c.unpaired
    );
    assert!(c.unpaired[1].detail.contains(&digests()[900][..12]));
    // The floor counts C1's own answers, whatever B0 was sent.
    assert_eq!(c.floors[0].n, 4);
}

/// Items judged on one side only are listed; requests without an item id never pair, and are
/// counted per run.
#[test]
fn one_sided_items_and_requests_without_an_item_are_listed_never_dropped() {
    let p = policy(SEGMENTS);
    let mut b0 = quality(1, &[true; 8]);
    b0.requests.truncate(6);
    let mut c1 = quality(2, &[true; 8]);
    c1.requests.remove(0);
    // Two requests of C1 name no item, one of them judged all the same.
    c1.requests[0].item = None;
    c1.requests.push(req(
        9.0,
        Done,
        Some(9.0),
        Some(10.0),
        Some(11.0),
        10,
        2,
        None,
    ));
    let input = StudyInput {
        items: items(),
        prompts: digests(),
        cells: vec![
            cell("B0", TestCell::B0, vec![b0]),
            cell("C1", TestCell::C1, vec![c1]),
        ],
    };
    let a = analyze(&p, &input);
    let c = &a.cells[1];
    let overall = c.paired.iter().find(|r| r.stratum == "overall").unwrap();
    assert_eq!(overall.n, 4, "items 2..5");
    let ids = items();
    assert_eq!(
        reasons(c),
        [
            ("run 2", UnpairedReason::NoItemId),
            // The runs, then the items by id.
            (ids[1].0.as_str(), UnpairedReason::BaselineOnly),
            (ids[0].0.as_str(), UnpairedReason::BaselineOnly),
            (ids[7].0.as_str(), UnpairedReason::CandidateOnly),
            (ids[6].0.as_str(), UnpairedReason::CandidateOnly),
        ]
    );
    assert!(
        c.unpaired[0].detail.starts_with("2 requests of run 2"),
        "{:?}",
        c.unpaired[0]
    );
    // B0's own list names nothing: every B0 request had an item and a prompt.
    assert!(a.cells[0].unpaired.is_empty());
}

/// A run stored without prompt digests whose corpus could not be found does not pair: the
/// reason says so, per run and per item, with the loader's note.
#[test]
fn rows_without_a_prompt_digest_never_pair_and_the_reason_says_why() {
    let p = policy(SEGMENTS);
    let mut legacy = quality(2, &[true; 8]);
    for r in &mut legacy.requests {
        r.prompt = None;
    }
    legacy.prompt_note = Some("corpus abc not found".into());
    let input = StudyInput {
        items: items(),
        prompts: digests(),
        cells: vec![
            cell("B0", TestCell::B0, vec![quality(1, &[true; 8])]),
            cell("C1", TestCell::C1, vec![legacy]),
        ],
    };
    let a = analyze(&p, &input);
    let c = &a.cells[1];
    assert_eq!(
        c.paired.iter().find(|r| r.stratum == "overall").unwrap().n,
        0
    );
    assert_eq!(c.unpaired[0].key, "run 2");
    assert_eq!(c.unpaired[0].reason, UnpairedReason::PromptUnknown);
    assert!(c.unpaired[0].detail.contains("corpus abc not found"));
    assert_eq!(
        c.unpaired.len(),
        9,
        "the run, then each of B0's eight items"
    );
    assert!(c.unpaired[1..]
        .iter()
        .all(|u| u.reason == UnpairedReason::PromptUnknown));
}

/// A candidate run over another corpus than its manifest's evaluation corpus is flagged, and
/// its foreign items (other ids, or the same ids with other prompts) are not paired.
#[test]
fn a_candidate_run_over_another_corpus_is_flagged_and_its_foreign_items_not_paired() {
    let p = policy(SEGMENTS);
    let frozen = "e".repeat(64);
    let mut b0_run = quality(1, &[true; 8]);
    b0_run.corpus_sha256 = Some(frozen.clone());
    let mut foreign = quality(2, &[false; 8]);
    foreign.corpus_sha256 = Some("f".repeat(64));
    for r in &mut foreign.requests {
        r.prompt = r.prompt.map(|p| p + 500);
    }
    let mut b0 = cell("B0", TestCell::B0, vec![b0_run]);
    b0.evaluation_corpus_sha256 = Some(frozen.clone());
    let mut c1 = cell("C1", TestCell::C1, vec![foreign]);
    c1.evaluation_corpus_sha256 = Some(frozen.clone());
    let input = StudyInput {
        items: items(),
        prompts: digests(),
        cells: vec![b0, c1],
    };
    let a = analyze(&p, &input);
    assert!(a.cells[0].corpus_mismatches.is_empty());
    let c = &a.cells[1];
    assert_eq!(c.corpus_mismatches.len(), 1);
    let m = &c.corpus_mismatches[0];
    assert_eq!(
        (m.run, m.run_corpus_sha256.as_str()),
        (2, "f".repeat(64).as_str())
    );
    assert_eq!(m.manifest_corpus_sha256, frozen);
    assert_eq!(
        c.paired.iter().find(|r| r.stratum == "overall").unwrap().n,
        0
    );
    assert_eq!(c.unpaired.len(), 8);
    assert!(c
        .unpaired
        .iter()
        .all(|u| u.reason == UnpairedReason::PromptDiffers));
    // Not a regression shown, not a pass either: the gate has no pair to read.
    assert_ne!(c.decision.quality_qualifies, Some(true));
}

fn at_rate(run_id: i64, per_s: f64, good: usize) -> RunInput {
    let mut r = load(run_id, Vec::new());
    r.arrivals = RunArrivals {
        client_concurrency: None,
        offered: OfferedLoad::Rate { per_s },
        identity: Some(format!("poisson {per_s} /s, seed 1")),
    };
    r.requests = (0..10)
        .map(|i| {
            let t = i as f64 * 100.0;
            let late = if i < good { 0.0 } else { 500.0 };
            req(
                t,
                Done,
                Some(t),
                Some(t + 10.0 + late),
                Some(t + 50.0 + late),
                10,
                5,
                Some(true),
            )
        })
        .collect();
    r
}

/// Runs at two offered rates are two operating points, never repeats: the summary is at one
/// point and the other run is listed apart, not averaged in.
#[test]
fn two_rates_are_not_repeats() {
    let p = policy(SEGMENTS);
    let input = StudyInput {
        items: Vec::new(),
        prompts: Vec::new(),
        cells: vec![cell(
            "B0",
            TestCell::B0,
            vec![at_rate(1, 1.0, 10), at_rate(2, 2.0, 2), at_rate(3, 1.0, 8)],
        )],
    };
    let c = &analyze(&p, &input).cells[0];
    assert_eq!(
        c.operating_point.as_ref().unwrap().offered,
        OfferedLoad::Rate { per_s: 1.0 }
    );
    assert_eq!(c.operating_point.as_ref().unwrap().admission_limit, Some(8));
    let g = &c.goodput["short"];
    assert_eq!(g.repeats.n, 2, "runs 1 and 3 only");
    assert_eq!(g.good, 18);
    assert_eq!(g.runs.iter().map(|r| r.run_id).collect::<Vec<_>>(), [1, 3]);
    assert_eq!(c.other_points.len(), 1);
    assert_eq!(c.other_points[0].runs, [2]);
    assert_eq!(
        c.other_points[0].point.offered,
        OfferedLoad::Rate { per_s: 2.0 }
    );
}

/// A candidate is compared with B0 at a point both share, with B0's figures at that point:
/// B0's runs at another rate do not enter the comparison.
#[test]
fn a_candidate_is_compared_at_the_point_it_shares_with_b0() {
    let p = policy(SEGMENTS);
    let input = StudyInput {
        items: Vec::new(),
        prompts: Vec::new(),
        cells: vec![
            // B0's main point is 1 /s (two runs, good 2 of 10); it also ran at 2 /s (good 10).
            cell(
                "B0",
                TestCell::B0,
                vec![
                    at_rate(1, 1.0, 2),
                    at_rate(2, 1.0, 2),
                    at_rate(3, 2.0, 10),
                    at_rate(4, 2.0, 10),
                ],
            ),
            // C1 ran at 2 /s only, good 6 of 10: below B0 there, above B0 at 1 /s.
            cell(
                "C1",
                TestCell::C1,
                vec![at_rate(5, 2.0, 6), at_rate(6, 2.0, 6)],
            ),
        ],
    };
    let a = analyze(&p, &input);
    let c = &a.cells[1];
    let cmp = c.goodput_comparable.as_ref().unwrap();
    assert!(cmp.comparable, "{cmp:?}");
    assert_eq!(
        cmp.point.as_ref().unwrap().offered,
        OfferedLoad::Rate { per_s: 2.0 }
    );
    assert_eq!(
        c.decision.goodput_qualifies,
        Some(false),
        "{:?}",
        c.decision.rules
    );
    assert!(
        c.decision
            .rules
            .iter()
            .any(|r| r.contains("does not exceed B0's 1.00 good/s")),
        "{:?}",
        c.decision.rules
    );
}

/// Arrivals that differ (another trace, another seed) are not compared: shown side by side, and
/// the goodput gate stays undecided with the reason.
#[test]
fn arrival_traces_that_differ_are_not_compared() {
    let p = policy(SEGMENTS);
    let trace = |run_id, sha: char, good| {
        let mut r = at_rate(run_id, 1.0, good);
        let sha = sha.to_string().repeat(64);
        r.arrivals = RunArrivals {
            client_concurrency: None,
            offered: OfferedLoad::Trace {
                sha256: sha.clone(),
            },
            identity: Some(format!("arrival trace sha256 {sha}")),
        };
        r
    };
    let input = StudyInput {
        items: Vec::new(),
        prompts: Vec::new(),
        cells: vec![
            cell("B0", TestCell::B0, vec![trace(1, 'a', 2), trace(2, 'a', 2)]),
            cell(
                "C1",
                TestCell::C1,
                vec![trace(3, 'b', 10), trace(4, 'b', 10)],
            ),
        ],
    };
    let a = analyze(&p, &input);
    let c = &a.cells[1];
    let cmp = c.goodput_comparable.as_ref().unwrap();
    assert!(!cmp.comparable);
    assert!(
        cmp.reason
            .as_ref()
            .unwrap()
            .contains("no operating point in common"),
        "{cmp:?}"
    );
    assert_eq!(c.decision.goodput_qualifies, None);
    assert!(c
        .decision
        .rules
        .iter()
        .any(|r| r.starts_with("goodput not compared with B0")));
    assert_ne!(c.decision.outcome, SuggestedOutcome::Promote);
    // Both cells keep their own figures, side by side.
    assert!(c.goodput_total.mean.unwrap() > a.cells[0].goodput_total.mean.unwrap());

    // The same rate with another arrival seed: the same point, not the same arrivals.
    let mut other_seed = at_rate(6, 1.0, 10);
    other_seed.arrivals.identity = Some("poisson 1 /s, seed 2".into());
    let input = StudyInput {
        items: Vec::new(),
        prompts: Vec::new(),
        cells: vec![
            cell("B0", TestCell::B0, vec![at_rate(5, 1.0, 2)]),
            cell("C1", TestCell::C1, vec![other_seed]),
        ],
    };
    let cmp = analyze(&p, &input).cells[1]
        .goodput_comparable
        .clone()
        .unwrap();
    assert!(!cmp.comparable);
    assert!(cmp.reason.unwrap().contains("seed 2"));
}

/// Cells at different admission limits share no operating point.
#[test]
fn cells_at_different_admission_limits_are_not_compared() {
    let p = policy(SEGMENTS);
    let mut c1 = cell("C1", TestCell::C1, vec![at_rate(2, 1.0, 10)]);
    c1.admission_limit = Some(16);
    let input = StudyInput {
        items: Vec::new(),
        prompts: Vec::new(),
        cells: vec![cell("B0", TestCell::B0, vec![at_rate(1, 1.0, 2)]), c1],
    };
    let c = &analyze(&p, &input).cells[1];
    let cmp = c.goodput_comparable.as_ref().unwrap();
    assert!(!cmp.comparable);
    assert!(cmp
        .reason
        .as_ref()
        .unwrap()
        .contains("admission limits differ (B0 8, C1 16)"));
    assert_eq!(c.decision.goodput_qualifies, None);
}

/// The output-length stratum puts each pair in the class of B0's answer, so a candidate that
/// answers shorter does not move its pairs; it is a marginal row read last.
#[test]
fn the_output_length_stratum_follows_b0s_answer() {
    let p = policy(SEGMENTS);
    let mut b0 = quality(1, &[true; 8]);
    let mut c1 = quality(2, &[true, false, true, true, true, true, true, true]);
    for (i, r) in b0.requests.iter_mut().enumerate() {
        r.completion_tokens = if i < 2 {
            Some(300)
        } else if i == 7 {
            None
        } else {
            Some(20)
        }
        .into();
    }
    for r in &mut c1.requests {
        r.completion_tokens = Some(5).into();
    }
    let input = StudyInput {
        items: items(),
        prompts: digests(),
        cells: vec![
            cell("B0", TestCell::B0, vec![b0]),
            cell("C1", TestCell::C1, vec![c1]),
        ],
    };
    let c = &analyze(&p, &input).cells[1];
    let row = |name: &str| c.paired.iter().find(|r| r.stratum == name);
    let long = row("output_length=long").unwrap();
    assert_eq!((long.n, long.b, long.kind), (2, 1, StratumKind::Marginal));
    assert_eq!(row("output_length=short").unwrap().n, 5);
    assert_eq!(row("output_length=unknown").unwrap().n, 1);
    assert!(row("output_length=medium").is_none(), "no pair there");
    let last = *reading_order(&c.paired).last().unwrap();
    assert_eq!(c.paired[last].stratum, "output_length=unknown");
}

/// Two classes: short (≤ 100 input tokens) and long (≤ 1000).
fn two_class_policy() -> Policy {
    Policy::from_json_text(&format!(
        r#"{{"classes": [{{"name": "short", "max_input_tokens": 100,
                         "slo": {{"ttft_ms": 100, "itl_ms": 10, "e2e_ms": 1000}}}},
                        {{"name": "long", "max_input_tokens": 1000,
                         "slo": {{"ttft_ms": 100, "itl_ms": 10, "e2e_ms": 1000}}}}],
            "goodput": {{"interval_s": 10, "drain_s": 5}},
            "alpha": 0.05,
            "segments": {SEGMENTS}}}"#
    ))
    .unwrap()
}

/// A load run with `short` good requests of 10 input tokens and `long` of 500, every one good.
fn class_run(run_id: i64, short: usize, long: usize) -> RunInput {
    let mut requests = Vec::new();
    for (i, tokens) in std::iter::repeat_n(10, short)
        .chain(std::iter::repeat_n(500, long))
        .enumerate()
    {
        let t = i as f64 * 10.0;
        requests.push(req(
            t,
            Done,
            Some(t),
            Some(t + 10.0),
            Some(t + 20.0),
            tokens,
            2,
            Some(true),
        ));
    }
    load(run_id, requests)
}

fn gate<'a>(c: &'a CellAnalysis, class: &str) -> &'a ClassGate {
    c.decision
        .goodput_by_class
        .iter()
        .find(|g| g.class == class)
        .unwrap_or_else(|| panic!("{class}: {:?}", c.decision.goodput_by_class))
}

#[test]
fn a_class_loss_is_not_hidden_by_a_class_gain() {
    let p = two_class_policy();
    let input = StudyInput {
        items: Vec::new(),
        prompts: digests(),
        cells: vec![
            cell(
                "B0",
                TestCell::B0,
                vec![class_run(1, 10, 10), class_run(2, 11, 11)],
            ),
            // Short six times, long halved: the total is well above B0's, beyond variation.
            cell(
                "C2",
                TestCell::C2,
                vec![class_run(3, 60, 5), class_run(4, 61, 6)],
            ),
        ],
    };
    let a = analyze(&p, &input);
    let c = &a.cells[1];
    let (ct, bt) = (&c.goodput_total, &a.cells[0].goodput_total);
    assert!(
        ct.ci_low.unwrap() > bt.ci_high.unwrap(),
        "the total is better"
    );
    assert_eq!(gate(c, "short").status, GateStatus::Qualifies);
    assert_eq!(gate(c, "long").status, GateStatus::DoesNot);
    assert_eq!(c.decision.goodput_qualifies, Some(false));
    assert_ne!(c.decision.outcome, SuggestedOutcome::Promote);
    assert!(
        c.decision
            .rules
            .iter()
            .any(|r| r.contains("cell total") && r.contains("never gates")),
        "{:?}",
        c.decision.rules
    );
}

#[test]
fn every_class_must_qualify_and_an_unclassified_request_blocks_promote() {
    let p = two_class_policy();
    let better = || vec![class_run(3, 30, 30), class_run(4, 31, 31)];
    let b0 = || {
        cell(
            "B0",
            TestCell::B0,
            vec![class_run(1, 10, 10), class_run(2, 11, 11)],
        )
    };
    let input = StudyInput {
        items: Vec::new(),
        prompts: digests(),
        cells: vec![b0(), cell("C2", TestCell::C2, better())],
    };
    let c = &analyze(&p, &input).cells[1];
    assert!(c
        .decision
        .goodput_by_class
        .iter()
        .all(|g| g.status == GateStatus::Qualifies));
    assert_eq!(c.decision.goodput_qualifies, Some(true));
    // A request without its own token count takes its fixture item's: still classified.
    let mut runs = better();
    runs[0].requests[0].prompt_tokens = Tokens::ABSENT;
    runs[0].requests[0].item_input_tokens = Some(10).into();
    let input = StudyInput {
        items: Vec::new(),
        prompts: digests(),
        cells: vec![b0(), cell("C2", TestCell::C2, runs.clone())],
    };
    let c = &analyze(&p, &input).cells[1];
    assert_eq!(c.decision.goodput_qualifies, Some(true));
    assert!(!c.goodput.contains_key(UNCLASSIFIED));
    // One with neither stays unclassified, and blocks promote, named.
    runs[0].requests[0].item_input_tokens = Tokens::ABSENT;
    let input = StudyInput {
        items: Vec::new(),
        prompts: digests(),
        cells: vec![b0(), cell("C2", TestCell::C2, runs)],
    };
    let c = &analyze(&p, &input).cells[1];
    let u = gate(c, UNCLASSIFIED);
    assert_eq!(u.status, GateStatus::Undecided);
    assert!(u.reason.contains("block promote"), "{}", u.reason);
    assert_eq!(c.decision.goodput_qualifies, None);
    assert_ne!(c.decision.outcome, SuggestedOutcome::Promote);
}

#[test]
fn slo_only_goodput_never_qualifies_and_says_so() {
    let p = two_class_policy();
    let mut runs = vec![class_run(3, 30, 30), class_run(4, 31, 31)];
    for r in runs.iter_mut().flat_map(|r| &mut r.requests) {
        r.accepted = None;
    }
    let input = StudyInput {
        items: Vec::new(),
        prompts: digests(),
        cells: vec![
            cell(
                "B0",
                TestCell::B0,
                vec![class_run(1, 10, 10), class_run(2, 11, 11)],
            ),
            cell("C2", TestCell::C2, runs),
        ],
    };
    let c = &analyze(&p, &input).cells[1];
    assert!(c.goodput["short"].slo_only);
    for g in &c.decision.goodput_by_class {
        assert_eq!(g.status, GateStatus::Undecided, "{g:?}");
        assert!(g.reason.contains("SLO-only"), "{}", g.reason);
    }
    assert_eq!(c.decision.goodput_qualifies, None);
    assert_ne!(c.decision.outcome, SuggestedOutcome::Promote);
}

/// A candidate with one run at B0's rate and one at another rate has one repeat at the compared
/// point, not two: its goodput cannot qualify on the pair.
#[test]
fn two_rates_cannot_pass_as_repeats_that_qualify() {
    let p = policy(SEGMENTS);
    let input = StudyInput {
        items: Vec::new(),
        prompts: Vec::new(),
        cells: vec![
            cell(
                "B0",
                TestCell::B0,
                vec![at_rate(1, 1.0, 2), at_rate(2, 1.0, 3)],
            ),
            cell(
                "C2",
                TestCell::C2,
                vec![at_rate(3, 1.0, 10), at_rate(4, 2.0, 10)],
            ),
        ],
    };
    let c = &analyze(&p, &input).cells[1];
    assert_eq!(c.goodput["short"].repeats.n, 1);
    let g = gate(c, "short");
    assert_eq!(g.status, GateStatus::Undecided, "{g:?}");
    assert!(g.reason.contains("fewer than 2 repeats"), "{}", g.reason);
    assert_eq!(c.decision.goodput_qualifies, None);
}

/// B0 and a candidate whose quality and goodput both qualify (see the retain/promote test).
fn promotable(candidate: CellInput) -> StudyInput {
    let run = |id, k: usize| {
        let mut r = many(id, 400, 0);
        for (i, q) in r.requests.iter_mut().enumerate() {
            if i >= k {
                q.first_token_ms = Some(q.dispatch_ms.get().unwrap() + 500.0).into();
                q.finish_ms = Some(q.dispatch_ms.get().unwrap() + 600.0).into();
            }
        }
        r
    };
    let mut candidate = candidate;
    candidate.runs = vec![run(5, 300), run(6, 302)];
    StudyInput {
        items: many_items(400),
        prompts: digests(),
        cells: vec![
            cell("B0", TestCell::B0, vec![run(1, 100), run(2, 102)]),
            candidate,
        ],
    }
}

#[test]
fn a_weights_change_is_uncontrolled_until_a_named_intervention_accepts_it() {
    let p = policy(SEGMENTS);
    let held = cell("C2", TestCell::C2, Vec::new());
    let c = &analyze(&p, &promotable(held.clone())).cells[1];
    assert_eq!(
        c.decision.outcome,
        SuggestedOutcome::Promote,
        "{:?}",
        c.decision.rules
    );
    assert!(c.decision.uncontrolled_findings.is_empty());

    let mut changed = held;
    changed.manifest.as_mut().unwrap().weights_digest = format!("sha256:{}", "e".repeat(64));
    let c = &analyze(&p, &promotable(changed.clone())).cells[1];
    assert_eq!(c.decision.outcome, SuggestedOutcome::Uncontrolled);
    let f = &c.decision.uncontrolled_findings;
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(
        (f[0].against.as_str(), f[0].path.as_str()),
        ("B0", "weights_digest")
    );
    assert!(
        c.decision.headline.starts_with("uncontrolled comparison"),
        "{}",
        c.decision.headline
    );
    assert!(c.decision.headline.contains("`weights_digest`"));
    // The gates are still shown.
    assert_eq!(c.decision.goodput_qualifies, Some(true));

    // An intervention over other values accepts nothing.
    let mut stale = f[0].clone();
    stale.candidate_value = Some("\"sha256:other\"".into());
    let intervention = |accepts| Intervention {
        event: 7,
        by: "architect".into(),
        at: "2026-12-02T10:00:00Z".into(),
        why: "calibrated checkpoint adds KV scale tensors".into(),
        accepts,
    };
    let mut named = changed.clone();
    named.interventions.push(intervention(vec![stale]));
    let c = &analyze(&p, &promotable(named)).cells[1];
    assert_eq!(c.decision.outcome, SuggestedOutcome::Uncontrolled);

    // The named intervention that accepts it: controlled again, and the acceptance is shown.
    let finding = f[0].clone();
    let mut named = changed;
    named
        .interventions
        .push(intervention(vec![finding.clone()]));
    let c = &analyze(&p, &promotable(named)).cells[1];
    assert!(c.decision.uncontrolled_findings.is_empty());
    assert_eq!(c.decision.outcome, SuggestedOutcome::Promote);
    let a = &c.decision.accepted_findings;
    assert_eq!(a.len(), 1);
    assert_eq!((a[0].event, a[0].by.as_str()), (7, "architect"));
    assert_eq!(a[0].finding, finding);
    assert!(c
        .decision
        .rules
        .iter()
        .any(|r| r.contains("named intervention of architect")));
}

#[test]
fn c2_switching_the_backend_against_c1_is_uncontrolled() {
    let p = policy(SEGMENTS);
    let c1 = cell("C1", TestCell::C1, vec![many(9, 400, 0)]);
    let mut c2 = cell("C2", TestCell::C2, Vec::new());
    c2.manifest.as_mut().unwrap().attention_backend = "TRITON_ATTN".into();
    let mut input = promotable(c2);
    input.cells.push(c1);
    let a = analyze(&p, &input);
    let c = &a.cells[1];
    assert_eq!(c.decision.outcome, SuggestedOutcome::Uncontrolled);
    assert!(c
        .decision
        .uncontrolled_findings
        .iter()
        .any(|f| f.against == "C1" && f.path == "attention_backend"));
}

#[test]
fn an_invalid_b0_scores_no_candidate() {
    let p = policy(SEGMENTS);
    let mut b0 = cell("B0", TestCell::B0, vec![many(1, 400, 0), many(3, 400, 0)]);
    b0.invalid_reasons
        .push("invalid — compatibility evidence missing".into());
    let input = StudyInput {
        items: many_items(400),
        prompts: digests(),
        cells: vec![b0, cell("C1", TestCell::C1, vec![many(2, 400, 3)])],
    };
    let a = analyze(&p, &input);
    assert_eq!(a.noise_floor, None, "an invalid B0 has no noise floor");
    let b = &a.cells[0];
    assert_eq!(b.decision.outcome, SuggestedOutcome::Invalid);
    assert!(
        b.decision.headline.starts_with("baseline invalid"),
        "{}",
        b.decision.headline
    );
    assert_eq!((b.requests.validated, b.requests.accepted), (None, None));
    let c = &a.cells[1];
    assert_eq!(c.decision.outcome, SuggestedOutcome::BaselineInvalid);
    assert!(c.paired.is_empty() && c.unpaired.is_empty(), "no pair");
    assert_eq!(c.goodput_comparable, None);
    assert_eq!(c.decision.quality_qualifies, None);
    assert_eq!(c.decision.goodput_qualifies, None);
    assert!(c.decision.goodput_by_class.is_empty());
    assert!(
        c.decision.headline.starts_with("baseline invalid"),
        "{}",
        c.decision.headline
    );
    // A regression that would otherwise show is not manufactured either.
    assert!(!c.decision.rules.iter().any(|r| r.contains("inferior")));
}

#[test]
fn an_undecided_quality_gate_headlines_collect_more_evidence_with_the_pairs_needed() {
    let p = policy(SEGMENTS);
    let input = StudyInput {
        items: items(),
        prompts: digests(),
        cells: vec![
            cell("B0", TestCell::B0, vec![quality(1, &[true; 8])]),
            cell("C2", TestCell::C2, vec![quality(2, &[true; 8])]),
        ],
    };
    let c = &analyze(&p, &input).cells[1];
    assert_eq!(c.decision.quality_qualifies, None);
    assert_eq!(c.decision.outcome, SuggestedOutcome::CollectMoreEvidence);
    let needed = c.decision.pairs_needed.expect("the planner's figure");
    let row = c.paired.iter().find(|r| r.stratum == "de").unwrap();
    assert_eq!(
        needed,
        crate::stats::required_pairs(row.margin, 0.0, row.alpha, 0.8).unwrap()
    );
    assert!(needed > row.n);
    let h = &c.decision.headline;
    assert!(
        h.starts_with("collect more evidence — quality undecided"),
        "{h}"
    );
    assert!(h.contains(&format!("needs {needed} paired items")), "{h}");
    assert!(!h.contains("quality holds") && !h.contains("retain"), "{h}");
}

/// A study of cells whose runs carry no fixture items (goodput and envelope only).
fn runs_only(cells: Vec<CellInput>) -> StudyInput {
    StudyInput {
        items: Vec::new(),
        prompts: Vec::new(),
        cells,
    }
}

/// The one-class policy with an envelope bar and a cost rate.
fn envelope_policy(bar: f64) -> Policy {
    Policy::from_json_text(&format!(
        r#"{{"classes": [{{"name": "short", "max_input_tokens": 100,
                           "slo": {{"ttft_ms": 100, "itl_ms": 10, "e2e_ms": 1000}}}}],
            "goodput": {{"interval_s": 10, "drain_s": 5}},
            "alpha": 0.05,
            "segments": {SEGMENTS},
            "envelope": {{"min_good_share": {bar}}},
            "cost": {{"per_instance_hour": 4.0}}}}"#
    ))
    .unwrap()
}

fn points_of<'a>(c: &'a CellAnalysis, class: &str) -> Vec<&'a EnvelopePoint> {
    c.envelope.iter().filter(|p| p.class == class).collect()
}

/// Ten requests a run, `good` of them inside every SLO: good shares 1.0, 0.9 (twice: exactly the
/// bar) and 0.55 at 1, 2 and 4 requests/s. The knee is the boundary point, 2 /s.
#[test]
fn the_knee_is_the_highest_rate_whose_good_share_reaches_the_bar_even_exactly() {
    let p = envelope_policy(0.9);
    let runs = vec![
        at_rate(1, 4.0, 5),
        at_rate(2, 1.0, 10),
        at_rate(3, 2.0, 9),
        at_rate(4, 2.0, 9),
        at_rate(5, 4.0, 6),
    ];
    let input = runs_only(vec![cell("B0", TestCell::B0, runs)]);
    let c = &analyze(&p, &input).cells[0];
    let pts = points_of(c, "short");
    let rates: Vec<Option<f64>> = pts.iter().map(|p| p.offered_rps).collect();
    assert_eq!(rates, [Some(1.0), Some(2.0), Some(4.0)], "ordered by rate");
    let shares: Vec<Option<f64>> = pts.iter().map(|p| p.good_share).collect();
    assert_eq!(shares, [Some(1.0), Some(0.9), Some(0.55)]);
    assert_eq!(pts[1].repeats, 2);
    assert_eq!(pts[1].runs, [3, 4]);
    // Goodput: good ÷ the 10 s interval, per run; two runs at 2 /s give an interval.
    assert_eq!(pts[1].goodput_per_s.mean, Some(0.9));
    assert!(pts[1].goodput_per_s.ci_low.is_some());
    assert_eq!(pts[2].goodput_per_s.mean, Some(0.55));
    // One run at a point: no interval, never a made-up one.
    assert_eq!(pts[0].repeats, 1);
    assert_eq!(pts[0].goodput_per_s.ci_low, None);
    assert_eq!(c.knee_rps, Some(2.0));
    // A bar just above the boundary moves the knee down to 1 /s.
    let c = &analyze(&envelope_policy(0.91), &input).cells[0];
    assert_eq!(c.knee_rps, Some(1.0));
}

/// A point is inside the envelope only when every class is: the long class failing first
/// keeps the knee below the rate where the short class still holds.
#[test]
fn the_class_that_fails_first_sets_the_knee() {
    let mut p = two_class_policy();
    p.envelope = Some(crate::policy::EnvelopeRule {
        min_good_share: 0.9,
    });
    let at = |run_id, per_s, late_long: bool| {
        let mut r = class_run(run_id, 10, 10);
        r.arrivals = RunArrivals {
            client_concurrency: None,
            offered: OfferedLoad::Rate { per_s },
            identity: Some(format!("poisson {per_s} /s, seed 1")),
        };
        if late_long {
            for q in r
                .requests
                .iter_mut()
                .filter(|q| q.prompt_tokens.get() == Some(500))
            {
                q.first_token_ms = q.first_token_ms.get().map(|t| t + 500.0).into();
            }
        }
        r
    };
    let input = runs_only(vec![cell(
        "B0",
        TestCell::B0,
        vec![at(1, 1.0, false), at(2, 3.0, true)],
    )]);
    let c = &analyze(&p, &input).cells[0];
    let short = points_of(c, "short");
    let long = points_of(c, "long");
    assert_eq!(
        (short[1].good_share, long[1].good_share),
        (Some(1.0), Some(0.0))
    );
    assert_eq!(c.knee_rps, Some(1.0), "{:?}", c.envelope);
}

/// Without verdicts a point counts SLOs only: shown, labelled, never a knee. A point that
/// offered no rate (all at once) is shown and never a knee either.
#[test]
fn slo_only_and_rateless_points_are_shown_but_never_make_a_knee() {
    let p = envelope_policy(0.5);
    let mut slo_only = at_rate(1, 1.0, 10);
    for q in &mut slo_only.requests {
        q.accepted = None;
    }
    let mut all_at_once = at_rate(2, 1.0, 10);
    all_at_once.arrivals = RunArrivals {
        client_concurrency: None,
        offered: OfferedLoad::Unbounded,
        identity: None,
    };
    let input = runs_only(vec![cell("B0", TestCell::B0, vec![slo_only, all_at_once])]);
    let c = &analyze(&p, &input).cells[0];
    let pts = points_of(c, "short");
    assert_eq!(pts.len(), 2);
    assert!(pts[0].slo_only && pts[0].good_share == Some(1.0));
    assert_eq!(pts[1].offered_rps, None, "the rateless point comes last");
    assert_eq!(pts[1].offered, OfferedLoad::Unbounded);
    assert_eq!(c.knee_rps, None);
}

/// Cost per good response: wall time (first dispatch to last completion, every request sent
/// counted, a resent one too) × rate × instances ÷ good responses. Absent without a rate or
/// with nothing good, never 0.
#[test]
fn the_cost_per_good_response_counts_wall_time_of_every_request_and_instances() {
    let p = envelope_policy(0.9);
    // 10 requests, 100 ms apart, 50 ms each: the last ends at 950 ms; 8 good.
    let mut run = at_rate(1, 1.0, 8);
    // A resent request after them (the first attempt failed): its time is paid for.
    let mut resent = run.requests[0].clone();
    resent.status = Error;
    resent.planned_ms = 1000.0;
    resent.dispatch_ms = Some(1000.0).into();
    resent.first_token_ms = Ms::ABSENT;
    resent.finish_ms = Some(3600.0).into();
    run.requests.push(resent);
    let mut two_gpus = cell("B0", TestCell::B0, vec![run.clone()]);
    if let Some(m) = two_gpus.manifest.as_mut() {
        m.gpu_inventory[0].count = 2;
    }
    let input = runs_only(vec![two_gpus]);
    let pt = points_of(&analyze(&p, &input).cells[0], "short")[0].clone();
    // 3.6 s = 0.001 h × 4.0 per instance-hour × 2 instances ÷ 8 good.
    let want = 0.001 * 4.0 * 2.0 / 8.0;
    let got = pt.cost_per_good_response.unwrap();
    assert!((got - want).abs() < 1e-15, "{got} vs {want}");

    let mut none_good = run.clone();
    for q in &mut none_good.requests {
        q.accepted = Some(false);
    }
    let input = runs_only(vec![cell("B0", TestCell::B0, vec![none_good])]);
    let pt = points_of(&analyze(&p, &input).cells[0], "short")[0].clone();
    assert_eq!((pt.good, pt.cost_per_good_response), (0, None));

    let mut no_rate = p.clone();
    no_rate.cost = None;
    let input = runs_only(vec![cell("B0", TestCell::B0, vec![run])]);
    let pt = points_of(&analyze(&no_rate, &input).cells[0], "short")[0].clone();
    assert_eq!(pt.cost_per_good_response, None);
}

/// An invalid cell has no envelope: no figure is made for it.
#[test]
fn an_invalid_cell_has_no_envelope() {
    let p = envelope_policy(0.5);
    let mut bad = cell("C1", TestCell::C1, vec![at_rate(1, 1.0, 10)]);
    bad.invalid_reasons = vec!["no compatibility evidence".into()];
    let input = runs_only(vec![
        cell("B0", TestCell::B0, vec![at_rate(2, 1.0, 10)]),
        bad,
    ]);
    let a = analyze(&p, &input);
    assert_eq!(a.cells[0].envelope.len(), 1);
    assert!(a.cells[1].envelope.is_empty());
    assert_eq!(a.cells[1].knee_rps, None);
}

/// With a bar and a target load the goodput gate reads the envelope: at the target the
/// candidate inside the bar where B0 is not qualifies; a higher knee qualifies; the same
/// standing does not; a missing point is named.
#[test]
fn the_envelope_gate_compares_the_target_load_then_the_knee_and_names_a_missing_point() {
    let mut p = envelope_policy(0.9);
    p.target_offered_load_rps = Some(2.0);
    let study = |b0: Vec<RunInput>, c: Vec<RunInput>| {
        runs_only(vec![
            cell("B0", TestCell::B0, b0),
            cell("C2", TestCell::C2, c),
        ])
    };
    // At 2 /s B0 keeps 5 of 10 good in each of its two runs, C2 all 10: beyond repeat variation.
    let a = analyze(
        &p,
        &study(
            vec![at_rate(1, 1.0, 10), at_rate(2, 2.0, 5), at_rate(5, 2.0, 5)],
            vec![
                at_rate(3, 1.0, 10),
                at_rate(4, 2.0, 10),
                at_rate(6, 2.0, 10),
            ],
        ),
    );
    let g = gate(&a.cells[1], "short");
    assert_eq!(g.status, GateStatus::Qualifies, "{g:?}");
    assert!(
        g.reason.contains("100.0% good") && g.reason.contains("B0 has 50.0%"),
        "{}",
        g.reason
    );
    assert_eq!(
        (a.cells[0].knee_rps, a.cells[1].knee_rps),
        (Some(1.0), Some(2.0))
    );
    // The same side of the bar on the mean from runs that vary (C2 10 and 8 good: 90.0%, the
    // bar, inside a wide interval) or from one run a side: undecided, never a pass on the mean.
    for (b0, c2) in [
        (
            vec![at_rate(2, 2.0, 5), at_rate(5, 2.0, 5)],
            vec![at_rate(4, 2.0, 10), at_rate(6, 2.0, 8)],
        ),
        (vec![at_rate(2, 2.0, 5)], vec![at_rate(4, 2.0, 10)]),
    ] {
        let a = analyze(&p, &study(b0, c2));
        let g = gate(&a.cells[1], "short");
        assert_eq!(g.status, GateStatus::Undecided, "{g:?}");
        assert!(g.reason.contains("within repeat variation"), "{}", g.reason);
    }
    // Both inside the bar at 2 /s: the knee decides; C2's is higher (4 /s).
    let a = analyze(
        &p,
        &study(
            vec![at_rate(1, 2.0, 10), at_rate(2, 4.0, 5)],
            vec![at_rate(3, 2.0, 10), at_rate(4, 4.0, 10)],
        ),
    );
    let g = gate(&a.cells[1], "short");
    assert_eq!(g.status, GateStatus::Qualifies, "{g:?}");
    assert!(
        g.reason
            .starts_with("knee 4.00 req/s above B0's 2.00 req/s"),
        "{}",
        g.reason
    );
    // The same standing: does not qualify.
    let a = analyze(
        &p,
        &study(vec![at_rate(1, 2.0, 10)], vec![at_rate(3, 2.0, 10)]),
    );
    let g = gate(&a.cells[1], "short");
    assert_eq!(g.status, GateStatus::DoesNot, "{g:?}");
    assert_eq!(a.cells[1].decision.goodput_qualifies, Some(false));
    // Other arrivals at the target (another seed): not compared, whatever the shares.
    let mut other_seed = at_rate(4, 2.0, 10);
    other_seed.arrivals.identity = Some("poisson 2 /s, seed 2".into());
    let a = analyze(&p, &study(vec![at_rate(1, 2.0, 5)], vec![other_seed]));
    let g = gate(&a.cells[1], "short");
    assert_eq!(g.status, GateStatus::Undecided, "{g:?}");
    assert!(
        g.reason
            .starts_with("not compared with B0 at the target load"),
        "{}",
        g.reason
    );
    // No run at the target on the candidate's side: undecided, naming the point.
    let a = analyze(
        &p,
        &study(vec![at_rate(1, 2.0, 5)], vec![at_rate(3, 1.0, 10)]),
    );
    let g = gate(&a.cells[1], "short");
    assert_eq!(g.status, GateStatus::Undecided, "{g:?}");
    assert_eq!(
        g.reason,
        "no run of C2 at the target load 2.00 req/s: the envelope gate needs that point"
    );
}

/// A class with no request at the target on either side is undecided, named so: it never passes
/// for want of evidence.
#[test]
fn the_envelope_gate_names_a_class_without_requests_at_the_target() {
    let mut p = two_class_policy();
    p.envelope = Some(crate::policy::EnvelopeRule {
        min_good_share: 0.5,
    });
    p.target_offered_load_rps = Some(1.0);
    // Short requests only, at 1 /s (class_run's default arrivals), two runs a side.
    let a = analyze(
        &p,
        &runs_only(vec![
            cell(
                "B0",
                TestCell::B0,
                vec![class_run(1, 10, 0), class_run(2, 10, 0)],
            ),
            cell(
                "C2",
                TestCell::C2,
                vec![class_run(3, 10, 0), class_run(4, 10, 0)],
            ),
        ]),
    );
    let g = gate(&a.cells[1], "long");
    assert_eq!(g.status, GateStatus::Undecided, "{g:?}");
    assert_eq!(
        g.reason,
        "no request of this class at the target load 1.00 req/s on either side"
    );
    // The short class stands level with B0 (does not qualify), so the gate does not either.
    assert_eq!(gate(&a.cells[1], "short").status, GateStatus::DoesNot);
    assert_eq!(a.cells[1].decision.goodput_qualifies, Some(false));
}

/// The one-class policy with the class's error and completion contracts.
fn contract_policy(max_error_rate: f64, min_completion_rate: f64) -> Policy {
    Policy::from_json_text(&format!(
        r#"{{"classes": [{{"name": "short", "max_input_tokens": 100,
                           "slo": {{"ttft_ms": 100, "itl_ms": 10, "e2e_ms": 1000}},
                           "max_error_rate": {max_error_rate},
                           "min_completion_rate": {min_completion_rate}}}],
            "goodput": {{"interval_s": 10, "drain_s": 5}},
            "alpha": 0.05,
            "segments": {SEGMENTS}}}"#
    ))
    .unwrap()
}

fn contract(c: &CellAnalysis, kind: ContractKind) -> &ContractCheck {
    c.contracts
        .iter()
        .find(|k| k.kind == kind)
        .unwrap_or_else(|| panic!("{kind:?}: {:?}", c.contracts))
}

/// Ten cohort requests: an error and a refusal are errors; a timeout is neither an error nor a
/// completion; a late `ok` is no completion; an `ok` whose answer was rejected is a completion
/// (completion is not quality). An error planned after the interval is outside the cohort.
#[test]
fn contracts_count_the_cohort_errors_refusals_and_completions_by_the_deadline() {
    let ok = |t: f64, accepted| {
        req(
            t,
            Done,
            Some(t),
            Some(t + 10.0),
            Some(t + 50.0),
            10,
            5,
            Some(accepted),
        )
    };
    let mut requests = vec![
        ok(0.0, true),
        ok(1000.0, false),
        req(2000.0, Error, Some(2000.0), None, None, 10, 0, None),
        req(
            3000.0,
            RequestStatus::Rejected,
            Some(3000.0),
            None,
            None,
            10,
            0,
            None,
        ),
        req(4000.0, Timeout, Some(4000.0), None, None, 10, 0, None),
        req(
            5000.0,
            Done,
            Some(5000.0),
            Some(5010.0),
            Some(20_000.0),
            10,
            5,
            Some(true),
        ),
    ];
    requests.extend((6..10).map(|i| ok(i as f64 * 1000.0, true)));
    requests.push(req(
        11_000.0,
        Error,
        Some(11_000.0),
        None,
        None,
        10,
        0,
        None,
    ));
    // 2 errors of 10: exactly the limit, met; 6 completions of 10 against 0.7: broken.
    let p = contract_policy(0.2, 0.7);
    let a = analyze(
        &p,
        &runs_only(vec![cell("B0", TestCell::B0, vec![load(1, requests)])]),
    );
    let c = &a.cells[0];
    let errors = contract(c, ContractKind::MaxErrorRate);
    assert_eq!((errors.count, errors.cohort), (2, 10));
    assert_eq!(errors.observed, Some(0.2));
    assert_eq!(errors.passes, Some(true), "at the limit is inside it");
    assert_eq!(errors.runs, [1]);
    let done = contract(c, ContractKind::MinCompletionRate);
    assert_eq!((done.count, done.cohort), (6, 10));
    assert_eq!(done.passes, Some(false));
    assert_eq!(
        done.describe(),
        "completion rate of class `short`: 60.0% (6 of 10) breaks the contract of at least 70.0% at 1 requests/s offered, admission limit 8"
    );
}

/// With a target load the contracts are read there, not at the point with more runs; a class
/// without a request at the point is undecided, never a pass.
#[test]
fn contracts_are_read_at_the_target_load_and_undecided_without_requests() {
    let with_errors = |run_id, per_s, errors: usize| {
        let mut r = at_rate(run_id, per_s, 10);
        for q in r.requests.iter_mut().take(errors) {
            q.status = Error;
        }
        r
    };
    let runs = vec![
        with_errors(1, 1.0, 0),
        with_errors(2, 1.0, 0),
        with_errors(3, 2.0, 3),
    ];
    let mut p = contract_policy(0.1, 0.5);
    let a = analyze(&p, &runs_only(vec![cell("B0", TestCell::B0, runs.clone())]));
    let e = contract(&a.cells[0], ContractKind::MaxErrorRate);
    assert_eq!(
        (e.count, e.cohort, e.passes),
        (0, 20, Some(true)),
        "summary point: 1 /s"
    );
    p.target_offered_load_rps = Some(2.0);
    let a = analyze(&p, &runs_only(vec![cell("B0", TestCell::B0, runs)]));
    let e = contract(&a.cells[0], ContractKind::MaxErrorRate);
    assert_eq!(
        (e.count, e.cohort, e.passes),
        (3, 10, Some(false)),
        "the target: 2 /s"
    );
    assert_eq!(
        e.point.as_ref().unwrap().offered,
        OfferedLoad::Rate { per_s: 2.0 }
    );

    let long_only = class_run(4, 0, 5);
    let a = analyze(
        &p,
        &runs_only(vec![cell("B0", TestCell::B0, vec![long_only])]),
    );
    let e = contract(&a.cells[0], ContractKind::MaxErrorRate);
    assert_eq!((e.cohort, e.observed, e.passes), (0, None, None));
    assert!(e.describe().contains("is undecided"), "{}", e.describe());
}

/// A candidate whose useful goodput beats B0's beyond repeat variation still does not qualify
/// when it breaks its class's error contract: the extra good responses come with errors.
#[test]
fn a_goodput_gain_with_a_broken_error_contract_does_not_qualify() {
    let with_errors = |run_id, good, errors: usize| {
        let mut r = class_run(run_id, good, 0);
        let n = r.requests.len();
        r.requests.extend((0..errors).map(|i| {
            let t = (n + i) as f64 * 10.0;
            req(t, Error, Some(t), None, None, 10, 0, None)
        }));
        r
    };
    let study = runs_only(vec![
        cell(
            "B0",
            TestCell::B0,
            vec![with_errors(1, 10, 0), with_errors(2, 11, 0)],
        ),
        cell(
            "C2",
            TestCell::C2,
            vec![with_errors(3, 30, 3), with_errors(4, 31, 3)],
        ),
    ]);
    // Without a contract (an error rate of 1 allows everything) the gain qualifies.
    let a = analyze(&contract_policy(1.0, 0.0), &study);
    assert_eq!(gate(&a.cells[1], "short").status, GateStatus::Qualifies);
    // 6 errors of 67 = 9.0 % against at most 5 %.
    let a = analyze(&contract_policy(0.05, 0.0), &study);
    let c = &a.cells[1];
    let g = gate(c, "short");
    assert_eq!(g.status, GateStatus::DoesNot, "{g:?}");
    assert!(
        g.reason.starts_with(
            "error rate of class `short`: 9.0% (6 of 67) breaks the contract of at most 5.0%"
        ),
        "{}",
        g.reason
    );
    assert_eq!(c.decision.goodput_qualifies, Some(false));
    assert_ne!(c.decision.outcome, SuggestedOutcome::Promote);
    assert!(c
        .decision
        .rules
        .iter()
        .any(|r| r.contains("error rate of class `short`")));
    // B0 meets its contract: 0 of 21.
    assert_eq!(
        contract(&a.cells[0], ContractKind::MaxErrorRate).passes,
        Some(true)
    );
}

/// Queueing is read per class from per-request figures only: every request's recorded client
/// delay, a failed one's too; a request without one is absent, not a zero. The engine's own
/// per-token time stays apart from the client's ITL, and is absent where the engine sent none.
#[test]
fn client_delay_and_engine_token_time_are_per_class_and_never_invented() {
    let mut run = class_run(1, 3, 2);
    let delays = [Some(10.0), Some(30.0), None, Some(400.0), None];
    for (q, d) in run.requests.iter_mut().zip(delays) {
        q.client_delay_ms = d.into();
    }
    run.requests[1].status = Error;
    run.requests[0].engine_itl_ms = Some(12.5).into();
    run.requests[1].engine_itl_ms = Some(99.0).into(); // failed: not an `ok` token time
    run.requests[2].engine_itl_ms = Some(14.5).into();
    let a = analyze(
        &two_class_policy(),
        &runs_only(vec![cell("B0", TestCell::B0, vec![run])]),
    );
    let short = &a.cells[0].latency["short"];
    assert_eq!(
        short.client_delay_ms.count, 2,
        "the failed request's delay counts"
    );
    assert_eq!(short.client_delay_ms.p50, Some(20.0));
    assert_eq!(short.engine_itl_ms.count, 2);
    assert_eq!(short.engine_itl_ms.p50, Some(13.5));
    assert_ne!(
        short.itl_ms.p50, short.engine_itl_ms.p50,
        "the client's ITL is its own"
    );
    let long = &a.cells[0].latency["long"];
    assert_eq!(
        (long.client_delay_ms.count, long.client_delay_ms.p50),
        (1, Some(400.0))
    );
    assert_eq!(
        (long.engine_itl_ms.count, long.engine_itl_ms.p50),
        (0, None)
    );
}

/// Latency against load: each point's percentiles are its own runs' `ok` requests only, never
/// pooled with another rate's; the policy's target load and bar travel with the analysis.
#[test]
fn each_envelope_point_has_the_latency_of_its_own_runs() {
    let mut p = envelope_policy(0.9);
    p.target_offered_load_rps = Some(2.0);
    let mut slow = at_rate(2, 2.0, 5);
    slow.requests[9].status = Error; // a late one, failed: no latency
    let a = analyze(
        &p,
        &runs_only(vec![cell(
            "B0",
            TestCell::B0,
            vec![at_rate(1, 1.0, 10), slow],
        )]),
    );
    let pts = points_of(&a.cells[0], "short");
    assert_eq!((pts[0].ttft_ms.count, pts[0].ttft_ms.p50), (10, Some(10.0)));
    assert_eq!(pts[0].e2e_ms.p99, Some(50.0));
    // 5 requests at 10 ms and 4 at 510 ms: the median is the fifth, 10 ms; p90 interpolates.
    assert_eq!((pts[1].ttft_ms.count, pts[1].ttft_ms.p50), (9, Some(10.0)));
    assert_eq!(pts[1].ttft_ms.p90, Some(510.0));
    assert_eq!(
        (a.target_offered_load_rps, a.min_good_share),
        (Some(2.0), Some(0.9))
    );
}

/// The share of a point's cohort within each SLO, whatever the verdict or the drain: a rejected
/// answer can still meet its TTFT; an ITL that does not apply (one output token) is met; an
/// error meets none; a late request misses end-to-end but may meet TTFT.
#[test]
fn the_envelope_gives_the_share_of_the_cohort_within_each_slo() {
    let mut r = at_rate(1, 1.0, 0);
    r.requests = vec![
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
        req(
            100.0,
            Done,
            Some(100.0),
            Some(150.0),
            Some(600.0),
            10,
            2,
            Some(false),
        ),
        req(
            200.0,
            Done,
            Some(200.0),
            Some(350.0),
            Some(700.0),
            10,
            1,
            Some(true),
        ),
        req(300.0, Error, Some(300.0), None, None, 10, 0, None),
        req(
            400.0,
            Done,
            Some(400.0),
            Some(450.0),
            Some(20_400.0),
            10,
            5,
            Some(true),
        ),
    ];
    let a = analyze(
        &envelope_policy(0.5),
        &runs_only(vec![cell("B0", TestCell::B0, vec![r])]),
    );
    let p = points_of(&a.cells[0], "short")[0];
    assert_eq!(p.cohort, 5);
    assert_eq!(p.slo_share.ttft, Some(0.6));
    assert_eq!(p.slo_share.itl, Some(0.4));
    assert_eq!(p.slo_share.e2e, Some(0.6));
    // A class that declares no ITL SLO has no share for it, not 0 and not 1.
    let mut policy = envelope_policy(0.5);
    policy.classes[0].slo.itl_ms = None;
    let a = analyze(
        &policy,
        &runs_only(vec![cell("B0", TestCell::B0, vec![at_rate(1, 1.0, 10)])]),
    );
    assert_eq!(points_of(&a.cells[0], "short")[0].slo_share.itl, None);
}

/// A run imported from a `vllm bench serve` result whose header is `header` (synthetic), with
/// ten requests of which `good` meet every SLO (see [`at_rate`]).
fn imported(run_id: i64, header: serde_json::Value, good: usize) -> RunInput {
    let mut r = at_rate(run_id, 1.0, good);
    let config = serde_json::json!({"import": {"format": "vllm_bench"}, "source_config": header});
    r.arrivals = RunArrivals::from_config(RunKind::Load, &config);
    r
}

/// An imported sweep: results at 1, 2 and 4 /s (good shares 1.0, 0.9, 0.6), a second 2 /s result
/// under a client cap of 2 (0.9), and an `inf` result (1.0). Bar 0.85: the knee is 2 /s, where
/// both caps pass; the capped 2 /s result is its own point, not a repeat of the uncapped one; the
/// `inf` result is shown with no rate and, though every request was good, never the knee.
#[test]
fn an_imported_sweep_lands_each_result_on_its_point_and_the_knee_reads_the_rates() {
    use serde_json::json;
    let p = envelope_policy(0.85);
    let runs = vec![
        imported(1, json!({"request_rate": 4.0, "max_concurrency": null}), 6),
        imported(2, json!({"request_rate": 1.0}), 10),
        imported(3, json!({"request_rate": 2.0, "max_concurrency": null}), 9),
        imported(4, json!({"request_rate": 2.0, "max_concurrency": 2}), 9),
        imported(5, json!({"request_rate": "inf", "max_concurrency": 2}), 10),
    ];
    let input = runs_only(vec![cell("B0", TestCell::B0, runs)]);
    let c = &analyze(&p, &input).cells[0];
    let pts = points_of(c, "short");
    let seen: Vec<(Option<f64>, Option<u32>, Vec<i64>)> = pts
        .iter()
        .map(|p| (p.offered_rps, p.client_concurrency, p.runs.clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (Some(1.0), None, vec![2]),
            (Some(2.0), None, vec![3]),
            (Some(2.0), Some(2), vec![4]),
            (Some(4.0), None, vec![1]),
            (None, Some(2), vec![5]),
        ],
        "two client caps at 2 /s are two points, one run each"
    );
    assert!(pts.iter().all(|p| p.repeats == 1));
    // The server's limit stays the manifest's (8), whatever the client capped.
    assert!(pts.iter().all(|p| p.admission_limit == Some(8)));
    assert_eq!(pts[4].offered, OfferedLoad::Unbounded);
    assert_eq!(pts[4].good_share, Some(1.0));
    assert_eq!(pts[3].good_share, Some(0.6));
    assert_eq!(c.knee_rps, Some(2.0));
    // The capped 2 /s point failing the bar (0.8 < 0.85) pulls the knee down to 1 /s: a rate
    // holds only when it holds under every cap it was measured at.
    let mut runs = input.cells[0].runs.clone();
    runs[3] = imported(4, json!({"request_rate": 2.0, "max_concurrency": 2}), 8);
    let input = runs_only(vec![cell("B0", TestCell::B0, runs)]);
    assert_eq!(analyze(&p, &input).cells[0].knee_rps, Some(1.0));
}

/// At the target load the envelope gate reads B0 under the candidate's client cap: B0's capped
/// 2 /s run (all 10 good, listed first) is another experiment than C2's uncapped runs, so C2's
/// 100 % is read against B0's uncapped 50 % and qualifies; read against the capped run it
/// would have been the same standing.
#[test]
fn the_envelope_gate_reads_b0_under_the_candidates_client_cap() {
    let mut p = envelope_policy(0.9);
    p.target_offered_load_rps = Some(2.0);
    let mut capped = at_rate(1, 2.0, 10);
    capped.arrivals.client_concurrency = Some(2);
    let input = runs_only(vec![
        cell(
            "B0",
            TestCell::B0,
            vec![capped, at_rate(2, 2.0, 5), at_rate(5, 2.0, 5)],
        ),
        cell(
            "C2",
            TestCell::C2,
            vec![at_rate(3, 2.0, 10), at_rate(4, 2.0, 10)],
        ),
    ]);
    let a = analyze(&p, &input);
    let b0_points: Vec<(Option<u32>, Vec<i64>)> = points_of(&a.cells[0], "short")
        .iter()
        .map(|p| (p.client_concurrency, p.runs.clone()))
        .collect();
    assert_eq!(b0_points, [(Some(2), vec![1]), (None, vec![2, 5])]);
    let g = gate(&a.cells[1], "short");
    assert_eq!(g.status, GateStatus::Qualifies, "{g:?}");
    assert!(g.reason.contains("B0 has 50.0%"), "{}", g.reason);
}

#[test]
fn an_absent_time_or_count_is_absent_in_its_compact_form() {
    assert_eq!(Ms::from(Some(12.5)).get(), Some(12.5));
    assert_eq!(
        Ms::from(Some(0.0)).get(),
        Some(0.0),
        "zero is a time, not absence"
    );
    assert_eq!(Ms::from(Some(-3.0)).get(), Some(-3.0));
    assert_eq!(Ms::from(None).get(), None);
    assert_eq!(
        Ms::from(Some(f64::NAN)).get(),
        None,
        "NaN is no measurement"
    );
    assert_eq!(Ms::from(None), Ms::ABSENT);
    assert_ne!(Ms::from(Some(0.0)), Ms::ABSENT);
    assert_eq!(Tokens::from(Some(0)).get(), Some(0));
    assert_eq!(Tokens::from(Some(4_294_967_294)).get(), Some(4_294_967_294));
    assert_eq!(
        Tokens::from(Some(4_294_967_295)).get(),
        None,
        "no request has 2^32 - 1 tokens"
    );
    assert_eq!(Tokens::from(Some(u64::MAX)).get(), None, "never wrapped");
    assert_eq!(Tokens::from(None).get(), None);
    // What the compact forms are for: a 1M-request study keeps a row per request.
    assert!(
        std::mem::size_of::<RequestRow>() <= 88,
        "{} bytes",
        std::mem::size_of::<RequestRow>()
    );
}

/// A team's prompts pair like generated ones; their labels are marginal strata of their own and
/// a segment selects them by label only: a fixture filter naming `language` does not catch a
/// team item labelled `language=de`, nor a label filter a generated German item.
#[test]
fn team_items_are_stratified_and_segmented_by_their_labels_only() {
    let p = policy(
        r#"[{"name": "team-de", "filter": {"labels": {"language": "de"}}, "floor": 0.5, "margin": 0.1, "protected": true},
            {"name": "team-de-contract", "filter": {"labels": {"language": "de", "task": "contract"}}, "margin": 0.1, "protected": false},
            {"name": "fixture-de", "filter": {"language": "de"}, "margin": 0.1, "protected": false}]"#,
    );
    let mut items = items();
    items.truncate(4); // generated: 0 and 1 German, 2 and 3 English
    for (i, labels) in [
        "context_length=≤1024,language=de,task=contract",
        "language=de,task=invoice",
        "language=en,task=contract",
        "language=de,task=contract",
    ]
    .iter()
    .enumerate()
    {
        items.push((format!("team:{labels}:t-{i}"), None));
    }
    let b0 = [true, true, true, true, true, true, true, true];
    let c1 = [false, true, true, true, false, false, true, true];
    let input = StudyInput {
        items,
        prompts: digests(),
        cells: vec![
            cell("B0", TestCell::B0, vec![quality(1, &b0)]),
            cell("C1", TestCell::C1, vec![quality(2, &c1)]),
        ],
    };
    let a = analyze(&p, &input);
    let c = &a.cells[1];
    let row = |name: &str| c.paired.iter().find(|r| r.stratum == name);
    let counts = |name: &str| row(name).map(|r| (r.n, r.b, r.c));
    // Team items 4, 5, 7 are German; C1 loses 4 and 5.
    assert_eq!(counts("team-de"), Some((3, 2, 0)));
    assert_eq!(counts("team-de-contract"), Some((2, 1, 0)));
    // Generated items 0 and 1 are German; C1 loses 0.
    assert_eq!(counts("fixture-de"), Some((2, 1, 0)));
    assert_eq!(counts("language=de"), Some((2, 1, 0)));
    assert_eq!(counts("label.language=de"), Some((3, 2, 0)));
    assert_eq!(counts("label.task=contract"), Some((3, 1, 0)));
    assert_eq!(counts("label.context_length=≤1024"), Some((1, 1, 0)));
    assert_eq!(counts("overall"), Some((8, 3, 0)));
    let f = c.floors.iter().find(|f| f.segment == "team-de").unwrap();
    assert_eq!((f.n, f.accepted), (3, 1));
    // A filter mixing labels with another kind's strata matches nothing, so it is refused.
    let mixed = Policy::from_json_text(
        r#"{"classes": [{"name": "short", "max_input_tokens": 100, "slo": {"ttft_ms": 100, "itl_ms": 10, "e2e_ms": 1000}}],
            "goodput": {"interval_s": 10, "drain_s": 5}, "alpha": 0.05,
            "segments": [{"name": "x", "filter": {"language": "de", "labels": {"language": "de"}}, "margin": 0.1, "protected": true},
                         {"name": "y", "filter": {"labels": {"Language": "de"}}, "margin": 0.1, "protected": true},
                         {"name": "z", "filter": {"labels": {}}, "margin": 0.1, "protected": true}]}"#,
    )
    .unwrap_err();
    let paths: Vec<String> = mixed.into_iter().map(|p| p.path).collect();
    assert_eq!(
        paths,
        [
            "segments[0].filter.labels",
            "segments[1].filter.labels.Language",
            "segments[2].filter.labels"
        ]
    );
}

/// The cells scored on two cores come back in the study's order, each from its own cell, for
/// every count of cells (none, one, even, odd).
#[test]
fn cells_scored_on_two_cores_keep_their_order() {
    for n in 0..=7usize {
        let items: Vec<usize> = (0..n).collect();
        let got = each_on_two_cores(&items, |i| (*i, std::thread::current().id()));
        let order: Vec<usize> = got.iter().map(|g| g.0).collect();
        assert_eq!(order, items, "{n} items");
        if n >= 2 {
            // Every other one on a second thread.
            assert_ne!(got[0].1, got[1].1);
            assert!(got.iter().step_by(2).all(|g| g.1 == got[0].1));
        }
    }
}
