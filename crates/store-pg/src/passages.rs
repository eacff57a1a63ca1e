//! Archival memory on PostgreSQL: passages with their tags (a `text[]` in order), their vector
//! as bytes, and their words (`tsvector`, GIN index); listed by `(created_at, pk)` with
//! row-value cursors, searched by words with the tag and date filters in the same statement.

use crate::PgStore;
use crate::blocks::{self, Lock};
use crate::passage_page::key_of;
use crate::rows::{self, Cached, PASSAGE_COLS};
use crate::tx::{TxError, TxResult, transaction};
use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_core::{
    AgentId, Error, NewPassage, Passage, PassageHit, PassageId, Result, StepId, TagMatch, Timestamp,
};
use engram_store_api::{
    CandidateDepth, Hit, PassageList, PassagePage, PassageQuery, PassageRange, PassageSearch,
    PassageStore, QueryWords, Ranker, query_words,
};

/// The filters of a search: `$1` agent, `$2`..`$3` time range (`NULL` for no bound), `$4` tags
/// (an empty array for no tag filter), current passages only.
fn search_filters(tag_match: TagMatch) -> String {
    let tags = match tag_match {
        TagMatch::Any => "p.tags && $4",
        TagMatch::All => "p.tags @> $4",
    };
    format!(
        "p.agent_id = $1 AND p.superseded_at IS NULL
         AND ($2::timestamptz IS NULL OR p.created_at >= $2)
         AND ($3::timestamptz IS NULL OR p.created_at <= $3)
         AND (cardinality($4::text[]) = 0 OR {tags})"
    )
}

/// Checks passages before a write: each needs text, and a vector of finite values.
/// Errors: `Invalid`.
pub(crate) fn check_new(passages: &[NewPassage]) -> Result<()> {
    for np in passages {
        if np.text.trim().is_empty() {
            return Err(Error::invalid("a passage needs some text"));
        }
        if let Some(v) = &np.embedding {
            engram_store_api::check_vector(v)?;
        }
    }
    Ok(())
}

/// Inserts checked passages ([`check_new`]) of `agent`, inside the caller's transaction,
/// remembering the step that wrote them. Passages without a time get `now`.
pub(crate) async fn insert(
    c: &impl GenericClient,
    agent: &AgentId,
    passages: &[NewPassage],
    step: Option<&StepId>,
    now: Timestamp,
) -> TxResult<Vec<Passage>> {
    let mut out = Vec::with_capacity(passages.len());
    for np in passages {
        out.push(insert_as(c, agent, PassageId::new(), np, step, now).await?);
    }
    Ok(out)
}

/// Inserts one passage under `id` (a sleep-time pass names the passages it adds), inside the
/// caller's transaction; see [`insert`]. Errors: `Conflict` when the id is taken.
pub(crate) async fn insert_as(
    c: &impl GenericClient,
    agent: &AgentId,
    id: PassageId,
    np: &NewPassage,
    step: Option<&StepId>,
    now: Timestamp,
) -> TxResult<Passage> {
    let p = Passage {
        id,
        agent_id: agent.clone(),
        text: np.text.clone(),
        tags: rows::dedup_tags(&np.tags),
        created_at: np.created_at.map_or(now, rows::truncate),
        superseded: None,
    };
    let (dim, bytes) = np
        .embedding
        .as_deref()
        .map(rows::encode_vector)
        .transpose()?
        .unzip();
    let inserted = c
        .exec(
            "INSERT INTO passages (id, agent_id, text, tags, created_at, embedding_dim,
                               embedding, step_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (id) DO NOTHING",
            &[
                &p.id.as_str(),
                &agent.as_str(),
                &p.text,
                &p.tags,
                &p.created_at,
                &dim,
                &bytes,
                &step.map(StepId::as_str),
            ],
        )
        .await?;
    if inserted == 0 {
        return Err(Error::Conflict(format!("passage {} already exists", p.id)).into());
    }
    Ok(p)
}

#[async_trait]
impl PassageStore for PgStore {
    async fn insert_passages(
        &self,
        agent: &AgentId,
        passages: &[NewPassage],
    ) -> Result<Vec<Passage>> {
        check_new(passages)?;
        transaction!(self, |tx| {
            // Not deleted until these rows are in; other writers of the agent do not wait.
            blocks::ensure_agent(&tx, agent, Lock::KeyShare).await?;
            insert(&tx, agent, passages, None, rows::now()).await?
        })
    }

    async fn get_passage(&self, id: &PassageId) -> Result<Passage> {
        let c = self.client().await?;
        let row = c
            .one_opt(
                &format!("SELECT {PASSAGE_COLS} FROM passages p WHERE p.id = $1"),
                &[&id.as_str()],
            )
            .await
            .map_err(TxError::from)?;
        match row {
            Some(r) => Ok(rows::passage(&r)?),
            None => Err(Error::not_found("passage", id.as_str())),
        }
    }

    async fn list_passages(&self, agent: &AgentId, range: &PassageRange) -> Result<Vec<Passage>> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        let after = match &range.after {
            Some(id) => Some(key_of(&c, agent, id).await?),
            None => None,
        };
        let before = match &range.before {
            Some(id) => Some(key_of(&c, agent, id).await?),
            None => None,
        };
        if range.limit == 0 {
            return Ok(Vec::new());
        }
        // In time order, "after" a cursor is later when ascending and earlier when not.
        let (lower, upper) = if range.ascending {
            (after, before)
        } else {
            (before, after)
        };
        // `before` asks for the page nearest the cursor: read from that end, then turn round.
        let from_end = before.is_some();
        let dir = if range.ascending != from_end {
            "ASC"
        } else {
            "DESC"
        };
        let found = c
            .rows(
                &format!(
                    "SELECT {PASSAGE_COLS} FROM passages p
                     WHERE p.agent_id = $1 AND ($7 OR p.superseded_at IS NULL)
                       AND ($2::timestamptz IS NULL OR (p.created_at, p.pk) > ($2, $3))
                       AND ($4::timestamptz IS NULL OR (p.created_at, p.pk) < ($4, $5))
                     ORDER BY p.created_at {dir}, p.pk {dir} LIMIT $6"
                ),
                &[
                    &agent.as_str(),
                    &lower.map(|k| k.0),
                    &lower.map_or(0, |k| k.1),
                    &upper.map(|k| k.0),
                    &upper.map_or(0, |k| k.1),
                    &rows::limit(range.limit),
                    &range.include_superseded,
                ],
            )
            .await
            .map_err(TxError::from)?;
        let mut out = rows::all(&found, rows::passage)?;
        if from_end {
            out.reverse();
        }
        Ok(out)
    }

    async fn passage_vectors(&self, agent: &AgentId) -> Result<Vec<(PassageId, Vec<f32>)>> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        let found = c
            .rows(
                "SELECT id, embedding FROM passages
                 WHERE agent_id = $1 AND embedding IS NOT NULL ORDER BY pk",
                &[&agent.as_str()],
            )
            .await
            .map_err(TxError::from)?;
        let mut out = Vec::with_capacity(found.len());
        for r in &found {
            let id: String = r.try_get(0).map_err(TxError::from)?;
            let bytes: Vec<u8> = r.try_get(1).map_err(TxError::from)?;
            let v = bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            out.push((PassageId::from(id), v));
        }
        Ok(out)
    }

    async fn count_passages(&self, agent: &AgentId) -> Result<u64> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        let n: i64 = c
            .one(
                "SELECT count(*) FROM passages WHERE agent_id = $1 AND superseded_at IS NULL",
                &[&agent.as_str()],
            )
            .await
            .map_err(TxError::from)?
            .get(0);
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn delete_passage(&self, agent: &AgentId, id: &PassageId) -> Result<()> {
        let c = self.client().await?;
        let n = c
            .exec(
                "DELETE FROM passages WHERE id = $1 AND agent_id = $2",
                &[&id.as_str(), &agent.as_str()],
            )
            .await
            .map_err(TxError::from)?;
        if n == 0 {
            return Err(Error::not_found("passage", id.as_str()));
        }
        Ok(())
    }

    async fn passages_with_words(
        &self,
        agent: &AgentId,
        query: &str,
        ids: &[PassageId],
    ) -> Result<Vec<PassageId>> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        let QueryWords::Words(words) = query_words(query) else {
            return Ok(Vec::new());
        };
        let wanted: Vec<&str> = ids.iter().map(PassageId::as_str).collect();
        let found = c
            .rows(
                "SELECT id FROM passages
                 WHERE agent_id = $1 AND id = ANY($2)
                   AND words @@ to_tsquery('engram_words', $3)",
                &[&agent.as_str(), &wanted, &rows::tsquery_any(&words)],
            )
            .await
            .map_err(TxError::from)?;
        let found: std::collections::HashSet<String> = found.iter().map(|r| r.get(0)).collect();
        Ok(ids
            .iter()
            .filter(|id| found.contains(id.as_str()))
            .cloned()
            .collect())
    }

    async fn page_passages(&self, agent: &AgentId, list: &PassageList) -> Result<PassagePage> {
        crate::passage_page::page_in_snapshot(self, agent, list).await
    }

    async fn passages_without_vectors(
        &self,
        agent: &AgentId,
        limit: usize,
    ) -> Result<Vec<Passage>> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        let found = c
            .rows(
                &format!(
                    "SELECT {PASSAGE_COLS} FROM passages p
                     WHERE p.agent_id = $1 AND p.embedding IS NULL ORDER BY p.pk LIMIT $2"
                ),
                &[&agent.as_str(), &rows::limit(limit)],
            )
            .await
            .map_err(TxError::from)?;
        Ok(rows::all(&found, rows::passage)?)
    }

    async fn count_passages_without_vectors(&self, agent: &AgentId) -> Result<u64> {
        let c = self.client().await?;
        // Asked after every run: one statement, which finds no agent row for a missing agent.
        let row = c
            .one_opt(
                "SELECT (SELECT count(*) FROM passages p
                         WHERE p.agent_id = a.id AND p.embedding IS NULL)
                 FROM agents a WHERE a.id = $1",
                &[&agent.as_str()],
            )
            .await
            .map_err(TxError::from)?;
        let n: i64 = match row {
            Some(r) => r.try_get(0).map_err(TxError::from)?,
            None => return Err(Error::not_found("agent", agent.as_str())),
        };
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn fill_passage_vectors(
        &self,
        agent: &AgentId,
        model: &str,
        filled: &[(PassageId, String, Vec<f32>)],
    ) -> Result<usize> {
        let mut coded = Vec::with_capacity(filled.len());
        for (id, text, v) in filled {
            let (dim, bytes) = rows::encode_vector(v)?;
            coded.push((id, text, dim, bytes));
        }
        transaction!(self, |tx| {
            // Read under a share lock: a change of the embedding model commits before this
            // fill or after it, never in between.
            let current = tx
                .one_opt(
                    "SELECT embedding ->> 'model' FROM agents WHERE id = $1 FOR SHARE",
                    &[&agent.as_str()],
                )
                .await?;
            let Some(current) = current else {
                return Err(Error::not_found("agent", agent.as_str()).into());
            };
            if current.try_get::<_, Option<String>>(0)?.as_deref() != Some(model) {
                0
            } else {
                let mut n = 0;
                for (id, text, dim, bytes) in &coded {
                    n += tx
                        .exec(
                            "UPDATE passages SET embedding_dim = $2, embedding = $3
                             WHERE id = $1 AND embedding IS NULL AND text = $4
                               AND agent_id = $5",
                            &[&id.as_str(), dim, bytes, text, &agent.as_str()],
                        )
                        .await?;
                }
                usize::try_from(n).unwrap_or(usize::MAX)
            }
        })
    }

    async fn update_passage(
        &self,
        agent: &AgentId,
        id: &PassageId,
        text: Option<&str>,
        tags: Option<&[String]>,
        embedding: Option<&[f32]>,
    ) -> Result<Passage> {
        if text.is_some_and(|t| t.trim().is_empty()) {
            return Err(Error::invalid("a passage needs some text"));
        }
        let (dim, bytes) = embedding.map(rows::encode_vector).transpose()?.unzip();
        let tags: Option<Vec<String>> = tags.map(|t| {
            engram_store_api::clean_tags(t)
                .into_iter()
                .map(str::to_owned)
                .collect()
        });
        transaction!(self, |tx| {
            // Locks the row, so two edits of one passage apply one after the other.
            let found = tx
                .one_opt(
                    "SELECT pk FROM passages WHERE id = $1 AND agent_id = $2 FOR UPDATE",
                    &[&id.as_str(), &agent.as_str()],
                )
                .await?;
            if found.is_none() {
                return Err(Error::not_found("passage", id.as_str()).into());
            }
            if let Some(text) = text {
                tx.exec(
                    "UPDATE passages SET text = $2, embedding_dim = $3, embedding = $4
                     WHERE id = $1",
                    &[&id.as_str(), &text, &dim, &bytes],
                )
                .await?;
            }
            if let Some(tags) = &tags {
                tx.exec(
                    "UPDATE passages SET tags = $2 WHERE id = $1",
                    &[&id.as_str(), tags],
                )
                .await?;
            }
            let row = tx
                .one(
                    &format!("SELECT {PASSAGE_COLS} FROM passages p WHERE p.id = $1"),
                    &[&id.as_str()],
                )
                .await?;
            rows::passage(&row)?
        })
    }

    async fn search_passages(
        &self,
        agent: &AgentId,
        q: &PassageSearch,
    ) -> Result<Vec<Hit<Passage>>> {
        let c = self.client().await?;
        blocks::ensure_agent(&c, agent, Lock::None).await?;
        let tags = rows::dedup_tags(&q.tags);
        let limit = rows::limit(q.limit);
        let filters = search_filters(q.tag_match);
        let found = match query_words(&q.query) {
            QueryWords::NoWords => return Ok(Vec::new()),
            QueryWords::Blank => c
                .rows(
                    &format!(
                        "SELECT {PASSAGE_COLS}, 0::float8 FROM passages p WHERE {filters}
                         ORDER BY p.created_at DESC, p.pk DESC LIMIT $5"
                    ),
                    &[&agent.as_str(), &q.start, &q.end, &tags, &limit],
                )
                .await
                .map_err(TxError::from)?,
            // Normalisation 1 as for messages: rank over 1 + log(length).
            QueryWords::Words(words) => c
                .rows(
                    &format!(
                        "SELECT {PASSAGE_COLS}, ts_rank(p.words, q, 1)::float8 AS score
                         FROM passages p, to_tsquery('engram_words', $6) AS q
                         WHERE {filters} AND p.words @@ q
                         ORDER BY score DESC, p.created_at DESC, p.pk DESC LIMIT $5"
                    ),
                    &[
                        &agent.as_str(),
                        &q.start,
                        &q.end,
                        &tags,
                        &limit,
                        &rows::tsquery_any(&words),
                    ],
                )
                .await
                .map_err(TxError::from)?,
        };
        let ranked = found
            .iter()
            .map(|r| Ok((rows::passage(r)?, r.try_get::<_, f64>(9)?)))
            .collect::<TxResult<Vec<_>>>()?;
        Ok(Hit::from_ranked(ranked))
    }
    async fn rank_passages(
        &self,
        agent: &AgentId,
        q: &PassageQuery,
        depth: CandidateDepth,
        rank: Ranker<'_>,
    ) -> Result<Vec<PassageHit>> {
        let c = self.client().await?;
        crate::ranking::rank_passages(&c, agent, q, depth, rank).await
    }

    async fn passage_neighbours(
        &self,
        agent: &AgentId,
        q: &PassageQuery,
        ids: &[PassageId],
        reach: usize,
    ) -> Result<Vec<Vec<Passage>>> {
        let c = self.client().await?;
        crate::ranking::passage_neighbours(&c, agent, q, ids, reach).await
    }
}
