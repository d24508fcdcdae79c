//! The evaluation report: a table on stdout and an SVG chart of recall@k.

use std::path::Path;

use serde_json::Value;

use super::metrics::KS;

/// LoCoMo paper, Table 3: DRAGON retriever over turns, all ten conversations.
const DRAGON: [(usize, f64); 4] = [(5, 0.567), (10, 0.662), (25, 0.767), (50, 0.827)];

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn methods(report: &Value) -> Vec<(&str, &Value)> {
    let mut out = vec![("default", report)];
    for name in ["bm25", "dense"] {
        out.push((name, &report["baselines"][name]));
    }
    out
}

fn row(label: &str, v: &Value) -> String {
    let mut s = format!("{label:<24}");
    for k in KS {
        s.push_str(&format!(" {:>6.3}", num(&v["recall"][k.to_string()])));
    }
    s.push_str(&format!(
        " {:>6.3} {:>7.3}",
        num(&v["mrr"]),
        num(&v["ndcg_at_10"])
    ));
    s
}

pub fn table(report: &Value, out_dir: Option<&Path>) {
    println!(
        "retrieval over {} conversations, {} questions (adversarial ones apart)",
        report["conversations"], report["questions"]
    );
    println!(
        "{:<24} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7}",
        "method", "R@1", "R@5", "R@10", "R@25", "R@50", "MRR", "NDCG@10"
    );
    for (name, v) in methods(report) {
        println!("{}", row(name, v));
    }
    // The paper's figure is LoCoMo's: another dataset has no anchor.
    if report["dataset"] == "locomo" {
        let mut dragon = format!("{:<24} {:>6}", "DRAGON (paper, 10 conv.)", "-");
        for (_, r) in DRAGON {
            dragon.push_str(&format!(" {r:>6.3}"));
        }
        println!("{dragon}");
    }
    println!("\nper category (default)");
    for (id, c) in report["per_category"].as_object().into_iter().flatten() {
        let label = match c["name"].as_str() {
            Some(name) if name != id => format!("{id} {name}"),
            _ => id.clone(),
        };
        let apart = if c["adversarial"] == true {
            ", not in the overall figures"
        } else {
            ""
        };
        println!("{}  (n={}{apart})", row(&label, c), c["questions"]);
    }
    let t = &report["context_tokens"];
    println!(
        "\nmean context tokens of the top k (default): k=5 {:.0}, k=10 {:.0}, k=25 {:.0}",
        num(&t["5"]),
        num(&t["10"]),
        num(&t["25"])
    );
    let l = &report["search_latency_ms"];
    println!(
        "search latency incl. query embedding: p50 {:.2} ms, p99 {:.2} ms \
         (embedding p50 {:.2} / p99 {:.2} ms, search of the top 50 p50 {:.2} / p99 {:.2} ms)",
        num(&l["p50"]),
        num(&l["p99"]),
        num(&l["embedding"]["p50"]),
        num(&l["embedding"]["p99"]),
        num(&l["search_top50"]["p50"]),
        num(&l["search_top50"]["p99"])
    );
    let s = &report["skipped"];
    println!(
        "evidence skipped: {} unparseable, {} naming no turn; {} questions without evidence excluded; {} over-long turns stored in pieces",
        s["unparseable_evidence"].as_array().map_or(0, Vec::len),
        s["unknown_evidence"].as_array().map_or(0, Vec::len),
        s["questions_without_evidence"],
        s["split_turns"]
    );
    println!("elapsed {:.1} s", num(&report["elapsed_s"]));
    if let Some(dir) = out_dir {
        println!("wrote {0}/eval.json and {0}/recall.svg", dir.display());
    }
}

/// Recall@k per method as lines over k (equally spaced), with the paper's anchor dashed.
pub fn chart(report: &Value) -> String {
    let (w, h, left, right, top, bottom) = (640.0, 400.0, 60.0, 170.0, 30.0, 50.0);
    let x = |i: usize| left + i as f64 * (w - left - right) / (KS.len() - 1) as f64;
    let y = |r: f64| top + (1.0 - r) * (h - top - bottom);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{left}\" y=\"18\" font-size=\"14\">recall@k of evidence turns (categories 1-4)</text>\n"
    );
    for t in 0..=5 {
        let r = t as f64 / 5.0;
        svg.push_str(&format!(
            "<line x1=\"{left}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"#ddd\"/><text x=\"{2}\" y=\"{3}\" text-anchor=\"end\">{r:.1}</text>\n",
            y(r),
            w - right,
            left - 6.0,
            y(r) + 4.0
        ));
    }
    for (i, k) in KS.iter().enumerate() {
        svg.push_str(&format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">k={k}</text>\n",
            x(i),
            h - bottom + 18.0
        ));
    }
    let colors = ["#d62728", "#1f77b4", "#2ca02c"];
    for (n, (name, v)) in methods(report).into_iter().enumerate() {
        let pts: Vec<String> = KS
            .iter()
            .enumerate()
            .map(|(i, k)| format!("{:.1},{:.1}", x(i), y(num(&v["recall"][k.to_string()]))))
            .collect();
        legend(
            &mut svg,
            w - right + 10.0,
            top + 20.0 * n as f64,
            colors[n],
            name,
            false,
        );
        svg.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
            colors[n],
            pts.join(" ")
        ));
    }
    if report["dataset"] != "locomo" {
        svg.push_str("</svg>\n");
        return svg;
    }
    let pts: Vec<String> = DRAGON
        .iter()
        .map(|(k, r)| {
            format!(
                "{:.1},{:.1}",
                x(KS.iter().position(|kk| kk == k).unwrap_or(0)),
                y(*r)
            )
        })
        .collect();
    svg.push_str(&format!(
        "<polyline fill=\"none\" stroke=\"#555\" stroke-dasharray=\"5,4\" points=\"{}\"/>\n",
        pts.join(" ")
    ));
    legend(
        &mut svg,
        w - right + 10.0,
        top + 60.0,
        "#555",
        "DRAGON (paper)",
        true,
    );
    svg.push_str("</svg>\n");
    svg
}

fn legend(svg: &mut String, x: f64, y: f64, color: &str, name: &str, dashed: bool) {
    let dash = if dashed {
        " stroke-dasharray=\"5,4\""
    } else {
        ""
    };
    svg.push_str(&format!(
        "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{color}\" stroke-width=\"2\"{dash}/><text x=\"{}\" y=\"{}\">{name}</text>\n",
        x + 24.0,
        x + 30.0,
        y + 4.0
    ));
}
