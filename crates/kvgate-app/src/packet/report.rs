//! `report.html`: the human-readable architecture-review report, one self-contained file (inline
//! style and charts, no script, no remote asset), printable. Every text from the study is
//! escaped: model output and names are data, never markup.

use std::fmt::Write as _;

use kvgate_core::display;
use kvgate_core::review::AuditEvent;
use serde_json::Value;

use crate::analysis::StudyAnalysis;
use crate::markup::escape;
use crate::signoff::Checklist;

/// What the report is drawn from.
pub struct ReportInput<'a> {
    pub analysis: &'a StudyAnalysis,
    /// Where the data comes from, one sentence per cell or source (stand-ins named as such).
    pub origin: &'a [String],
    /// Frozen manifests: cell, sha256, label.
    pub manifests: &'a [(String, String, String)],
    pub checklist: &'a Checklist,
    pub recovery: Option<&'a Value>,
    /// Label → count of the reviewers' current labels.
    pub labels: &'a [(String, u64)],
    pub representative: &'a [String],
    /// (caption, svg) drawn inline.
    pub charts: &'a [(String, String)],
    /// Every other file of the packet: path, sha256, size.
    pub files: &'a [(String, String, u64)],
}

fn decision_line(e: &AuditEvent) -> String {
    let overridden = if e.payload["overridden"] == true {
        let checks = e.payload["overridden_checks"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|o| {
                        format!(
                            "{} {}",
                            escape(o["check"].as_str().unwrap_or("?")),
                            escape(o["state"].as_str().unwrap_or("?"))
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        format!(
            " <span class=\"void\">OVERRIDE: recorded although checks were not signed over their current evidence ({checks})</span>"
        )
    } else {
        String::new()
    };
    format!(
        "{}: recorded <b>{}</b> by {} at {} (suggested {}){}{overridden}",
        escape(&e.subject),
        escape(e.payload["outcome"].as_str().unwrap_or("?")),
        escape(&e.actor),
        escape(&e.at),
        escape(e.payload["suggested"].as_str().unwrap_or("?")),
        match e.payload["rationale"].as_str() {
            Some(r) if !r.is_empty() => format!(" — {}", escape(r)),
            _ => String::new(),
        }
    )
}

/// How every report begins: its own policy forbids every script and every outside load, before
/// anything else of the document, so a report read in a browser runs and fetches nothing.
pub const REPORT_HEAD: &str = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
     <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n";

pub fn render(r: &ReportInput<'_>) -> String {
    let a = r.analysis;
    let mut h = String::from(REPORT_HEAD);
    let _ = write!(
        h,
        "<title>KV Gate architecture-review packet: {}</title>\n<style>\n\
         body{{font-family:sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#111;line-height:1.4}}\n\
         table{{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.85rem}}\n\
         th,td{{border:1px solid #bbb;padding:.2rem .45rem;text-align:left;vertical-align:top}}\n\
         th{{background:#eee}} td.n{{text-align:right;font-variant-numeric:tabular-nums}}\n\
         .origin{{border:2px solid #a0402a;background:#fff4ef;padding:.5rem 1rem}}\n\
         .void{{color:#b00020;font-weight:bold}} .ok{{color:#1b5e20}} code{{font-size:.8rem;word-break:break-all}}\n\
         svg{{max-width:100%;height:auto}} h2{{border-bottom:1px solid #ccc;margin-top:2rem}}\n\
         @media print{{body{{margin:0;max-width:none}} h2{{break-after:avoid}} table,svg{{break-inside:avoid}}}}\n\
         </style>\n</head>\n<body>\n",
        escape(&a.study_name)
    );
    let _ = write!(
        h,
        "<h1>Architecture review: {}</h1>\n<section class=\"origin\" id=\"origin\">\n<p><b>Data origin: {}</b></p>\n<ul>\n",
        escape(&a.study_name),
        escape(match a.provenance {
            kvgate_core::study::Provenance::User =>
                "a user study: the runs KV Gate recorded and the files imported into it",
            _ => &a.provenance_label,
        })
    );
    for o in r.origin {
        let _ = writeln!(h, "<li>{}</li>", escape(o));
    }
    let _ = write!(
        h,
        "</ul>\n<p>Measured requests: {}. Every figure below is taken from the hashed files of this \
         packet (listed at the end with their sha256); absent values are written \"absent\", never 0.</p>\n</section>\n",
        a.measured_requests
    );

    // Decisions first: what the review is asked to confirm.
    h.push_str("<h2 id=\"decision\">Decision</h2>\n<table><tr><th>cell</th><th>what the gates say</th><th>suggested</th><th>rules that fired</th><th>next experiment</th></tr>\n");
    for c in &a.body.cells {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td><b>{}</b></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&c.cell),
            escape(&c.decision.headline),
            escape(
                serde_json::to_value(c.decision.outcome)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .as_deref()
                    .unwrap_or("?")
            ),
            c.decision
                .rules
                .iter()
                .map(|s| escape(s))
                .collect::<Vec<_>>()
                .join("<br>"),
            c.decision
                .next_experiment
                .iter()
                .map(|s| escape(s))
                .collect::<Vec<_>>()
                .join("<br>")
        );
    }
    h.push_str("</table>\n<ul>\n");
    if r.checklist.decisions.is_empty() {
        h.push_str("<li>No decision recorded yet.</li>\n");
    }
    for d in &r.checklist.decisions {
        let _ = writeln!(h, "<li>{}</li>", decision_line(&d.event));
    }
    h.push_str("</ul>\n");

    // What could not be paired or compared, named before any figure that leaves it out.
    h.push_str("<h2 id=\"pairs\">Pairs, corpora and operating points</h2>\n<ul>\n");
    let mut said = false;
    for c in &a.body.cells {
        for m in &c.corpus_mismatches {
            said = true;
            let _ = writeln!(
                h,
                "<li class=\"void\">{}: run {} was sent corpus <code>{}</code>, not the manifest's evaluation corpus <code>{}</code></li>",
                escape(&c.cell),
                m.run,
                escape(&m.run_corpus_sha256),
                escape(&m.manifest_corpus_sha256)
            );
        }
        if !c.unpaired.is_empty() {
            said = true;
            let _ = writeln!(
                h,
                "<li>{}: {} left without a pair (listed with their reasons in <code>results/analysis.json</code>, <code>unpaired</code>)</li>",
                escape(&c.cell),
                c.unpaired.len()
            );
        }
        if let Some(reason) = c
            .goodput_comparable
            .as_ref()
            .filter(|g| !g.comparable)
            .and_then(|g| g.reason.as_deref())
        {
            said = true;
            let _ = writeln!(
                h,
                "<li>{}: goodput not compared with B0: {}</li>",
                escape(&c.cell),
                escape(reason)
            );
        }
        for other in &c.other_points {
            said = true;
            let _ = writeln!(
                h,
                "<li>{}: runs {:?} at another operating point ({}), not averaged in</li>",
                escape(&c.cell),
                other.runs,
                escape(&other.point.describe())
            );
        }
    }
    if !said {
        h.push_str("<li>Every judged item paired with B0 on the same prompt, every run over its manifest's evaluation corpus, every cell's goodput at one operating point.</li>\n");
    }
    h.push_str("</ul>\n");

    // Policy and limits.
    let _ = write!(
        h,
        "<h2 id=\"policy\">Acceptance policy and per-class limits</h2>\n<p>Locked version {} by {} at {}, sha256 <code>{}</code>.{}{}</p>\n\
         <p>Per-class SLOs, goodput window and segment floors and margins: <code>policy/limits.json</code>.</p>\n",
        a.policy_version,
        escape(&a.policy_locked_by),
        escape(&a.policy_locked_at),
        escape(&a.policy_sha256),
        if a.policy_changed_after_results {
            " <span class=\"void\">A version of this policy was locked after results existed.</span>"
        } else {
            ""
        },
        if a.policy_first_lock_after_results {
            " <span class=\"void\" id=\"policy-first-lock-after-results\">The policy was first locked after results existed: its floors were not set before results could be read.</span>"
        } else {
            ""
        }
    );

    // Manifests and compatibility.
    h.push_str("<h2 id=\"manifests\">Frozen serving manifests and compatibility</h2>\n<table><tr><th>cell</th><th>label</th><th>manifest sha256</th><th>valid</th><th>invalid because</th></tr>\n");
    for (cell, sha, label) in r.manifests {
        let c = a.body.cells.iter().find(|c| &c.cell == cell);
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
            escape(cell),
            escape(label),
            escape(sha),
            c.map_or("not analysed", |c| if c.valid {
                "valid"
            } else {
                "invalid"
            }),
            c.map(|c| c
                .invalid_reasons
                .iter()
                .map(|s| escape(s))
                .collect::<Vec<_>>()
                .join("<br>"))
                .unwrap_or_default()
        );
    }
    h.push_str("</table>\n");
    // Held constant, or named.
    h.push_str("<ul id=\"held-constant\">\n");
    if a.body.cells.iter().all(|c| {
        c.decision.uncontrolled_findings.is_empty() && c.decision.accepted_findings.is_empty()
    }) {
        h.push_str("<li>Every candidate holds constant what it must hold against B0.</li>\n");
    }
    for c in &a.body.cells {
        for f in &c.decision.uncontrolled_findings {
            let _ = writeln!(
                h,
                "<li class=\"void\">{}: uncontrolled comparison: <code>{}</code> differs from {} ({} → {}), accepted by no named intervention</li>",
                escape(&c.cell),
                escape(&f.path),
                escape(&f.against),
                escape(f.reference_value.as_deref().unwrap_or("absent")),
                escape(f.candidate_value.as_deref().unwrap_or("absent"))
            );
        }
        for f in &c.decision.accepted_findings {
            let _ = writeln!(
                h,
                "<li>{}: <code>{}</code> differs from {}: accepted by the named intervention of {} at {} (audit event {}): {}</li>",
                escape(&c.cell),
                escape(&f.finding.path),
                escape(&f.finding.against),
                escape(&f.by),
                escape(&f.at),
                f.event,
                escape(&f.why)
            );
        }
    }
    h.push_str("</ul>\n");

    // Quality.
    h.push_str("<h2 id=\"quality\">Paired quality against B0</h2>\n<table><tr><th>candidate</th><th>row</th><th>protected</th><th>n</th><th>B0 only</th><th>candidate only</th><th>Δ</th><th>interval</th><th>margin</th><th>McNemar p (Holm)</th><th>verdict</th></tr>\n");
    for c in &a.body.cells {
        for p in &c.paired {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{} at {}</td><td class=\"n\">{}</td><td class=\"n\">{} ({})</td><td>{}</td></tr>",
                escape(&c.cell),
                escape(&p.stratum),
                if p.protected { "yes" } else { "" },
                display::count(p.n),
                display::count(p.b),
                display::count(p.c),
                display::pp(p.delta),
                display::pp_interval(p.ci_low, p.ci_high),
                display::share(Some(p.level)),
                display::pp(Some(-p.margin)),
                display::p_value(Some(p.mcnemar_p)),
                display::p_value(p.mcnemar_p_holm),
                escape(
                    serde_json::to_value(p.verdict)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .as_deref()
                        .unwrap_or("?")
                )
            );
        }
    }
    h.push_str("</table>\n");
    if let Some(nf) = &a.body.noise_floor {
        let _ = writeln!(
            h,
            "<p>Noise floor (B0 against its own second pass): n={}, b={}, c={}, flip rate {}.</p>",
            nf.n, nf.b, nf.c, nf.flip_rate
        );
    }
    let _ = writeln!(
        h,
        "<p>Reviewers' labels: {} pair(s) adjudicated{}{}. Statistics on the blind labels: <code>results/paired.csv</code> (basis = adjudicated).</p>",
        a.adjudicated_labels,
        if a.adjudicated_unblinded_labels == 0 {
            String::new()
        } else {
            format!(
                ", of which <strong class=\"void\">{} relabelled after the reveal (unblinded)</strong>, counted apart (basis = adjudicated_unblinded)",
                a.adjudicated_unblinded_labels
            )
        },
        if r.labels.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                r.labels
                    .iter()
                    .map(|(l, n)| format!("{} {n}", escape(l)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    let _ = writeln!(
        h,
        "<p>Representative held-out requests with their answers ({}): <code>requests/representative.jsonl</code>.</p>",
        r.representative.len()
    );

    // Operations.
    h.push_str("<h2 id=\"operations\">Operations: requests, goodput, capacity</h2>\n<table><tr><th>cell</th><th>offered</th><th>completed</th><th>failed</th><th>refused</th><th>timeout</th><th>unfinished</th><th>accepted</th><th>useful goodput (repeats, 95% interval)</th><th>engine KV tokens</th><th>rollback fits</th></tr>\n");
    for c in &a.body.cells {
        let q = &c.requests;
        let g = &c.goodput_total;
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{} ({}, [{}, {}])</td><td class=\"n\">{}</td><td>{}</td></tr>",
            escape(&c.cell),
            display::count(q.offered),
            display::count(q.completed),
            display::count(q.failed),
            display::count(q.refused),
            display::count(q.timeout),
            display::count(q.unfinished),
            q.accepted
                .map_or_else(|| "absent (invalid cell)".to_owned(), display::count),
            display::rate(g.mean, "good/s"),
            display::count(g.n),
            display::rate(g.ci_low, "good/s"),
            display::rate(g.ci_high, "good/s"),
            c.capacity
                .engine_kv_tokens
                .map_or_else(|| "absent".to_owned(), display::count),
            match &c.capacity.rollback_fit {
                Some(f) if f.fits => "yes".to_owned(),
                Some(_) => "<span class=\"void\">no</span>".to_owned(),
                None => escape(c.capacity.model_note.as_deref().unwrap_or("unknown")),
            }
        );
    }
    h.push_str("</table>\n<p>Latency percentiles per class: <code>results/latency.csv</code>; goodput per class with every kind of miss: <code>results/goodput.csv</code>.</p>\n");
    let contracts: Vec<_> = a
        .body
        .cells
        .iter()
        .flat_map(|c| c.contracts.iter().map(move |k| (&c.cell, k)))
        .collect();
    if !contracts.is_empty() {
        h.push_str("<h3 id=\"contracts\">Error and completion contracts</h3>\n<ul>\n");
        for (cell, k) in contracts {
            let broken = k.passes == Some(false);
            let _ = writeln!(
                h,
                "<li{}>{}: {}</li>",
                if broken { " class=\"void\"" } else { "" },
                escape(cell),
                escape(&k.describe())
            );
        }
        h.push_str("</ul>\n");
    }

    // Recovery.
    h.push_str("<h2 id=\"recovery\">Recovery plan</h2>\n");
    match r.recovery.filter(|v| !v.is_null()) {
        None => h.push_str("<p class=\"void\">No recovery plan recorded.</p>\n"),
        Some(v) => {
            let p = &v["plan"];
            let _ = writeln!(
                h,
                "<p>Version {} recorded by {} at {} (sha256 <code>{}</code>): canary {} at {} %; breach: {}; drain deadline {} s; admission before restore: {}; rehearsal on {}: restart {}, cache loss {}, warm-up {}. {}</p>",
                v["version"],
                escape(v["recorded_by"].as_str().unwrap_or("?")),
                escape(v["recorded_at"].as_str().unwrap_or("?")),
                escape(v["sha256"].as_str().unwrap_or("?")),
                escape(p["canary"]["route"].as_str().unwrap_or("?")),
                p["canary"]["share_percent"],
                escape(p["breach_rule"].as_str().unwrap_or("?")),
                p["drain_deadline_s"],
                p.get("admission_before_restore")
                    .map_or_else(|| "not set".to_owned(), Value::to_string),
                escape(p["rehearsal"]["date"].as_str().unwrap_or("?")),
                escape(p["rehearsal"]["restart"].as_str().unwrap_or("?")),
                escape(p["rehearsal"]["cache_loss"].as_str().unwrap_or("?")),
                escape(p["rehearsal"]["warm_up"].as_str().unwrap_or("?")),
                escape(p["rehearsal"]["notes"].as_str().unwrap_or(""))
            );
        }
    }

    // Sign-offs.
    h.push_str("<h2 id=\"signoff\">Acceptance checklist</h2>\n<table><tr><th>check</th><th>evidence sha256 now</th><th>signature</th></tr>\n");
    for c in &r.checklist.checks {
        let sig = match (&c.signed, c.valid) {
            (None, _) => "not signed".to_owned(),
            (Some(e), true) => format!(
                "<span class=\"ok\">signed by {} at {}</span>{}",
                escape(&e.actor),
                escape(&e.at),
                match (e.payload["failures"].as_array(), c.signed_reason.as_deref()) {
                    (Some(f), r) if !f.is_empty() => format!(
                        " <span class=\"void\">signed over failures the evidence shows ({}); reason: {}</span>",
                        escape(
                            &f.iter()
                                .filter_map(|x| x.as_str())
                                .collect::<Vec<_>>()
                                .join("; ")
                        ),
                        escape(r.unwrap_or("?"))
                    ),
                    (_, Some(r)) => format!("; reason: {}", escape(r)),
                    _ => String::new(),
                }
            ),
            (Some(_), false) => format!(
                "<span class=\"void\">{}</span>",
                escape(c.void_reason.as_deref().unwrap_or("void"))
            ),
        };
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
            c.check().as_str(),
            escape(&c.evidence_sha256),
            sig
        );
    }
    h.push_str("</table>\n");

    // Charts.
    h.push_str("<h2 id=\"charts\">Charts</h2>\n");
    for (title, svg) in r.charts {
        let _ = writeln!(
            h,
            "<figure>\n{}<figcaption>{}</figcaption>\n</figure>",
            svg,
            escape(title)
        );
    }

    // Files.
    h.push_str("<h2 id=\"files\">Files of this packet</h2>\n<p><code>index.json</code> lists every file with its sha256 and size; <code>kvgate packet verify</code> checks them.</p>\n<table><tr><th>file</th><th>bytes</th><th>sha256</th></tr>\n");
    for (path, sha, size) in r.files {
        let _ = writeln!(
            h,
            "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td><code>{}</code></td></tr>",
            escape(path),
            size,
            escape(sha)
        );
    }
    h.push_str("</table>\n</body>\n</html>\n");
    h
}
