//! Embeddings over OpenAI's `POST {base}/embeddings`, spoken by OpenAI and the local servers.

use crate::transport::Transport;
use crate::types::{EmbeddingModel, ProviderConfig, ProviderError};
use async_trait::async_trait;
use serde_json::{Value, json};

/// Most texts sent in one request; longer inputs go in several requests (OpenAI takes 2048,
/// local servers often far fewer).
pub const MAX_BATCH: usize = 256;

/// An embedding model behind an OpenAI-compatible `embeddings` endpoint.
pub(crate) struct OpenAiEmbeddings {
    transport: Transport,
}

impl OpenAiEmbeddings {
    /// A client for `config`.
    pub fn new(config: &ProviderConfig) -> Result<Self, ProviderError> {
        Ok(Self {
            transport: Transport::new(config)?,
        })
    }
}

#[async_trait]
impl EmbeddingModel for OpenAiEmbeddings {
    #[tracing::instrument(skip_all, fields(model = %model, texts = texts.len()))]
    async fn embed(&self, model: &str, texts: &[String]) -> Result<Vec<Vec<f32>>, ProviderError> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(MAX_BATCH) {
            let answer = self
                .transport
                .post_json("embeddings", &json!({"model": model, "input": batch}))
                .await?;
            let batch_vectors = parse_embeddings(&answer, batch.len())
                .map_err(|what| self.transport.ctx.bad_response(&what))?;
            vectors.extend(batch_vectors);
        }
        Ok(vectors)
    }
}

/// The vectors of an answer in input order (sorted by each item's `index`). `Err` says what is
/// wrong: not `expected` vectors, a missing index, or a vector that is not an array of numbers.
pub(crate) fn parse_embeddings(answer: &Value, expected: usize) -> Result<Vec<Vec<f32>>, String> {
    let data = answer
        .get("data")
        .and_then(|d| d.as_array())
        .ok_or("no `data` array in the answer")?;
    let mut items = Vec::with_capacity(data.len());
    for (position, item) in data.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(|i| i.as_u64())
            .map_or(position, |i| i as usize);
        let vector = item
            .get("embedding")
            .and_then(|e| e.as_array())
            .ok_or("an embedding is not an array of numbers")?
            .iter()
            .map(|x| x.as_f64().map(|x| x as f32))
            .collect::<Option<Vec<f32>>>()
            .ok_or("an embedding holds something other than numbers")?;
        items.push((index, vector));
    }
    items.sort_by_key(|(index, _)| *index);
    if items.len() != expected || items.iter().enumerate().any(|(i, (index, _))| i != *index) {
        return Err(format!(
            "asked for {expected} embeddings, got {} (indices do not match)",
            items.len()
        ));
    }
    Ok(items.into_iter().map(|(_, v)| v).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_come_back_in_input_order() {
        let answer = json!({"data": [
            {"index": 2, "embedding": [2.0]},
            {"index": 0, "embedding": [0.0]},
            {"index": 1, "embedding": [1.0]},
        ]});
        assert_eq!(
            parse_embeddings(&answer, 3).unwrap(),
            vec![vec![0.0], vec![1.0], vec![2.0]]
        );
        assert!(parse_embeddings(&answer, 2).is_err());
        assert!(
            parse_embeddings(&json!({"data": [{"index": 0, "embedding": "AAAA"}]}), 1).is_err()
        );
        assert!(parse_embeddings(&json!({"nope": []}), 0).is_err());
    }
}
