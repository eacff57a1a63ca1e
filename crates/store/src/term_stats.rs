//! How common a word is in one agent's archival memory: the document frequencies that let a
//! reranker weigh a query's words by their rarity (the IDF of BM25, `engram_retrieval::late::idf`; Robertson & Zaragoza,
//! "The Probabilistic Relevance Framework: BM25 and Beyond", 2009), read from the agent's own
//! full-text index so another agent's passages never change them (see `fts_partitions`).

use crate::fts_partitions::{partition, passages_table};
use crate::rooms::PassageRows;
use crate::sql::{self, DbResult};
use engram_core::{AgentId, Result};

/// Document frequencies of some words among an agent's passages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TermStats {
    /// How many passages the agent has.
    pub passages: u64,
    /// For each asked word, in order: how many of those passages hold it (after the index's
    /// Porter stemming, so "gardening" counts passages with "garden"); 0 for a word with no
    /// letters or digits.
    pub frequencies: Vec<u64>,
}

impl PassageRows<'_> {
    /// How many of the agent's passages hold each of `words` (one word each; anything but
    /// letters and digits splits it, and the first piece counts), counted in the agent's
    /// full-text index. One indexed lookup per word. Errors: `NotFound("agent")`.
    pub fn term_stats(self, agent: &AgentId, words: &[String]) -> Result<TermStats> {
        self.store.read(|c| {
            sql::ensure_agent(c, agent)?;
            let passages = c
                .prepare_cached("SELECT count(*) FROM passages WHERE agent_id = ?1")
                .db()?
                .query_row([agent.as_str()], |r| sql::uint(r, 0))
                .db()?;
            let Some(n) = partition(c, agent)? else {
                return Ok(TermStats {
                    passages,
                    frequencies: vec![0; words.len()],
                });
            };
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT count(*) FROM {t} WHERE {t} MATCH ?1",
                    t = passages_table(n)
                ))
                .db()?;
            let mut frequencies = Vec::with_capacity(words.len());
            for word in words {
                let Some(term) = word
                    .split(|ch: char| !ch.is_alphanumeric())
                    .find(|t| !t.is_empty())
                else {
                    frequencies.push(0);
                    continue;
                };
                // A quoted string is one FTS5 token sequence, never an operator.
                let phrase = format!("\"{}\"", term.replace('"', "\"\""));
                frequencies.push(stmt.query_row([phrase], |r| sql::uint(r, 0)).db()?);
            }
            Ok(TermStats {
                passages,
                frequencies,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::Store;
    use engram_core::{Agent, AgentId, LlmConfig, NewPassage};

    fn agent(store: &Store, texts: &[&str]) -> AgentId {
        let agent = Agent::new("T", LlmConfig::new("openai/gpt-4o-mini"));
        let (agent, _) = store.agents().create(&agent, &[], &[]).unwrap();
        let passages: Vec<NewPassage> = texts
            .iter()
            .map(|t| NewPassage {
                text: t.to_string(),
                ..NewPassage::default()
            })
            .collect();
        store.passages().insert(&agent.id, &passages).unwrap();
        agent.id
    }

    #[test]
    fn frequencies_count_the_agents_own_passages_after_stemming() {
        let store = Store::open_in_memory().unwrap();
        let a = agent(
            &store,
            &[
                "Melanie: I went gardening",
                "Melanie: the garden is lovely",
                "Caroline: I paint",
            ],
        );
        // Another agent's passages never count.
        agent(&store, &["Melanie Melanie garden garden", "Melanie again"]);
        let words: Vec<String> = ["melanie", "Gardens", "paint", "kiln", "?", "\"or\""]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let stats = store.passages().term_stats(&a, &words).unwrap();
        assert_eq!(stats.passages, 3);
        assert_eq!(stats.frequencies, vec![2, 2, 1, 0, 0, 0]);
        let unknown = store.passages().term_stats(&AgentId::new(), &words);
        assert!(
            matches!(unknown, Err(engram_core::Error::NotFound { .. })),
            "{unknown:?}"
        );
    }
}
