//! Ranked search on PostgreSQL: the candidates of an archival or recall search (see
//! `engram_store_api::Candidates`) and the rows a ranking names.
//!
//! - Words: `ts_rank` over the `words` tsvector (normalisation 1: over 1 + log length), any of
//!   the query's words (`to_tsquery` of quoted lexemes joined by `|`: user text never reaches
//!   the tsquery parser as syntax).
//! - Neighbours: for each word hit, the row just before and just after it (by time then
//!   insertion order for passages, by `seq` for messages) passing the search's filters, within
//!   30 minutes of it — one statement for all hits, two index seeks each.
//! - Vectors: an exact cosine scan of the stored vectors of the query's dimension, in Rust
//!   (for messages, those of the agent's current embedding model: `message_vectors`).
//!
//! Row keys are `passages.pk` and `messages.seq`.

use crate::blocks::{self, Lock};
use crate::rows::{self, Cached, MESSAGE_COLS, PASSAGE_COLS};
use crate::tx::TxResult;
use deadpool_postgres::GenericClient;
use engram_core::{
    AgentId, Error, MessageHit, Passage, PassageHit, PassageId, Result, Role, TagMatch,
};
use engram_store_api::{
    Bm25, CandidateDepth, Candidates, MessageQuery, NeighbourMap, PassageQuery, QueryWords, Ranker,
    Ranking, query_words,
};
use std::collections::HashMap;
use tokio_postgres::Row;

/// How far a neighbour may lie from the hit it neighbours, in seconds.
const NEIGHBOUR_WINDOW_SECS: f64 = 30.0 * 60.0;

/// Roles searched when the query names none: everything people and tools said.
const DEFAULT_ROLES: [Role; 3] = [Role::User, Role::Assistant, Role::Tool];

/// Checks a query vector. Errors: `Invalid`.
fn check_query_vector(v: &[f32]) -> Result<()> {
    if v.is_empty() {
        return Err(Error::invalid(
            "a query embedding needs at least one dimension",
        ));
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Err(Error::invalid(
            "a query embedding must not contain NaN or infinity",
        ));
    }
    Ok(())
}

/// The archival filters on alias `a`: `$1` agent, `$2`..`$3` time range (either `NULL`), `$4`
/// tags (empty: none), `$5` whether superseded passages count.
fn passage_filters(a: &str, tag_match: TagMatch) -> String {
    let tags = match tag_match {
        TagMatch::Any => format!("{a}.tags && $4"),
        TagMatch::All => format!("{a}.tags @> $4"),
    };
    format!(
        "{a}.agent_id = $1 AND ($5 OR {a}.superseded_at IS NULL)
         AND ($2::timestamptz IS NULL OR {a}.created_at >= $2)
         AND ($3::timestamptz IS NULL OR {a}.created_at <= $3)
         AND (cardinality($4::text[]) = 0 OR {tags})"
    )
}

/// The recall filters on alias `a`: `$1` agent, `$2` roles, `$3`..`$4` time range.
fn message_filters(a: &str) -> String {
    format!(
        "{a}.agent_id = $1 AND {a}.role = ANY($2)
         AND {a}.kind NOT IN ('heartbeat', 'alert')
         AND ($3::timestamptz IS NULL OR {a}.created_at >= $3)
         AND ($4::timestamptz IS NULL OR {a}.created_at <= $4)"
    )
}

/// The cosine of `v` (norm `qnorm`) with a stored vector (little-endian `f32`s); `None` for a
/// vector of another dimension or of norm 0.
fn cosine(v: &[f32], qnorm: f32, bytes: &[u8]) -> Option<f64> {
    if bytes.len() != v.len() * 4 {
        return None;
    }
    let (mut dot, mut norm) = (0f32, 0f32);
    for (x, chunk) in v.iter().zip(bytes.chunks_exact(4)) {
        let y = f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        dot += x * y;
        norm += y * y;
    }
    (norm > 0.0).then(|| f64::from(dot / (qnorm * norm.sqrt())))
}

/// The `limit` rows of `found` (key, little-endian vector) nearest `v` (norm `qnorm`) by
/// cosine, best first; rows of another dimension are left out.
fn by_cosine(found: &[Row], v: &[f32], qnorm: f32, limit: usize) -> TxResult<Ranking> {
    let mut ranking = Ranking::with_capacity(found.len());
    for r in found {
        let bytes: &[u8] = r.try_get(1)?;
        if let Some(sim) = cosine(v, qnorm, bytes) {
            ranking.push((r.try_get(0)?, sim));
        }
    }
    best_first(&mut ranking, limit);
    Ok(ranking)
}

/// Best first; equal scores: the newer row (higher key) first, as the SQLite store orders them.
fn best_first(ranking: &mut Ranking, limit: usize) {
    ranking.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    ranking.truncate(limit);
}

/// Archival search's candidates, handed to `rank`; the passages of its ranking, in order.
pub(crate) async fn rank_passages(
    c: &impl GenericClient,
    agent: &AgentId,
    q: &PassageQuery,
    depth: CandidateDepth,
    rank: Ranker<'_>,
) -> Result<Vec<PassageHit>> {
    if let Some(v) = &q.embedding {
        check_query_vector(v)?;
    }
    blocks::ensure_agent(c, agent, Lock::None).await?;
    if q.top_k == 0 {
        return Ok(Vec::new());
    }
    let tags = rows::dedup_tags(&q.tags);
    let params = PassageParams {
        agent: agent.as_str(),
        q,
        tags: &tags,
    };
    let words = query_words(&q.query);
    let ranking = match (&q.embedding, &words) {
        (None, QueryWords::NoWords) => Vec::new(),
        (None, QueryWords::Blank) => newest_passages(c, &params, q.top_k).await?,
        (None, QueryWords::Words(w)) => rank(Candidates {
            lexical: Some(passage_words(c, &params, w, depth.lexical).await?),
            vector: None,
        }),
        (Some(v), words) => {
            let lexical = match words {
                QueryWords::Words(w) => Some(passage_words(c, &params, w, depth.lexical).await?),
                QueryWords::Blank | QueryWords::NoWords => None,
            };
            let vector = passage_vectors(c, &params, v, depth.vector).await?;
            rank(Candidates {
                lexical,
                vector: Some(vector),
            })
        }
    };
    let keys: Vec<i64> = ranking.iter().map(|(k, _)| *k).collect();
    let found = load_passages(c, &keys).await?;
    Ok(ranking
        .into_iter()
        // A row deleted since its key was read is simply not a hit.
        .filter_map(|(k, score)| {
            found.get(&k).map(|p| PassageHit {
                passage: p.clone(),
                score,
                context: false,
            })
        })
        .collect())
}

/// What every archival statement binds as `$1`..`$5`.
struct PassageParams<'a> {
    agent: &'a str,
    q: &'a PassageQuery,
    tags: &'a [String],
}

impl PassageParams<'_> {
    fn filters(&self, alias: &str) -> String {
        passage_filters(alias, self.q.tag_match)
    }
}

macro_rules! passage_args {
    ($p:expr $(, $more:expr)*) => {
        &[&$p.agent, &$p.q.start, &$p.q.end, &$p.tags, &$p.q.include_superseded $(, $more)*]
    };
}

async fn newest_passages(
    c: &impl GenericClient,
    p: &PassageParams<'_>,
    limit: usize,
) -> TxResult<Ranking> {
    let found = c
        .rows(
            &format!(
                "SELECT p.pk FROM passages p WHERE {}
                 ORDER BY p.created_at DESC, p.pk DESC LIMIT $6",
                p.filters("p")
            ),
            passage_args!(p, &rows::limit(limit)),
        )
        .await?;
    found.iter().map(|r| Ok((r.try_get(0)?, 0.0))).collect()
}

async fn passage_words(
    c: &impl GenericClient,
    p: &PassageParams<'_>,
    words: &[String],
    limit: usize,
) -> TxResult<Bm25> {
    let found = c
        .rows(
            &format!(
                "SELECT p.pk, ts_rank(p.words, q, 1)::float8 AS score
                 FROM passages p, to_tsquery('engram_words', $6) AS q
                 WHERE {} AND p.words @@ q
                 ORDER BY score DESC, p.created_at DESC, p.pk DESC LIMIT $7",
                p.filters("p")
            ),
            passage_args!(p, &rows::tsquery_any(words), &rows::limit(limit)),
        )
        .await?;
    let ranking: Ranking = found
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<TxResult<_>>()?;
    let keys: Vec<i64> = ranking.iter().map(|(k, _)| *k).collect();
    let neighbours = passage_neighbour_map(c, p, &keys).await?;
    Ok(Bm25 {
        ranking,
        neighbours,
    })
}

/// For each key, the passages just before and after it that pass the filters, within the
/// neighbour window.
async fn passage_neighbour_map(
    c: &impl GenericClient,
    p: &PassageParams<'_>,
    keys: &[i64],
) -> TxResult<NeighbourMap> {
    if keys.is_empty() {
        return Ok(NeighbourMap::new());
    }
    let side = |cmp: &str, order: &str, sign: &str, bound: &str| {
        format!(
            "(SELECT n.pk FROM passages n
              WHERE {} AND (n.created_at, n.pk) {cmp} (h.created_at, h.pk)
                AND n.created_at {bound} h.created_at {sign} make_interval(secs => $7)
              ORDER BY n.created_at {order}, n.pk {order} LIMIT 1)",
            p.filters("n")
        )
    };
    let found = c
        .rows(
            &format!(
                "SELECT h.pk, {}, {} FROM unnest($6::bigint[]) AS k(pk)
                 JOIN passages h ON h.pk = k.pk",
                side("<", "DESC", "-", ">="),
                side(">", "ASC", "+", "<="),
            ),
            passage_args!(p, &keys, &NEIGHBOUR_WINDOW_SECS),
        )
        .await?;
    found
        .iter()
        .map(|r| Ok((r.try_get(0)?, [r.try_get(1)?, r.try_get(2)?])))
        .collect()
}

async fn passage_vectors(
    c: &impl GenericClient,
    p: &PassageParams<'_>,
    v: &[f32],
    limit: usize,
) -> TxResult<Ranking> {
    let qnorm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if qnorm == 0.0 {
        return Ok(Vec::new());
    }
    let dim = i32::try_from(v.len()).unwrap_or(i32::MAX);
    let found = c
        .rows(
            &format!(
                "SELECT p.pk, p.embedding FROM passages p
                 WHERE {} AND p.embedding_dim = $6",
                p.filters("p")
            ),
            passage_args!(p, &dim),
        )
        .await?;
    by_cosine(&found, v, qnorm, limit)
}

async fn load_passages(c: &impl GenericClient, keys: &[i64]) -> TxResult<HashMap<i64, Passage>> {
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let found = c
        .rows(
            &format!("SELECT {PASSAGE_COLS}, p.pk FROM passages p WHERE p.pk = ANY($1)"),
            &[&keys],
        )
        .await?;
    found
        .iter()
        .map(|r| Ok((r.try_get(9)?, rows::passage(r)?)))
        .collect()
}

/// The passages around each of `ids` (see `PassageStore::passage_neighbours`): ring by ring,
/// the next one out on each side is the neighbour on that side of the last one found.
pub(crate) async fn passage_neighbours(
    c: &impl GenericClient,
    agent: &AgentId,
    q: &PassageQuery,
    ids: &[PassageId],
    reach: usize,
) -> Result<Vec<Vec<Passage>>> {
    blocks::ensure_agent(c, agent, Lock::None).await?;
    let tags = rows::dedup_tags(&q.tags);
    let params = PassageParams {
        agent: agent.as_str(),
        q,
        tags: &tags,
    };
    let id_list: Vec<&str> = ids.iter().map(PassageId::as_str).collect();
    let found = c
        .rows(
            "SELECT id, pk FROM passages WHERE agent_id = $1 AND id = ANY($2)",
            &[&agent.as_str(), &id_list],
        )
        .await
        .map_err(crate::tx::TxError::from)?;
    let pk_of: HashMap<String, i64> = found
        .iter()
        .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
        .collect::<TxResult<_>>()?;
    let keys: Vec<Option<i64>> = ids
        .iter()
        .map(|id| pk_of.get(id.as_str()).copied())
        .collect();
    let mut sides: Vec<[Vec<i64>; 2]> = vec![Default::default(); keys.len()];
    let mut edge: Vec<[Option<i64>; 2]> = keys.iter().map(|k| [*k, *k]).collect();
    for _ in 0..reach {
        let mut frontier: Vec<i64> = edge.iter().flatten().flatten().copied().collect();
        frontier.sort_unstable();
        frontier.dedup();
        if frontier.is_empty() {
            break;
        }
        let found = passage_neighbour_map(c, &params, &frontier).await?;
        for (side, at) in sides.iter_mut().zip(edge.iter_mut()) {
            for s in 0..2 {
                at[s] = at[s].and_then(|k| found.get(&k)).and_then(|n| n[s]);
                side[s].extend(at[s]);
            }
        }
    }
    let all: Vec<i64> = sides.iter().flatten().flatten().copied().collect();
    let loaded = load_passages(c, &all).await?;
    Ok(sides
        .into_iter()
        .map(|[before, after]| {
            before
                .into_iter()
                .rev()
                .chain(after)
                .filter_map(|k| loaded.get(&k).cloned())
                .collect()
        })
        .collect())
}

/// Recall search's candidates, handed to `rank`; the messages of its ranking, in order.
pub(crate) async fn rank_messages(
    c: &impl GenericClient,
    agent: &AgentId,
    q: &MessageQuery,
    embedding: Option<&[f32]>,
    depth: CandidateDepth,
    rank: Ranker<'_>,
) -> Result<Vec<MessageHit>> {
    if let Some(v) = embedding {
        check_query_vector(v)?;
    }
    blocks::ensure_agent(c, agent, Lock::None).await?;
    if q.limit == 0 {
        return Ok(Vec::new());
    }
    let roles: Vec<&str> = if q.roles.is_empty() {
        DEFAULT_ROLES.iter().map(|r| r.as_str()).collect()
    } else {
        q.roles.iter().map(|r| r.as_str()).collect()
    };
    let filters = message_filters("m");
    let words = match query_words(&q.query) {
        QueryWords::NoWords if embedding.is_none() => return Ok(Vec::new()),
        QueryWords::NoWords => None,
        QueryWords::Words(w) => Some(w),
        QueryWords::Blank => {
            let found = c
                .rows(
                    &format!(
                        "SELECT {MESSAGE_COLS} FROM messages m WHERE {filters}
                         ORDER BY m.seq DESC LIMIT $5"
                    ),
                    &[
                        &agent.as_str(),
                        &roles,
                        &q.start,
                        &q.end,
                        &rows::limit(q.limit),
                    ],
                )
                .await
                .map_err(crate::tx::TxError::from)?;
            return Ok(found
                .iter()
                .map(|r| {
                    Ok(MessageHit {
                        message: rows::message(r)?,
                        score: 0.0,
                    })
                })
                .collect::<TxResult<_>>()?);
        }
    };
    let lexical = match words {
        None => None,
        Some(words) => {
            let found = c
                .rows(
                    &format!(
                        "SELECT m.seq, ts_rank(m.words, q, 1)::float8 AS score
                         FROM messages m, to_tsquery('engram_words', $5) AS q
                         WHERE {filters} AND m.words @@ q
                         ORDER BY score DESC, m.seq DESC LIMIT $6"
                    ),
                    &[
                        &agent.as_str(),
                        &roles,
                        &q.start,
                        &q.end,
                        &rows::tsquery_any(&words),
                        &rows::limit(depth.lexical),
                    ],
                )
                .await
                .map_err(crate::tx::TxError::from)?;
            let ranking: Ranking = found
                .iter()
                .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
                .collect::<TxResult<_>>()?;
            let keys: Vec<i64> = ranking.iter().map(|(k, _)| *k).collect();
            let side = |cmp: &str, order: &str, sign: &str, bound: &str| {
                format!(
                    "(SELECT n.seq FROM messages n
                      WHERE {} AND n.seq {cmp} h.seq
                        AND n.created_at {bound} h.created_at {sign} make_interval(secs => $6)
                      ORDER BY n.seq {order} LIMIT 1)",
                    message_filters("n")
                )
            };
            let around = c
                .rows(
                    &format!(
                        "SELECT h.seq, {}, {} FROM unnest($5::bigint[]) AS k(seq)
                         JOIN messages h ON h.agent_id = $1 AND h.seq = k.seq",
                        side("<", "DESC", "-", ">="),
                        side(">", "ASC", "+", "<="),
                    ),
                    &[
                        &agent.as_str(),
                        &roles,
                        &q.start,
                        &q.end,
                        &keys,
                        &NEIGHBOUR_WINDOW_SECS,
                    ],
                )
                .await
                .map_err(crate::tx::TxError::from)?;
            let neighbours: NeighbourMap = around
                .iter()
                .map(|r| Ok((r.try_get(0)?, [r.try_get(1)?, r.try_get(2)?])))
                .collect::<TxResult<_>>()?;
            Some(Bm25 {
                ranking,
                neighbours,
            })
        }
    };
    let vector = match embedding {
        Some(v) => {
            Some(message_vectors(c, agent, (&roles, q.start, q.end), v, depth.vector).await?)
        }
        None => None,
    };
    let ranking = rank(Candidates { lexical, vector });
    let keys: Vec<i64> = ranking.iter().map(|(k, _)| *k).collect();
    let found = c
        .rows(
            &format!(
                "SELECT {MESSAGE_COLS} FROM messages m WHERE m.agent_id = $1 AND m.seq = ANY($2)"
            ),
            &[&agent.as_str(), &keys],
        )
        .await
        .map_err(crate::tx::TxError::from)?;
    let mut by_seq: HashMap<i64, engram_core::Message> = found
        .iter()
        .map(|r| {
            let m = rows::message(r)?;
            Ok((m.seq, m))
        })
        .collect::<TxResult<_>>()?;
    Ok(ranking
        .into_iter()
        .filter_map(|(k, score)| {
            by_seq
                .remove(&k)
                .map(|message| MessageHit { message, score })
        })
        .collect())
}

/// The cosine ranking (`seq`, similarity; best first) of up to `limit` of the agent's messages
/// that pass recall's filters (`roles`, `start`..`end`) and have a vector of its current model
/// with `v`'s dimension.
async fn message_vectors(
    c: &impl GenericClient,
    agent: &AgentId,
    (roles, start, end): (
        &[&str],
        Option<engram_core::Timestamp>,
        Option<engram_core::Timestamp>,
    ),
    v: &[f32],
    limit: usize,
) -> TxResult<Ranking> {
    let qnorm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if qnorm == 0.0 || limit == 0 {
        return Ok(Ranking::new());
    }
    let Some(model) = crate::message_vectors::current_model(c, agent, false).await? else {
        return Ok(Ranking::new());
    };
    let dim = i32::try_from(v.len()).unwrap_or(i32::MAX);
    let found = c
        .rows(
            &format!(
                "SELECT m.seq, v.vector FROM messages m
                 JOIN message_vectors v ON v.message_id = m.id
                 WHERE {} AND v.model = $5 AND v.dim = $6",
                message_filters("m")
            ),
            &[&agent.as_str(), &roles, &start, &end, &model, &dim],
        )
        .await?;
    by_cosine(&found, v, qnorm, limit)
}
