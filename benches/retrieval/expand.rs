//! Pseudo-relevance feedback (RM3-style query expansion, `engram_retrieval::expand`) measured
//! through the real search pipeline (`engram_retrieval::search_with`), on the
//! lexical and on the hybrid search, with the same tune (conversations 1–3) / check (4–5)
//! split as the late-interaction rows.

use super::ks_row;
use super::late::split_recall;
use engram_core::PassageHit;
use engram_retrieval::{Expansion, search_with};
use engram_store::PassageQuery;
use engram_suite::Home;
use engram_suite::locomo::{self, Ranked};

/// Ranks every question through the pipeline with `expansion`, by words alone or hybrid.
fn ranked(
    conversations: &[locomo::Conversation],
    embed: &dyn Fn(&[String]) -> Vec<Vec<f32>>,
    expansion: Expansion,
    hybrid: bool,
) -> Vec<Ranked> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let home = Home::new();
    locomo::rank_with(
        &home.engram,
        conversations,
        embed,
        &|store, agent, text, qv| {
            let q = PassageQuery {
                query: text.to_owned(),
                top_k: 10,
                embedding: hybrid.then_some(qv),
                ..PassageQuery::default()
            };
            let hits: Vec<PassageHit> = runtime
                .block_on(search_with(store, agent, &q, None, &expansion))
                .expect("search");
            hits
        },
    )
}

/// Prints the expansion rows.
pub fn expand_rows(
    conversations: &[locomo::Conversation],
    embed: &dyn Fn(&[String]) -> Vec<Vec<f32>>,
    ks: &[usize],
) {
    let tune: Vec<bool> = conversations
        .iter()
        .enumerate()
        .flat_map(|(i, c)| c.questions.iter().map(move |_| i < 3))
        .collect();
    println!("\npseudo-relevance feedback through the search pipeline:\n");
    println!(
        "| search | recall@5 | recall@10 | tune@5 (conv. 1–3) | check@5 (conv. 4–5) | multi-hop@5 | temporal@5 | open-domain@5 | single-hop@5 | adversarial@5 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for hybrid in [false, true] {
        let side = if hybrid { "hybrid" } else { "lexical" };
        let off = Expansion {
            weight: 0.0,
            feedback_hits: 5,
            terms: 10,
        };
        let mut configs = vec![off];
        for weight in [0.1, 0.2, 0.3, 0.4] {
            for (feedback_hits, terms) in [(3, 10), (5, 10), (10, 10), (5, 5), (5, 20)] {
                configs.push(Expansion {
                    weight,
                    feedback_hits,
                    terms,
                });
            }
        }
        for e in configs {
            let r = ranked(conversations, embed, e, hybrid);
            let (all, t, c) = split_recall(&r, &tune, ks);
            let name = if e.weight == 0.0 {
                format!("{side}, no expansion")
            } else {
                format!(
                    "{side} + feedback: weight {}, {} hits, {} terms",
                    e.weight, e.feedback_hits, e.terms
                )
            };
            ks_row(&name, &all, &t, &c);
        }
    }
}
