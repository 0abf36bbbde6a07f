//! Arrival plans are reproducible from their seed, have the asked-for rate, and trace files
//! are checked line by line.

use std::time::Duration;

use kvgate_runner::{parse_trace, quality_order, Arrivals, ScheduleError, TraceError};

const TEN_S: Duration = Duration::from_secs(10);

#[test]
fn same_seed_same_arrivals_other_seed_other_arrivals() {
    for arrivals in [
        Arrivals::Poisson {
            rate: 50.0,
            seed: 7,
        },
        Arrivals::Gamma {
            rate: 50.0,
            shape: 0.5,
            seed: 7,
        },
    ] {
        let a = arrivals.offsets_ms(TEN_S).unwrap();
        let b = arrivals.offsets_ms(TEN_S).unwrap();
        assert_eq!(a, b);
        let other = match arrivals {
            Arrivals::Poisson { rate, .. } => Arrivals::Poisson { rate, seed: 8 },
            Arrivals::Gamma { rate, shape, .. } => Arrivals::Gamma {
                rate,
                shape,
                seed: 8,
            },
            _ => unreachable!(),
        };
        assert_ne!(a, other.offsets_ms(TEN_S).unwrap());
    }
}

fn gaps(offsets: &[f64]) -> Vec<f64> {
    offsets.windows(2).map(|w| w[1] - w[0]).collect()
}

fn mean_cv(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    (mean, sd / mean)
}

#[test]
fn arrivals_have_the_planned_rate_and_burstiness() {
    let long = Duration::from_secs(1000);
    let poisson = Arrivals::Poisson {
        rate: 20.0,
        seed: 1,
    }
    .offsets_ms(long)
    .unwrap();
    let (mean, cv) = mean_cv(&gaps(&poisson));
    assert!(
        (mean - 50.0).abs() < 1.5 && (cv - 1.0).abs() < 0.03,
        "{mean} {cv}"
    );

    let bursty = Arrivals::Gamma {
        rate: 20.0,
        shape: 0.25,
        seed: 1,
    }
    .offsets_ms(long)
    .unwrap();
    let (mean, cv) = mean_cv(&gaps(&bursty));
    assert!(
        (mean - 50.0).abs() < 3.0 && (cv - 2.0).abs() < 0.15,
        "{mean} {cv}"
    );

    let constant = Arrivals::Constant { rate: 4.0 }
        .offsets_ms(Duration::from_secs(1))
        .unwrap();
    assert_eq!(constant, vec![0.0, 250.0, 500.0, 750.0]);
    for plan in [&poisson, &bursty] {
        assert!(plan.windows(2).all(|w| w[0] <= w[1]));
        assert!(plan.iter().all(|t| (0.0..1_000_000.0).contains(t)));
    }
}

#[test]
fn invalid_plans_are_refused_before_anything_is_sent() {
    assert_eq!(
        Arrivals::Constant { rate: 0.0 }.offsets_ms(TEN_S),
        Err(ScheduleError::Rate(0.0))
    );
    assert!(matches!(
        Arrivals::Gamma {
            rate: 1.0,
            shape: -1.0,
            seed: 0
        }
        .offsets_ms(TEN_S),
        Err(ScheduleError::Shape(_))
    ));
    assert!(matches!(
        Arrivals::Poisson { rate: 1e9, seed: 0 }.offsets_ms(TEN_S),
        Err(ScheduleError::TooManyArrivals { .. })
    ));
    let unsorted = Arrivals::Trace {
        offsets_ms: vec![0.0, 5.0, 4.0],
        sha256: "x".into(),
    };
    assert_eq!(
        unsorted.offsets_ms(TEN_S),
        Err(ScheduleError::TraceOffset {
            index: 2,
            found: 4.0
        })
    );
}

#[test]
fn trace_replay_keeps_offsets_inside_the_duration() {
    let trace = Arrivals::Trace {
        offsets_ms: vec![0.0, 10.0, 10.0, 999.9, 1000.0, 5000.0],
        sha256: "ab".into(),
    };
    assert_eq!(
        trace.offsets_ms(Duration::from_secs(1)).unwrap(),
        vec![0.0, 10.0, 10.0, 999.9]
    );
    let json = serde_json::to_value(&trace).unwrap();
    assert_eq!(json["kind"], "trace");
    assert_eq!(json["sha256"], "ab");
}

#[test]
fn traces_parse_from_lines_or_json_and_errors_name_the_line() {
    assert_eq!(
        parse_trace("# ms after start\n0\n\n12.5\n 12.5 \n40\n").unwrap(),
        vec![0.0, 12.5, 12.5, 40.0]
    );
    assert_eq!(parse_trace(" [0, 1.5, 3]").unwrap(), vec![0.0, 1.5, 3.0]);
    assert_eq!(
        parse_trace("0\n10\nten\n"),
        Err(TraceError::NotANumber {
            line: 3,
            found: "ten".into()
        })
    );
    let err = parse_trace("0\n10\n5\n").unwrap_err();
    assert_eq!(
        err,
        TraceError::Decreasing {
            line: 3,
            previous: 10.0,
            found: 5.0
        }
    );
    assert!(err.to_string().contains("line 3"), "{err}");
    assert!(matches!(
        parse_trace("1\n-2\n"),
        Err(TraceError::Negative { line: 2, .. })
    ));
    assert!(matches!(
        parse_trace("# nothing\n\n"),
        Err(TraceError::Empty)
    ));
    assert!(matches!(
        parse_trace("[0, 1,\n 2,]"),
        Err(TraceError::Json { line: 2, .. })
    ));
    assert!(matches!(
        parse_trace(r#"[0, "1"]"#),
        Err(TraceError::Element { element: 2, .. })
    ));
    assert!(matches!(
        parse_trace("[3, 1]"),
        Err(TraceError::ElementDecreasing { element: 2, .. })
    ));
}

#[test]
fn quality_order_is_seeded_complete_per_repeat() {
    let items: Vec<String> = (0..10).map(|i| format!("item-{i}")).collect();
    let order = quality_order(&items, 3, 42);
    assert_eq!(order, quality_order(&items, 3, 42));
    assert_ne!(order, quality_order(&items, 3, 43));
    assert_eq!(order.len(), 30);
    for repeat in 0..3 {
        let mut block: Vec<String> = order
            .iter()
            .filter(|(r, _)| *r == repeat)
            .map(|(_, id)| id.clone())
            .collect();
        assert_eq!(block.len(), 10);
        assert_eq!(&order[repeat as usize * 10].0, &repeat);
        block.sort();
        let mut expected = items.clone();
        expected.sort();
        assert_eq!(block, expected);
    }
    let firsts: Vec<&String> = (0..3).map(|r| &order[r * 10].1).collect();
    let blocks: Vec<Vec<&String>> = (0..3)
        .map(|r| {
            order[r * 10..r * 10 + 10]
                .iter()
                .map(|(_, id)| id)
                .collect()
        })
        .collect();
    assert!(
        blocks[0] != blocks[1] || blocks[1] != blocks[2],
        "{firsts:?}"
    );
    assert!(quality_order(&items, 0, 1).is_empty());
}

#[test]
fn arrival_specs_parse_as_the_shells_give_them() {
    use kvgate_runner::parse_arrivals;
    assert_eq!(
        parse_arrivals("poisson:2.5", 7),
        Ok(Arrivals::Poisson { rate: 2.5, seed: 7 })
    );
    assert_eq!(
        parse_arrivals("gamma:4:0.5", 1),
        Ok(Arrivals::Gamma {
            rate: 4.0,
            shape: 0.5,
            seed: 1
        })
    );
    assert_eq!(
        parse_arrivals("constant:1", 0),
        Ok(Arrivals::Constant { rate: 1.0 })
    );
    assert_eq!(
        parse_arrivals("poisson:-1", 0),
        Err("arrivals \"poisson:-1\": rate: expected a positive number, found \"-1\"".into())
    );
    assert!(parse_arrivals("burst:3", 0)
        .unwrap_err()
        .contains("found \"burst\""));
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.txt");
    std::fs::write(&trace, "0\n250\n500\n").unwrap();
    match parse_arrivals(&format!("trace:{}", trace.display()), 0).unwrap() {
        Arrivals::Trace { offsets_ms, sha256 } => {
            assert_eq!(offsets_ms, [0.0, 250.0, 500.0]);
            assert_eq!(sha256, kvgate_core::canonical::sha256_hex(b"0\n250\n500\n"));
        }
        other => panic!("{other:?}"),
    }
}
