use std::process::{Command, Output};

use crate::{stderr, stdout};

/// Runs `kvgate` without a database: `stats` works on its arguments alone.
fn run(args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kvgate"))
        .args(args)
        .env_remove("KVGATE_DB")
        .env("KVGATE_DATA_DIR", dir.path())
        .output()
        .unwrap();
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "stats must not create a database"
    );
    out
}

#[test]
fn paired_prints_the_stats_as_json_and_as_a_table() {
    let out = run(&[
        "stats", "paired", "--b", "5", "--c", "3", "--n", "50", "--margin", "0.05", "--alpha",
        "0.05", "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (v["n"].as_u64(), v["b"].as_u64(), v["c"].as_u64()),
        (Some(50), Some(5), Some(3))
    );
    assert!((v["delta"].as_f64().unwrap() + 0.04).abs() < 1e-12);
    // statsmodels.stats.contingency_tables.mcnemar([[0, 5], [3, 0]], exact=True).pvalue
    //   = 0.7265625 (exact: 2 * 93 / 256)
    assert!((v["mcnemar_p"].as_f64().unwrap() - 0.7265625).abs() < 1e-12);
    // Tango's interval at 90% from the scratch-Python brentq reference in kvgate-core's stats
    // tests: tango(5, 3, 50, 0.9) = (-0.14351426884980722, 0.05945198131012757)
    assert!((v["ci_low"].as_f64().unwrap() + 0.14351426884980722).abs() < 1e-9);
    assert!((v["ci_high"].as_f64().unwrap() - 0.05945198131012757).abs() < 1e-9);
    assert!((v["level"].as_f64().unwrap() - 0.9).abs() < 1e-15);
    assert_eq!(v["verdict"], "collect_more_evidence");

    let out = run(&[
        "stats", "paired", "--b", "5", "--c", "3", "--n", "50", "--margin", "0.05", "--alpha",
        "0.05",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    for text in [
        "-0.0400",
        "0.7266",
        "[-0.1435, 0.0595]",
        "90%",
        "collect more evidence",
    ] {
        assert!(table.contains(text), "missing {text}: {table}");
    }
}

#[test]
fn paired_refuses_bad_input_with_the_field_named() {
    let out = run(&[
        "stats", "paired", "--b", "30", "--c", "30", "--n", "50", "--margin", "0.05", "--alpha",
        "0.05",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out)
            .contains("b + c: expected at most n = 50 discordant pairs, found 30 + 30 = 60"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty());

    let out = run(&[
        "stats", "paired", "--b", "1", "--c", "2", "--n", "50", "--margin", "0.05", "--alpha",
        "0.7", "--json",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("alpha: expected a number with 0 < alpha < 0.5, found 0.7"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn plan_says_how_many_pairs_a_margin_needs() {
    let out = run(&[
        "stats",
        "plan",
        "--margin",
        "0.02",
        "--discordance",
        "0.1",
        "--alpha",
        "0.025",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let expected = kvgate_app::domain::stats::required_pairs(0.02, 0.1, 0.025, 0.8).unwrap();
    assert_eq!(v["pairs"].as_u64(), Some(expected));
    // A narrower margin needs more pairs.
    let wide = kvgate_app::domain::stats::required_pairs(0.05, 0.1, 0.025, 0.8).unwrap();
    assert!(wide < expected, "{wide} vs {expected}");
    let out = run(&[
        "stats",
        "plan",
        "--margin",
        "0",
        "--discordance",
        "0.1",
        "--alpha",
        "0.025",
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("margin"), "{}", stderr(&out));
}
