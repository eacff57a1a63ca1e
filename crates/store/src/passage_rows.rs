//! How a passage row reads, and the filters every archival query applies (agent, dates, tags):
//! shared by storing, listing, searching and reading neighbours.

use crate::sql::{self, DbResult, json, ts};
use engram_core::{
    AgentId, PassId, Passage, PassageId, Result, SupersedeKind, Supersession, TagMatch,
};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row};

pub use engram_store_api::PassageQuery;

/// The columns of a passage row, in the order [`passage_from_row`] reads them.
pub(crate) const PASSAGE_COLS: &str = "p.id, p.agent_id, p.text, \
    (SELECT json_group_array(tag ORDER BY position) FROM passage_tags t WHERE t.passage_id = p.id), \
    p.created_at, p.superseded_at, p.superseded_kind, p.superseded_by, p.superseded_pass";

/// Maps a row selected with [`PASSAGE_COLS`].
pub(crate) fn passage_from_row(r: &Row<'_>) -> rusqlite::Result<Passage> {
    Ok(Passage {
        id: PassageId::from(r.get::<_, String>(0)?),
        agent_id: AgentId::from(r.get::<_, String>(1)?),
        text: r.get(2)?,
        tags: json(r, 3)?,
        created_at: ts(r, 4)?,
        superseded: supersession(r, 5)?,
    })
}

/// The supersession columns starting at `at` (time, kind, successor, pass), when set.
fn supersession(r: &Row<'_>, at: usize) -> rusqlite::Result<Option<Supersession>> {
    if r.get::<_, Option<i64>>(at)?.is_none() {
        return Ok(None);
    }
    let kind: Option<String> = r.get(at + 1)?;
    Ok(Some(Supersession {
        kind: kind
            .as_deref()
            .and_then(SupersedeKind::parse)
            .unwrap_or(SupersedeKind::Superseded),
        at: ts(r, at)?,
        by: r.get::<_, Option<String>>(at + 2)?.map(PassageId::from),
        pass_id: r.get::<_, Option<String>>(at + 3)?.map(PassId::from),
    }))
}

/// Whether a search or list of `agent` must leave superseded passages out: the caller did not
/// ask for the history and the agent has some (checked on a partial index of replaced
/// passages, so an agent whose facts never changed searches exactly as before).
pub(crate) fn hides_superseded(conn: &Connection, agent: &AgentId, include: bool) -> Result<bool> {
    if include {
        return Ok(false);
    }
    conn.prepare_cached(
        "SELECT 1 FROM passages INDEXED BY passages_superseded
         WHERE agent_id = ?1 AND superseded_at IS NOT NULL",
    )
    .db()?
    .exists([agent.as_str()])
    .db()
}

/// Tags without duplicates, first occurrence kept.
pub(crate) fn dedup(tags: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::with_capacity(tags.len());
    for t in tags {
        if !out.contains(&t.as_str()) {
            out.push(t);
        }
    }
    out
}

/// A SQL text with positional arguments numbered as they are added, so optional filters can
/// be appended without counting placeholders by hand.
#[derive(Default)]
pub(crate) struct Query {
    pub(crate) args: Vec<Value>,
}

impl Query {
    /// Adds an argument and returns its placeholder (`?N`).
    pub(crate) fn arg(&mut self, v: impl Into<Value>) -> String {
        self.args.push(v.into());
        format!("?{}", self.args.len())
    }
}

/// The WHERE conditions every archival search applies: agent, dates, tags, and (unless
/// `include_superseded`) current passages only.
pub(crate) fn filters(agent: &AgentId, q: &PassageQuery, query: &mut Query) -> Result<String> {
    let agent_arg = query.arg(agent.as_str().to_owned());
    let mut sql = format!(
        "p.agent_id = {agent_arg} AND p.created_at BETWEEN {} AND {}",
        query.arg(q.start.map_or(i64::MIN, sql::micros)),
        query.arg(q.end.map_or(i64::MAX, sql::micros)),
    );
    if !q.include_superseded {
        sql.push_str(" AND p.superseded_at IS NULL");
    }
    let tags = dedup(&q.tags);
    if !tags.is_empty() {
        let list = query.arg(sql::to_json(&tags)?);
        match q.tag_match {
            // The tag index leads with the agent, so the agent narrows the tag rows too.
            TagMatch::Any => sql.push_str(&format!(
                " AND p.pk IN (SELECT passage_pk FROM passage_tags
                               WHERE agent_id = {agent_arg}
                                 AND tag IN (SELECT value FROM json_each({list})))"
            )),
            TagMatch::All => {
                let count = query.arg(sql::sat(tags.len()));
                sql.push_str(&format!(
                    " AND (SELECT count(*) FROM passage_tags t WHERE t.passage_id = p.id
                           AND t.tag IN (SELECT value FROM json_each({list}))) = {count}"
                ));
            }
        }
    }
    Ok(sql)
}

/// `q` as the store runs it: asking to hide superseded passages only when the agent has some
/// (see [`hides_superseded`]), so the common case keeps its unfiltered fast paths.
pub(crate) fn effective<'q>(
    conn: &Connection,
    agent: &AgentId,
    q: &'q PassageQuery,
) -> Result<std::borrow::Cow<'q, PassageQuery>> {
    if q.include_superseded || hides_superseded(conn, agent, false)? {
        return Ok(std::borrow::Cow::Borrowed(q));
    }
    let mut all = q.clone();
    all.include_superseded = true;
    Ok(std::borrow::Cow::Owned(all))
}

/// The passage with row key `pk`, if it exists.
pub(crate) fn load_by_pk(conn: &Connection, pk: i64) -> Result<Option<Passage>> {
    conn.prepare_cached(&format!(
        "SELECT {PASSAGE_COLS} FROM passages p WHERE p.pk = ?1"
    ))
    .db()?
    .query_row([pk], passage_from_row)
    .optional()
    .db()
}
