//! Late interaction (ColBERT's MaxSim over the built-in encoder's token vectors) as a
//! reranking stage over the hybrid ranking, measured on the development set: the blend weight
//! and depth are chosen on conversations 1–3 and checked on 4–5 (the held-out half is not
//! here), and the time per query of encoding the candidates at search time is measured.

use super::ks_row;
use engram_embed::late::{
    content_vectors, content_words, max_sim, query_words, weighted_max_sim,
    weighted_max_sim_in_context,
};
use engram_embed::{Encoder, TokenVectors};
use engram_store::{Store, TermStats};
use engram_suite::locomo::{self, Ranked, Recall};
use std::collections::HashMap;
use std::time::Instant;

/// A reordering of question `i`'s ranking.
type Reorder<'a> = dyn Fn(usize, &Ranked) -> Vec<(String, f64)> + 'a;

/// Reorders `r.hybrid`'s first `depth` by `(1 − beta) · hybrid + beta · maxsim`; the rest
/// keeps its place below.
fn blended(
    r: &Ranked,
    maxsim: &dyn Fn(&str) -> f64,
    depth: usize,
    beta: f64,
) -> Vec<(String, f64)> {
    let mut head: Vec<(String, f64)> = r
        .hybrid
        .iter()
        .take(depth)
        .map(|(d, s)| (d.clone(), (1.0 - beta) * s + beta * maxsim(d)))
        .collect();
    head.sort_by(|a, b| b.1.total_cmp(&a.1));
    head.extend(r.hybrid.iter().skip(depth).cloned());
    head
}

/// Recall of `lists` overall, on the tune questions and on the check questions.
pub fn split_recall(lists: &[Ranked], tune: &[bool], ks: &[usize]) -> (Recall, Recall, Recall) {
    let all = locomo::recall_of(lists, ks, &|r| r.hybrid.clone());
    let part = |want: bool| {
        let sub: Vec<Ranked> = lists
            .iter()
            .zip(tune)
            .filter(|(_, t)| **t == want)
            .map(|(r, _)| Ranked {
                category: r.category,
                evidence: r.evidence.clone(),
                lexical: Vec::new(),
                vector: Vec::new(),
                hybrid: r.hybrid.clone(),
            })
            .collect();
        locomo::recall_of(&sub, ks, &|r| r.hybrid.clone())
    };
    (all, part(true), part(false))
}

/// Prints the late-interaction rows (see the module docs).
pub fn late_rows(
    encoder: &Encoder,
    store: &Store,
    agents: &[engram_core::AgentId],
    conversations: &[locomo::Conversation],
    ranked: &[Ranked],
    ks: &[usize],
) {
    let started = Instant::now();
    let mut turn_tokens: Vec<HashMap<&str, TokenVectors>> = Vec::new();
    for c in conversations {
        let texts: Vec<String> = c.turns.iter().map(|(_, t)| t.clone()).collect();
        let tv = encoder.token_vectors(&texts).expect("token vectors");
        turn_tokens.push(c.turns.iter().map(|(d, _)| d.as_str()).zip(tv).collect());
    }
    let questions: Vec<(usize, &str)> = conversations
        .iter()
        .enumerate()
        .flat_map(|(i, c)| c.questions.iter().map(move |q| (i, q.text.as_str())))
        .collect();
    let texts: Vec<String> = questions.iter().map(|(_, q)| q.to_string()).collect();
    let query_tokens = encoder.token_vectors(&texts).expect("token vectors");
    println!(
        "\nlate interaction (MaxSim over all-MiniLM-L6-v2 token vectors; token vectors of the \
         dev set in {:.0} s). Tune: conversations 1–3 ({} questions); check: 4–5.\n",
        started.elapsed().as_secs_f64(),
        questions.iter().filter(|(c, _)| *c < 3).count()
    );
    // MaxSim per question and candidate, over the deepest list tried, with the query's tokens
    // chosen by `pick` (its content tokens, or all of them).
    let sims_of = |pick: &dyn Fn(&TokenVectors) -> Vec<&[f32]>| -> Vec<HashMap<String, f64>> {
        ranked
            .iter()
            .zip(&questions)
            .zip(&query_tokens)
            .map(|((r, (c, _)), qt)| {
                let q = pick(qt);
                r.hybrid
                    .iter()
                    .take(50)
                    .map(|(d, _)| {
                        let p = &turn_tokens[*c][d.as_str()];
                        (d.clone(), f64::from(max_sim(&q, &p.vectors)))
                    })
                    .collect()
            })
            .collect()
    };
    let sims = sims_of(&|qt| content_vectors(qt));
    let sims_all = sims_of(&|qt| qt.vectors.iter().map(Vec::as_slice).collect());
    // IDF-weighted MaxSim: each word's pieces weighted by the word's BM25 IDF among the
    // conversation's passages, read from the agent's full-text index as search does; over the
    // content words (as shipped) or every word (stop words then weigh little by their IDF).
    type Words = for<'a> fn(&'a TokenVectors) -> Vec<(String, Vec<&'a [f32]>)>;
    // With `context`, a candidate's MaxSim is half its own and half that of it together with
    // the turns just before and after it (an answer often spans a question and its reply).
    let place: Vec<HashMap<&str, usize>> = conversations
        .iter()
        .map(|c| {
            c.turns
                .iter()
                .enumerate()
                .map(|(i, (d, _))| (d.as_str(), i))
                .collect()
        })
        .collect();
    let idf_sims = |words_of: Words, share: f64| -> Vec<HashMap<String, f64>> {
        let started = Instant::now();
        let weights: Vec<Vec<(Vec<f32>, f64)>> = query_tokens
            .iter()
            .zip(&questions)
            .map(|(qt, (c, _))| {
                let words = words_of(qt);
                let names: Vec<String> = words.iter().map(|(w, _)| w.clone()).collect();
                let stats: TermStats = store
                    .passage_term_stats(&agents[*c], &names)
                    .expect("stats");
                words
                    .iter()
                    .enumerate()
                    .flat_map(|(i, (_, pieces))| {
                        let idf = stats.idf(i);
                        pieces.iter().map(move |v| (v.to_vec(), idf))
                    })
                    .collect()
            })
            .collect();
        println!(
            "document frequencies of the questions' words: {:.2} ms per question",
            started.elapsed().as_secs_f64() * 1e3 / questions.len().max(1) as f64
        );
        ranked
            .iter()
            .zip(&questions)
            .zip(&weights)
            .map(|((r, (c, _)), w)| {
                let q: Vec<(&[f32], f64)> = w.iter().map(|(v, x)| (v.as_slice(), *x)).collect();
                r.hybrid
                    .iter()
                    .take(50)
                    .map(|(d, _)| {
                        let p = &turn_tokens[*c][d.as_str()];
                        if share == 0.0 {
                            return (d.clone(), f64::from(weighted_max_sim(&q, &p.vectors)));
                        }
                        // The turns just before and after it, as the store's
                        // `passage_neighbours` finds them in a conversation stored at once.
                        let at = place[*c][d.as_str()];
                        let turns = &conversations[*c].turns;
                        let around: Vec<&[Vec<f32>]> = [at.checked_sub(1), Some(at + 1)]
                            .into_iter()
                            .flatten()
                            .filter_map(|n| turns.get(n))
                            .map(|(nd, _)| turn_tokens[*c][nd.as_str()].vectors.as_slice())
                            .collect();
                        let sim = weighted_max_sim_in_context(&q, &p.vectors, &around, share);
                        (d.clone(), f64::from(sim))
                    })
                    .collect()
            })
            .collect()
    };
    let sims_idf = idf_sims(content_words, 0.0);
    let sims_idf_all = idf_sims(query_words, 0.0);
    // Shares of the score read with the neighbouring turns (the shipped one is
    // `engram_service::LATE_INTERACTION_CONTEXT_SHARE`).
    let in_context: Vec<(String, Vec<HashMap<String, f64>>)> = [0.3, 0.5, 0.7, 1.0]
        .into_iter()
        .map(|share| {
            (
                format!("IDF-weighted content words, {share} with the neighbouring turns"),
                idf_sims(content_words, share),
            )
        })
        .collect();
    println!();
    let is_tune: Vec<bool> = questions.iter().map(|(c, _)| *c < 3).collect();
    let measure = |pick: &Reorder| {
        let lists: Vec<Ranked> = ranked
            .iter()
            .enumerate()
            .map(|(i, r)| Ranked {
                category: r.category,
                evidence: r.evidence.clone(),
                lexical: Vec::new(),
                vector: Vec::new(),
                hybrid: pick(i, r),
            })
            .collect();
        split_recall(&lists, &is_tune, ks)
    };
    println!(
        "| reranking | recall@5 | recall@10 | tune@5 (conv. 1–3) | check@5 (conv. 4–5) | multi-hop@5 | temporal@5 | open-domain@5 | single-hop@5 | adversarial@5 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let (a, t, c) = measure(&|_, r| r.hybrid.clone());
    ks_row("hybrid (no reranking)", &a, &t, &c);
    let mut tables: Vec<(&str, &Vec<HashMap<String, f64>>)> = vec![
        ("IDF-weighted content words", &sims_idf),
        ("IDF-weighted, every word", &sims_idf_all),
    ];
    tables.extend(in_context.iter().map(|(name, t)| (name.as_str(), t)));
    tables.extend([("content tokens", &sims), ("all tokens", &sims_all)]);
    for (name, table) in tables {
        for depth in [20, 50] {
            for beta in [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0] {
                let (a, t, c) = measure(&|i, r| {
                    blended(r, &|d| table[i].get(d).copied().unwrap_or(0.0), depth, beta)
                });
                ks_row(
                    &format!("MaxSim ({name}) over the first {depth}, weight {beta}"),
                    &a,
                    &t,
                    &c,
                );
            }
        }
    }
    // What it costs at search time: the query, as many candidates as archival search reranks
    // and their neighbouring turns, each distinct text encoded once, token by token.
    let depth = engram_service::LATE_INTERACTION_DEPTH;
    let sample: Vec<usize> = (0..ranked.len()).step_by(20).collect();
    let mut encoded = 0;
    let started = Instant::now();
    for &i in &sample {
        let (c, q) = questions[i];
        let turns = &conversations[c].turns;
        let mut at: Vec<usize> = ranked[i]
            .hybrid
            .iter()
            .take(depth)
            .flat_map(|(d, _)| {
                let at = place[c][d.as_str()];
                [at.checked_sub(1), Some(at), Some(at + 1)]
            })
            .flatten()
            .filter(|&n| n < turns.len())
            .collect();
        at.sort_unstable();
        at.dedup();
        let mut texts = vec![q.to_string()];
        texts.extend(at.iter().map(|&n| turns[n].1.clone()));
        encoded += texts.len();
        std::hint::black_box(encoder.token_vectors(&texts).expect("token vectors"));
    }
    println!(
        "\nencoding a query, its {depth} candidates and their neighbouring turns token by token \
         ({:.0} distinct texts on average): {:.0} ms per query ({} queries)",
        encoded as f64 / sample.len() as f64,
        started.elapsed().as_secs_f64() * 1e3 / sample.len() as f64,
        sample.len()
    );
}
