//! Late interaction (ColBERT's MaxSim over the built-in encoder's token vectors) as a
//! reranking stage over the hybrid ranking, measured on the development set: the blend weight
//! and depth are chosen on conversations 1–3 and checked on 4–5 (the held-out half is not
//! here), and the time per query of encoding the candidates at search time is measured.

use super::ks_row;
use engram_embed::{Encoder, TokenVectors};
use engram_retrieval::late::maxsim::{
    content_vectors, content_words, max_sim, query_words, weighted_max_sim,
    weighted_max_sim_in_context,
};
use engram_retrieval::late::token_codes::{self, Code};
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
                took: Default::default(),
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
    // With a `share` above 0, a candidate's MaxSim is partly its own and `share` that of it
    // together with the `reach` turns before and after it (an answer often spans a question
    // and its reply, or a few turns).
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
    let idf_sims_over = |tokens: &Vec<HashMap<&str, TokenVectors>>,
                         words_of: Words,
                         share: f64,
                         reach: usize|
     -> Vec<HashMap<String, f64>> {
        let started = Instant::now();
        let weights: Vec<Vec<(Vec<f32>, f64)>> = query_tokens
            .iter()
            .zip(&questions)
            .map(|(qt, (c, _))| {
                let words = words_of(qt);
                let names: Vec<String> = words.iter().map(|(w, _)| w.clone()).collect();
                let stats: TermStats = store
                    .passages()
                    .term_stats(&agents[*c], &names)
                    .expect("stats");
                words
                    .iter()
                    .enumerate()
                    .flat_map(|(i, (_, pieces))| {
                        let idf = engram_retrieval::late::idf(&stats, i);
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
                        let p = &tokens[*c][d.as_str()];
                        if share == 0.0 {
                            return (d.clone(), f64::from(weighted_max_sim(&q, &p.vectors)));
                        }
                        // The turns around it, as the store's `passage_neighbours` finds
                        // them in a conversation stored at once.
                        let at = place[*c][d.as_str()];
                        let turns = &conversations[*c].turns;
                        let around: Vec<&[Vec<f32>]> = (1..=reach)
                            .flat_map(|k| [at.checked_sub(k), Some(at + k)])
                            .flatten()
                            .filter_map(|n| turns.get(n))
                            .map(|(nd, _)| tokens[*c][nd.as_str()].vectors.as_slice())
                            .collect();
                        let sim = weighted_max_sim_in_context(&q, &p.vectors, &around, share);
                        (d.clone(), f64::from(sim))
                    })
                    .collect()
            })
            .collect()
    };
    let idf_sims = |words_of: Words, share: f64, reach: usize| {
        idf_sims_over(&turn_tokens, words_of, share, reach)
    };
    let sims_idf = idf_sims(content_words, 0.0, 0);
    let sims_idf_all = idf_sims(query_words, 0.0, 0);
    // How many turns a side and what share of the score is read with them (the shipped ones
    // are `engram_retrieval::tuning::LATE_INTERACTION_NEIGHBOUR_REACH` and `…_CONTEXT_SHARE`).
    let in_context: Vec<(String, Vec<HashMap<String, f64>>)> = [
        (1, 0.5),
        (1, 0.7),
        (1, 1.0),
        (2, 0.5),
        (2, 0.7),
        (2, 0.85),
        (2, 1.0),
        (3, 0.7),
        (3, 0.85),
    ]
    .into_iter()
    .map(|(reach, share)| {
        (
            format!(
                "IDF-weighted content words, {share} with {reach} turn{} a side",
                if reach == 1 { "" } else { "s" }
            ),
            idf_sims(content_words, share, reach),
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
                took: Default::default(),
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
    // A table of MaxSim per question and candidate, with the depths and weights it is tried at.
    type Table<'a> = (
        &'a str,
        &'a Vec<HashMap<String, f64>>,
        &'a [usize],
        &'a [f64],
    );
    let mut tables: Vec<Table> = vec![
        ("content tokens", &sims, &[20, 50], &[0.3, 0.5, 0.7, 1.0]),
        ("all tokens", &sims_all, &[20, 50], &[0.3, 0.5, 0.7, 1.0]),
        (
            "IDF-weighted content words",
            &sims_idf,
            &[20, 50],
            &[0.4, 0.5, 0.6, 0.7, 0.8, 1.0],
        ),
        (
            "IDF-weighted, every word",
            &sims_idf_all,
            &[20, 50],
            &[0.5, 0.6, 0.7],
        ),
    ];
    tables.extend(
        in_context
            .iter()
            .map(|(name, t)| (name.as_str(), t, &[10, 15, 20][..], &[0.6, 0.7, 0.8][..])),
    );
    for (name, table, depths, betas) in tables {
        for &depth in depths {
            for &beta in betas {
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
    // The shipped setting over passage token vectors as stored (compressed, and optionally
    // without their stop-word and punctuation pieces), against the vectors as computed.
    let shipped = |name: &str, table: &Vec<HashMap<String, f64>>| {
        let (a, t, c) = measure(&|i, r| {
            blended(
                r,
                &|d| table[i].get(d).copied().unwrap_or(0.0),
                engram_retrieval::tuning::LATE_INTERACTION_DEPTH,
                engram_retrieval::tuning::LATE_INTERACTION_WEIGHT,
            )
        });
        ks_row(name, &a, &t, &c);
    };
    println!(
        "\nstored token vectors, shipped setting (bytes per passage: mean over the dev set):\n"
    );
    println!(
        "| passage token vectors | recall@5 | recall@10 | tune@5 (conv. 1–3) | check@5 (conv. 4–5) | multi-hop@5 | temporal@5 | open-domain@5 | single-hop@5 | adversarial@5 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let reach = engram_retrieval::tuning::LATE_INTERACTION_NEIGHBOUR_REACH;
    let share = engram_retrieval::tuning::LATE_INTERACTION_CONTEXT_SHARE;
    for content_only in [false, true] {
        for code in [None, Some(Code::I8), Some(Code::I4), Some(Code::Binary)] {
            let mut bytes = 0usize;
            let mut n = 0usize;
            let stored: Vec<HashMap<&str, TokenVectors>> = turn_tokens
                .iter()
                .map(|turns| {
                    turns
                        .iter()
                        .map(|(d, tv)| {
                            let kept = if content_only {
                                passage_content(tv)
                            } else {
                                tv.clone()
                            };
                            let vectors = match code {
                                None => {
                                    bytes += kept.vectors.len()
                                        * kept.vectors.first().map_or(0, |v| v.len() * 4);
                                    kept.vectors
                                }
                                Some(code) => {
                                    let blob = token_codes::encode(code, &kept.vectors);
                                    bytes += blob.len();
                                    token_codes::decode(&blob).expect("decode")
                                }
                            };
                            n += 1;
                            (
                                *d,
                                TokenVectors {
                                    tokens: kept.tokens,
                                    vectors,
                                },
                            )
                        })
                        .collect()
                })
                .collect();
            let table = idf_sims_over(&stored, content_words, share, reach);
            shipped(
                &format!(
                    "{}, {} ({:.0} B)",
                    code.map_or("f32".to_string(), |c| format!("{c:?}")),
                    if content_only {
                        "content pieces"
                    } else {
                        "every piece"
                    },
                    bytes as f64 / n.max(1) as f64
                ),
                &table,
            );
        }
    }
    // What it costs at search time: the query, as many candidates as archival search reranks
    // and the turns around them, each distinct text encoded once, token by token.
    let window = |i: usize, depth: usize, reach: usize| -> Vec<usize> {
        let c = questions[i].0;
        let turns = &conversations[c].turns;
        let mut at: Vec<usize> = ranked[i]
            .hybrid
            .iter()
            .take(depth)
            .flat_map(|(d, _)| {
                let at = place[c][d.as_str()];
                (at.saturating_sub(reach)..=at + reach).filter(|&n| n < turns.len())
            })
            .collect();
        at.sort_unstable();
        at.dedup();
        at
    };
    println!("\ndistinct turns encoded per search (query not counted):\n");
    println!("| turns a side | over 10 | over 15 | over 20 |\n|---|---|---|---|");
    for reach in 1..=3 {
        let mean = |depth| {
            (0..ranked.len())
                .map(|i| window(i, depth, reach).len())
                .sum::<usize>() as f64
                / ranked.len().max(1) as f64
        };
        println!(
            "| {reach} | {:.1} | {:.1} | {:.1} |",
            mean(10),
            mean(15),
            mean(20)
        );
    }
    let depth = engram_retrieval::tuning::LATE_INTERACTION_DEPTH;
    let reach = engram_retrieval::tuning::LATE_INTERACTION_NEIGHBOUR_REACH;
    let sample: Vec<usize> = (0..ranked.len()).step_by(20).collect();
    let mut encoded = 0;
    let started = Instant::now();
    for &i in &sample {
        let turns = &conversations[questions[i].0].turns;
        let mut texts = vec![questions[i].1.to_string()];
        texts.extend(window(i, depth, reach).iter().map(|&n| turns[n].1.clone()));
        encoded += texts.len();
        std::hint::black_box(encoder.token_vectors(&texts).expect("token vectors"));
    }
    println!(
        "\nencoding a query, its {depth} candidates and {reach} turns a side token by token \
         ({:.0} distinct texts on average): {:.0} ms per query ({} queries)",
        encoded as f64 / sample.len() as f64,
        started.elapsed().as_secs_f64() * 1e3 / sample.len() as f64,
        sample.len()
    );
}

/// A passage's word pieces without stop words and punctuation (continuations kept), as a
/// query's content words are chosen.
fn passage_content(tv: &TokenVectors) -> TokenVectors {
    let keep = |t: &str| {
        t.starts_with("##")
            || (t.chars().any(char::is_alphanumeric)
                && !engram_retrieval::late::maxsim::is_stop_word(t))
    };
    let (tokens, vectors) = tv
        .tokens
        .iter()
        .zip(&tv.vectors)
        .filter(|(t, _)| keep(t))
        .map(|(t, v)| (t.clone(), v.clone()))
        .unzip();
    TokenVectors { tokens, vectors }
}
