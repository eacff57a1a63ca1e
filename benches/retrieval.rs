//! Retrieval quality on the LoCoMo development set, as a report: `cargo bench --bench retrieval`.
//!
//! Every dialog turn of `../shared/eval/locomo-dev/` becomes one archival passage of a fresh
//! agent (through the real store, in a temp data directory); every question with evidence is
//! searched; a hit is an evidence turn among the top k. Prints evidence recall@5 and @10,
//! overall and per question category, and the search latency on this corpus.

use engram_suite::Home;
use engram_suite::locomo::{self, Recall};
use std::time::Instant;

const CATEGORIES: [(u64, &str); 5] = [
    (1, "multi-hop"),
    (2, "temporal"),
    (3, "open-domain"),
    (4, "single-hop"),
    (5, "adversarial"),
];

fn main() {
    let dir = locomo::dev_set_dir();
    let conversations = locomo::load(&dir);
    if conversations.is_empty() {
        println!(
            "no development set at {}; nothing to measure",
            dir.display()
        );
        return;
    }
    let turns: usize = conversations.iter().map(|c| c.turns.len()).sum();
    let home = Home::new();
    let started = Instant::now();
    let recall: Recall = locomo::measure_lexical(&home.engram, &conversations, &[5, 10]);
    let elapsed = started.elapsed();

    println!(
        "LoCoMo development set: {} conversations, {turns} turns, {} questions\n",
        conversations.len(),
        recall.questions
    );
    println!("| retrieval | recall@5 | recall@10 |");
    println!("|---|---|---|");
    println!(
        "| lexical (BM25, stop words out, neighbour smoothing) | {:.3} | {:.3} |",
        recall.at(5),
        recall.at(10)
    );
    println!("\n| category | questions | lexical recall@5 | recall@10 |");
    println!("|---|---|---|---|");
    for (c, name) in CATEGORIES {
        let n = recall.by_category.get(&c).map_or(0, |(n, _)| *n);
        println!(
            "| {c} {name} | {n} | {:.3} | {:.3} |",
            recall.category_at(c, 5),
            recall.category_at(c, 10)
        );
    }
    println!(
        "\nstore + search of the whole set: {:.2} s ({:.2} ms per question, insert included)",
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e3 / recall.questions.max(1) as f64
    );
}
