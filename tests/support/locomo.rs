//! The LoCoMo retrieval development set (`../shared/eval/locomo-dev/`, see its README): every
//! dialog turn stored as one archival passage of a fresh agent, every question with evidence
//! searched, a hit when an evidence turn is among the top k.

use engram_core::{AgentId, NewAgent, NewPassage, TagMatch};
use engram_retrieval::HybridSearch;
use engram_service::Engram;
use engram_store::PassageQuery;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the development set lives, relative to the repository: `../shared/eval/locomo-dev`.
pub fn dev_set_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/eval/locomo-dev")
}

/// One conversation: its turns (`dia_id`, `"{speaker}: {text}"`) in order, and its questions.
pub struct Conversation {
    /// The file it came from.
    pub name: String,
    /// `(dia_id, passage text)`, session by session.
    pub turns: Vec<(String, String)>,
    /// Questions that name evidence turns.
    pub questions: Vec<Question>,
}

/// A benchmark question.
pub struct Question {
    /// The question text, searched as is.
    pub text: String,
    /// The `dia_id`s of the turns that hold the answer.
    pub evidence: Vec<String>,
    /// LoCoMo's question category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
    /// 5 adversarial).
    pub category: u64,
}

/// Reads every conversation of the set in `dir`, by file name; empty if `dir` is absent.
pub fn load(dir: &Path) -> Vec<Conversation> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
    files.retain(|p| p.extension().is_some_and(|e| e == "json"));
    files.sort();
    files.iter().map(|f| read(f)).collect()
}

fn read(file: &Path) -> Conversation {
    let text = std::fs::read_to_string(file).expect("read dev-set file");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("dev-set JSON");
    // The conversation is either the document itself or its `conversation` member.
    let conv = doc.get("conversation").unwrap_or(&doc);
    let mut sessions: Vec<(u64, &Vec<serde_json::Value>)> = conv
        .as_object()
        .expect("conversation object")
        .iter()
        .filter_map(|(k, v)| {
            let n = k.strip_prefix("session_")?.parse().ok()?;
            Some((n, v.as_array()?))
        })
        .collect();
    sessions.sort_by_key(|(n, _)| *n);
    let turns = sessions
        .into_iter()
        .flat_map(|(_, turns)| turns)
        .map(|t| {
            let field = |k: &str| t[k].as_str().unwrap_or_default().to_owned();
            (
                field("dia_id"),
                format!("{}: {}", field("speaker"), field("text")),
            )
        })
        .collect();
    let questions = doc["qa"]
        .as_array()
        .expect("qa list")
        .iter()
        .filter_map(|q| {
            let evidence: Vec<String> = q["evidence"]
                .as_array()?
                .iter()
                .filter_map(|e| e.as_str().map(str::to_owned))
                .collect();
            (!evidence.is_empty()).then(|| Question {
                text: q["question"].as_str().unwrap_or_default().to_owned(),
                evidence,
                category: q["category"].as_u64().unwrap_or(0),
            })
        })
        .collect();
    Conversation {
        name: file.file_name().unwrap().to_string_lossy().into_owned(),
        turns,
        questions,
    }
}

/// Evidence recall at several cut-offs, overall and per question category.
#[derive(Debug, Default)]
pub struct Recall {
    /// Questions searched.
    pub questions: usize,
    /// Hits at each cut-off `k` (a hit: an evidence turn among the top `k`).
    pub hits: BTreeMap<usize, usize>,
    /// Per category: questions and hits at each cut-off.
    pub by_category: BTreeMap<u64, (usize, BTreeMap<usize, usize>)>,
}

impl Recall {
    /// Hits at `k` over questions (0 when nothing was searched).
    pub fn at(&self, k: usize) -> f64 {
        ratio(self.hits.get(&k).copied().unwrap_or(0), self.questions)
    }

    /// Like [`at`](Self::at) for one category.
    pub fn category_at(&self, category: u64, k: usize) -> f64 {
        self.by_category.get(&category).map_or(0.0, |(n, hits)| {
            ratio(hits.get(&k).copied().unwrap_or(0), *n)
        })
    }
}

fn ratio(hits: usize, n: usize) -> f64 {
    if n == 0 { 0.0 } else { hits as f64 / n as f64 }
}

/// Stores each conversation's turns as passages of a fresh agent of `engram` and searches its
/// questions through the store's archival search, lexical only; counts hits at each of `ks`.
pub fn measure_lexical(engram: &Engram, conversations: &[Conversation], ks: &[usize]) -> Recall {
    let top_k = ks.iter().copied().max().unwrap_or(5);
    let store = engram.store();
    let mut recall = Recall::default();
    for conv in conversations {
        let agent = new_agent(engram, conv);
        let passages: Vec<NewPassage> = conv
            .turns
            .iter()
            .map(|(_, text)| NewPassage {
                text: text.clone(),
                ..NewPassage::default()
            })
            .collect();
        let stored = store.passages().insert(&agent, &passages).expect("insert");
        let dia_of: BTreeMap<_, _> = stored
            .iter()
            .zip(&conv.turns)
            .map(|(p, (dia, _))| (p.id.clone(), dia.as_str()))
            .collect();
        for q in &conv.questions {
            let hits = store
                .search_passages(
                    &agent,
                    &PassageQuery {
                        query: q.text.clone(),
                        tag_match: TagMatch::Any,
                        top_k,
                        ..PassageQuery::default()
                    },
                )
                .expect("search");
            let found: Vec<&str> = hits.iter().map(|h| dia_of[&h.passage.id]).collect();
            recall.questions += 1;
            let category = recall.by_category.entry(q.category).or_default();
            category.0 += 1;
            for &k in ks {
                let hit = found
                    .iter()
                    .take(k)
                    .any(|d| q.evidence.iter().any(|e| e == d));
                if hit {
                    *recall.hits.entry(k).or_default() += 1;
                    *category.1.entry(k).or_default() += 1;
                }
            }
        }
    }
    recall
}

/// One searched question with the rankings the retrievers gave it (evidence `dia_id`s first
/// to last), for trying fusions without searching again.
pub struct Ranked {
    /// LoCoMo's category.
    pub category: u64,
    /// The evidence turns.
    pub evidence: Vec<String>,
    /// Lexical ranking (`dia_id`s and scores, best first).
    pub lexical: Vec<(String, f64)>,
    /// Vector ranking (`dia_id`s and cosine similarities, best first).
    pub vector: Vec<(String, f64)>,
    /// The store's hybrid ranking (text and query vector together), best first.
    pub hybrid: Vec<(String, f64)>,
    /// How long the store took for each ranking ([`rank_both`] only; the query's vector was
    /// computed beforehand and is not counted).
    pub took: Took,
}

/// Time the store took per search, by variant.
#[derive(Clone, Copy, Debug, Default)]
pub struct Took {
    /// By words alone.
    pub lexical: std::time::Duration,
    /// By the query's vector alone.
    pub vector: std::time::Duration,
    /// Both, fused, as the store searches.
    pub hybrid: std::time::Duration,
}

impl Ranked {
    /// Whether an evidence turn is among the first `k` of `ranking`.
    pub fn hit(&self, ranking: &[(String, f64)], k: usize) -> bool {
        ranking
            .iter()
            .take(k)
            .any(|(d, _)| self.evidence.iter().any(|e| e == d))
    }
}

/// Evidence recall at each of `ks` of the ranking `pick` chooses, overall and per category.
pub fn recall_of(
    ranked: &[Ranked],
    ks: &[usize],
    pick: &dyn Fn(&Ranked) -> Vec<(String, f64)>,
) -> Recall {
    let mut recall = Recall::default();
    for r in ranked {
        let ranking = pick(r);
        recall.questions += 1;
        let category = recall.by_category.entry(r.category).or_default();
        category.0 += 1;
        for &k in ks {
            if r.hit(&ranking, k) {
                *recall.hits.entry(k).or_default() += 1;
                *category.1.entry(k).or_default() += 1;
            }
        }
    }
    recall
}

/// One conversation stored for searching: a fresh agent holding every turn as a passage with
/// its vector.
struct Loaded {
    agent: AgentId,
    /// Each turn's vector, keyed by `dia_id`.
    vector_of: BTreeMap<String, Vec<f32>>,
    /// The `dia_id` of each stored passage, by passage id.
    dia_of: BTreeMap<engram_core::PassageId, String>,
    /// One vector per question, in the conversation's order.
    question_vectors: Vec<Vec<f32>>,
}

/// A fresh agent for `conv`. Created on this thread (these measurements are synchronous and
/// may run beside a runtime of their own): creating one waits on the SQLite store alone.
fn new_agent(engram: &Engram, conv: &Conversation) -> AgentId {
    futures::executor::block_on(engram.agents().create(NewAgent {
        name: format!("LoCoMo {}", conv.name),
        ..NewAgent::default()
    }))
    .expect("create agent")
    .agent
    .id
}

/// Stores `conv`'s turns with their vectors (`embed` gives one per text) as passages of a
/// fresh agent, and embeds its questions.
fn load_conversation(
    engram: &Engram,
    conv: &Conversation,
    embed: &dyn Fn(&[String]) -> Vec<Vec<f32>>,
) -> Loaded {
    let agent = new_agent(engram, conv);
    let texts: Vec<String> = conv.turns.iter().map(|(_, t)| t.clone()).collect();
    let vectors = embed(&texts);
    let passages: Vec<NewPassage> = texts
        .into_iter()
        .zip(vectors.iter().cloned())
        .map(|(text, v)| NewPassage {
            text,
            embedding: Some(v),
            ..NewPassage::default()
        })
        .collect();
    let stored = engram
        .store()
        .passages()
        .insert(&agent, &passages)
        .expect("insert");
    let questions: Vec<String> = conv.questions.iter().map(|q| q.text.clone()).collect();
    Loaded {
        agent,
        vector_of: conv
            .turns
            .iter()
            .map(|(dia, _)| dia.clone())
            .zip(vectors)
            .collect(),
        dia_of: stored
            .iter()
            .zip(&conv.turns)
            .map(|(p, (dia, _))| (p.id.clone(), dia.clone()))
            .collect(),
        question_vectors: embed(&questions),
    }
}

/// Stores each conversation's turns with their vectors (`embed` gives one per text) as
/// passages of a fresh agent and ranks every question lexically, by vector alone and by the
/// store's hybrid search, `depth` deep.
pub fn rank_both(
    engram: &Engram,
    conversations: &[Conversation],
    depth: usize,
    embed: &dyn Fn(&[String]) -> Vec<Vec<f32>>,
) -> Vec<Ranked> {
    let store = engram.store();
    let mut out = Vec::new();
    for conv in conversations {
        let loaded = load_conversation(engram, conv, embed);
        for (q, qv) in conv.questions.iter().zip(&loaded.question_vectors) {
            let search = |query: &str, embedding: Option<Vec<f32>>| {
                store
                    .search_passages(
                        &loaded.agent,
                        &PassageQuery {
                            query: query.to_owned(),
                            top_k: depth,
                            embedding,
                            ..PassageQuery::default()
                        },
                    )
                    .expect("search")
                    .into_iter()
                    .map(|h| (loaded.dia_of[&h.passage.id].clone(), h.score))
                    .collect::<Vec<_>>()
            };
            let timed = |query: &str, embedding: Option<Vec<f32>>| {
                let started = std::time::Instant::now();
                let hits = search(query, embedding);
                (hits, started.elapsed())
            };
            let (lexical, lexical_took) = timed(&q.text, None);
            let (vector, vector_took) = timed("", Some(qv.clone()));
            let (hybrid, hybrid_took) = timed(&q.text, Some(qv.clone()));
            // The store's vector-only order, scored by the cosine itself (unit vectors).
            let vector = vector
                .into_iter()
                .map(|(dia, _)| {
                    let cos: f32 = loaded.vector_of[&dia]
                        .iter()
                        .zip(qv)
                        .map(|(a, b)| a * b)
                        .sum();
                    (dia, f64::from(cos))
                })
                .collect();
            out.push(Ranked {
                category: q.category,
                evidence: q.evidence.clone(),
                lexical,
                vector,
                hybrid,
                took: Took {
                    lexical: lexical_took,
                    vector: vector_took,
                    hybrid: hybrid_took,
                },
            });
        }
    }
    out
}

/// A search under test: the store, the agent, the question text and its vector → hits, best
/// first.
pub type PipelineSearch<'a> =
    dyn Fn(&engram_store::Store, &AgentId, &str, Vec<f32>) -> Vec<engram_core::PassageHit> + 'a;

/// Stores each conversation's turns with their vectors (`embed` gives one per text) as
/// passages of a fresh agent, like [`rank_both`], and ranks every question with `search`
/// (the store, the agent, the question text and its vector → hits, best first): the returned
/// rankings are in `hybrid`, the other two sides empty. For measuring a whole search pipeline
/// (`engram_retrieval::search_with`) rather than the store alone.
pub fn rank_with(
    engram: &Engram,
    conversations: &[Conversation],
    embed: &dyn Fn(&[String]) -> Vec<Vec<f32>>,
    search: &PipelineSearch<'_>,
) -> Vec<Ranked> {
    let mut out = Vec::new();
    for conv in conversations {
        let loaded = load_conversation(engram, conv, embed);
        for (q, qv) in conv
            .questions
            .iter()
            .zip(loaded.question_vectors.iter().cloned())
        {
            let hybrid = search(engram.store(), &loaded.agent, &q.text, qv)
                .into_iter()
                .map(|h| (loaded.dia_of[&h.passage.id].clone(), h.score))
                .collect();
            out.push(Ranked {
                category: q.category,
                evidence: q.evidence.clone(),
                lexical: Vec::new(),
                vector: Vec::new(),
                hybrid,
                took: Default::default(),
            });
        }
    }
    out
}

/// Stores each conversation like [`rank_both`] and ranks every question with the service's
/// archival search as the window runs it (`Archival::search`: the query embedded by
/// the agent's model, the store's hybrid ranking and the shipped reranking), `k` deep. The
/// rankings are in `hybrid`, the other two sides empty, with the time each search took. For
/// measuring what users get.
pub async fn rank_by_service(
    engram: &Engram,
    conversations: &[Conversation],
    embed: &dyn Fn(&[String]) -> Vec<Vec<f32>>,
    k: usize,
) -> (Vec<Ranked>, ServiceTimes) {
    let mut out = Vec::new();
    let mut times = ServiceTimes::default();
    for conv in conversations {
        let loaded = load_conversation(engram, conv, embed);
        // What a passage's write starts in the background (its token vectors), finished
        // before the questions, as in an app that has been open a moment.
        let started = std::time::Instant::now();
        let report = engram
            .archival()
            .backfill(&loaded.agent)
            .await
            .expect("backfill");
        times.backfill += started.elapsed();
        times.backfilled += report.embedded;
        for q in &conv.questions {
            let started = std::time::Instant::now();
            let hits = engram
                .archival()
                .search(
                    &loaded.agent,
                    &q.text,
                    vec![],
                    engram_core::TagMatch::Any,
                    (None, None),
                    k,
                )
                .await
                .expect("search");
            times.searches.push(started.elapsed());
            out.push(Ranked {
                category: q.category,
                evidence: q.evidence.clone(),
                lexical: Vec::new(),
                vector: Vec::new(),
                hybrid: hits
                    .into_iter()
                    .map(|h| (loaded.dia_of[&h.passage.id].clone(), h.score))
                    .collect(),
                took: Default::default(),
            });
        }
    }
    (out, times)
}

/// What [`rank_by_service`] spent: the background pass over the stored turns, and each
/// search.
#[derive(Debug, Default)]
pub struct ServiceTimes {
    /// Time the backfill of the turns took (token vectors), all conversations.
    pub backfill: std::time::Duration,
    /// Rows the backfill filled in.
    pub backfilled: u64,
    /// Each search's wall time, in question order.
    pub searches: Vec<std::time::Duration>,
}

/// The agent [`rank_both`] or [`rank_with`] stored `conv` in (the newest one of that
/// conversation's name), for reading its statistics afterwards.
pub fn agent_of(engram: &Engram, conv: &Conversation) -> AgentId {
    let name = format!("LoCoMo {}", conv.name);
    engram
        .store()
        .agents()
        .list()
        .expect("list agents")
        .into_iter()
        .filter(|a| a.name == name)
        .max_by_key(|a| a.created_at)
        .expect("the conversation's agent")
        .id
}
