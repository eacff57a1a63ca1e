//! The sentence encoder itself: a BERT model (candle-transformers) over a WordPiece tokenizer
//! (`tokenizers`), mean-pooled over the real tokens and L2-normalised, as sentence-transformers
//! runs all-MiniLM-L6-v2 (its `1_Pooling/config.json`: mean tokens; `modules.json`: Normalize).

use crate::threads::{ModelThreads, ThreadCount};
use crate::weights::FileWeights;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use std::path::Path;
use tokenizers::{Tokenizer, TruncationParams};

/// Longest input in tokens (word pieces, with `[CLS]`/`[SEP]`); longer texts are cut. The
/// model was trained at 256 (`sentence_bert_config.json`: `max_seq_length`).
pub const MAX_TOKENS: usize = 256;

/// How texts are grouped for the model. Every text of a batch is padded to the longest one,
/// so texts are tokenised once, sorted by their number of tokens and cut into batches of
/// similar lengths; a batch holds at most `max_rows` texts and at most `attention_budget`
/// in `rows × tokens²` (the size of the attention scores per head, which is what grows the
/// memory of a batch of long texts: 12 heads × 4 bytes × 10,000 ≈ 0.5 MB).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batching {
    /// Most texts in one batch.
    pub max_rows: usize,
    /// Most `rows × tokens²` in one batch (a single text always fits).
    pub attention_budget: usize,
}

impl Default for Batching {
    /// Small batches, for everything the model encodes: at most 2 texts and 10,000
    /// `rows × tokens²`. Big batches are faster in a process of their own (`cargo bench -p
    /// engram-embed --bench throughput`, idle machine: 143 passages/s at 32 rows, 126 at 64
    /// rows and 350,000, 89 at these) but not in `engram serve`, where their buffers stay
    /// with the allocator: re-embedding 2,000 passages peaked at 320 MB in 27 s at 64 rows,
    /// 201 MB in 18 s at 16, 149 MB in 19 s at 4 and 141 MB in 20 s at 2 (`cargo bench
    /// --bench model_memory`). At search time
    /// (late interaction's query and candidates) the same small batches kept the server at
    /// 143 MB after 50 searches where one batch per search read 245–303 MB, and searched
    /// faster (222 against 296 ms p50): short batches pad less.
    fn default() -> Self {
        Self {
            max_rows: 2,
            attention_budget: 10_000,
        }
    }
}

/// The files a weights folder must hold.
pub const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// Why a weights folder could not be used or a text not embedded. The message names the file
/// and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EncoderError(pub String);

fn err(what: impl std::fmt::Display) -> EncoderError {
    EncoderError(what.to_string())
}

/// A loaded model: about 90 MB of weights in memory for all-MiniLM-L6-v2, and its own
/// worker threads (see [`crate::threads`]), which end when it is dropped.
pub struct Encoder {
    model: BertModel,
    tokenizer: Tokenizer,
    dimension: usize,
    threads: ModelThreads,
}

impl Encoder {
    /// Loads `config.json`, `tokenizer.json` and `model.safetensors` from `dir`. Errors name the
    /// missing or unreadable file (a truncated or corrupt safetensors file, a tokenizer that is
    /// not JSON, weights that do not fit the config) or the OS refusing to start its threads.
    pub fn load(dir: &Path) -> Result<Self, EncoderError> {
        Self::load_as(dir, DType::F32)
    }

    /// Like [`load`](Self::load), keeping the weights in memory as `dtype` (`F16` halves
    /// their memory; benchmarks compare speed and memory; vectors are always `f32`).
    pub fn load_as(dir: &Path, dtype: DType) -> Result<Self, EncoderError> {
        let read = |name: &str| {
            std::fs::read(dir.join(name))
                .map_err(|e| err(format!("cannot read {}: {e}", dir.join(name).display())))
        };
        let config: Config = serde_json::from_slice(&read("config.json")?).map_err(|e| {
            err(format!(
                "config.json in {} is not a BERT config: {e}",
                dir.display()
            ))
        })?;
        let mut tokenizer = Tokenizer::from_bytes(read("tokenizer.json")?).map_err(|e| {
            err(format!(
                "tokenizer.json in {} is not a tokenizer: {e}",
                dir.display()
            ))
        })?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..Default::default()
            }))
            .map_err(err)?;
        // No padding here: batches are padded by hand after sorting by length.
        tokenizer.with_padding(None);
        // Read tensor by tensor, so the file is never in memory beside the model.
        let weights = FileWeights::open(&dir.join("model.safetensors")).map_err(|e| {
            err(format!(
                "model.safetensors in {} is damaged: {e}",
                dir.display()
            ))
        })?;
        let vb = VarBuilder::from_backend(Box::new(weights), dtype, Device::Cpu);
        let model = BertModel::load(vb, &config).map_err(|e| {
            err(format!(
                "model.safetensors in {} does not fit its config: {e}",
                dir.display()
            ))
        })?;
        let threads = ModelThreads::new()
            .map_err(|e| err(format!("cannot start the model's threads: {e}")))?;
        Ok(Self {
            model,
            tokenizer,
            dimension: config.hidden_size,
            threads,
        })
    }

    /// How many of this model's worker threads are running (0 once it has been dropped and
    /// they have exited): what shows that an unloaded model left no threads behind.
    pub fn thread_count(&self) -> ThreadCount {
        self.threads.count()
    }

    /// The length of every vector (384 for all-MiniLM-L6-v2).
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// One unit-length vector per text, in input order, batched by [`Batching::default`].
    /// CPU-bound: call it off the async runtime. Errors only on a tokenizer or tensor failure
    /// (not on any text: empty text embeds as `[CLS] [SEP]`).
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EncoderError> {
        self.embed_with(texts, Batching::default())
    }

    /// Like [`embed`](Self::embed) with the given batching (benchmarks compare settings).
    pub fn embed_with(
        &self,
        texts: &[String],
        batching: Batching,
    ) -> Result<Vec<Vec<f32>>, EncoderError> {
        self.run_batched(texts, batching, |hidden, mask, _| {
            pool(hidden, mask).map_err(err)
        })
    }

    /// The contextual vector of every word piece of each text (the model's last hidden
    /// state, L2-normalised), `[CLS]`, `[SEP]` and padding left out: per text, one
    /// `dimension()`-long vector per token, in token order (at most [`MAX_TOKENS`] − 2).
    /// These are what late interaction compares (ColBERT, Khattab & Zaharia, SIGIR 2020:
    /// a query token's best cosine among a passage's tokens, summed over the query's
    /// tokens; see `engram_retrieval::late`). An empty text has no tokens. Same cost as
    /// [`embed`](Self::embed) (one model pass per [`Batching::default`] batch); CPU-bound.
    pub fn token_vectors(&self, texts: &[String]) -> Result<Vec<TokenVectors>, EncoderError> {
        self.run_batched(texts, Batching::default(), |hidden, _, encodings| {
            word_pieces(hidden, encodings)
        })
    }

    /// [`embed`](Self::embed) and [`token_vectors`](Self::token_vectors) of each text from one
    /// model pass: what a passage needs stored for hybrid search and late interaction alike.
    /// CPU-bound; errors as [`embed`](Self::embed).
    pub fn encode(&self, texts: &[String]) -> Result<Vec<Encoded>, EncoderError> {
        self.encode_with(texts, Batching::default())
    }

    /// Like [`encode`](Self::encode) with the given batching (see [`Batching`] for what
    /// bigger batches cost in memory).
    pub fn encode_with(
        &self,
        texts: &[String],
        batching: Batching,
    ) -> Result<Vec<Encoded>, EncoderError> {
        self.run_batched(texts, batching, |hidden, mask, encodings| {
            let pooled = pool(hidden, mask).map_err(err)?;
            Ok(pooled
                .into_iter()
                .zip(word_pieces(hidden, encodings)?)
                .map(|(vector, tokens)| Encoded { vector, tokens })
                .collect())
        })
    }

    /// Tokenises `texts`, runs them through the model in batches of similar lengths and
    /// hands each batch's hidden state (`[rows, tokens, dim]`, f32), attention mask and
    /// encodings to `each`, which gives one output per row; outputs come back in input order.
    /// Runs on the model's own threads.
    fn run_batched<T: Clone + Default + Send>(
        &self,
        texts: &[String],
        batching: Batching,
        each: impl Fn(&Tensor, &Tensor, &[&tokenizers::Encoding]) -> Result<Vec<T>, EncoderError> + Sync,
    ) -> Result<Vec<T>, EncoderError> {
        self.threads
            .install(|| self.run_batched_here(texts, batching, &each))
    }

    fn run_batched_here<T: Clone + Default>(
        &self,
        texts: &[String],
        batching: Batching,
        each: impl Fn(&Tensor, &Tensor, &[&tokenizers::Encoding]) -> Result<Vec<T>, EncoderError>,
    ) -> Result<Vec<T>, EncoderError> {
        // Tokenised once, in parallel by the tokenizer; the token counts order the batches.
        let encodings = self
            .tokenizer
            .encode_batch(texts.iter().map(String::as_str).collect::<Vec<_>>(), true)
            .map_err(err)?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());
        let mut out: Vec<T> = vec![T::default(); texts.len()];
        let mut start = 0;
        while start < order.len() {
            let mut end = start + 1;
            while end < order.len() && end - start < batching.max_rows.max(1) {
                // Sorted ascending: the next text is the longest of the grown batch.
                let len = encodings[order[end]].len();
                if (end - start + 1) * len * len > batching.attention_budget {
                    break;
                }
                end += 1;
            }
            let chunk = &order[start..end];
            let batch: Vec<&tokenizers::Encoding> = chunk.iter().map(|&i| &encodings[i]).collect();
            let (hidden, mask) = self.forward(&batch)?;
            for (&i, v) in chunk.iter().zip(each(&hidden, &mask, &batch)?) {
                out[i] = v;
            }
            start = end;
        }
        Ok(out)
    }

    /// Runs one batch, padded to its longest text (`[PAD]` = 0, masked out): the last
    /// hidden state as f32 and the attention mask.
    fn forward(
        &self,
        encodings: &[&tokenizers::Encoding],
    ) -> Result<(Tensor, Tensor), EncoderError> {
        let rows = encodings.len();
        let width = encodings.iter().map(|e| e.len()).max().unwrap_or(0);
        let mut ids = vec![0u32; rows * width];
        let mut types = vec![0u32; rows * width];
        let mut mask = vec![0u32; rows * width];
        for (r, e) in encodings.iter().enumerate() {
            let at = r * width;
            ids[at..at + e.len()].copy_from_slice(e.get_ids());
            types[at..at + e.len()].copy_from_slice(e.get_type_ids());
            mask[at..at + e.len()].copy_from_slice(e.get_attention_mask());
        }
        let device = &self.model.device;
        let tensor = |v: Vec<u32>| Tensor::from_vec(v, (rows, width), device).map_err(err);
        let (ids, types, mask) = (tensor(ids)?, tensor(types)?, tensor(mask)?);
        let hidden = self.model.forward(&ids, &types, Some(&mask)).map_err(err)?;
        let hidden = hidden.to_dtype(DType::F32).map_err(err)?;
        Ok((hidden, mask))
    }
}

/// The word pieces of one text with their contextual vectors (see
/// [`Encoder::token_vectors`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TokenVectors {
    /// The word pieces as the tokenizer wrote them (lower case; `##` marks a continuation).
    pub tokens: Vec<String>,
    /// One unit vector per word piece, in the same order.
    pub vectors: Vec<Vec<f32>>,
}

/// A text's pooled vector and its word pieces' vectors, from one model pass
/// ([`Encoder::encode`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Encoded {
    /// The sentence vector ([`Encoder::embed`]).
    pub vector: Vec<f32>,
    /// The word-piece vectors ([`Encoder::token_vectors`]).
    pub tokens: TokenVectors,
}

/// Each row's word pieces with their unit vectors from a batch's hidden state, `[CLS]`,
/// `[SEP]` and padding left out.
fn word_pieces(
    hidden: &Tensor,
    encodings: &[&tokenizers::Encoding],
) -> Result<Vec<TokenVectors>, EncoderError> {
    let hidden = hidden.to_vec3::<f32>().map_err(err)?;
    Ok(hidden
        .into_iter()
        .zip(encodings)
        .map(|(rows, e)| {
            let (tokens, vectors) = rows
                .into_iter()
                .zip(e.get_tokens().iter().zip(e.get_special_tokens_mask()))
                .take(e.len())
                .filter(|(_, (_, special))| **special == 0)
                .map(|(v, (t, _))| (t.clone(), unit(v)))
                .unzip();
            TokenVectors { tokens, vectors }
        })
        .collect())
}

/// `v` scaled to unit length (a zero vector stays zero).
fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
    if n > 1e-12 {
        v.iter_mut().for_each(|a| *a /= n);
    }
    v
}

/// Mean over the unmasked tokens, then L2 normalisation: `[batch, tokens, dim]` → `batch`
/// vectors of `dim`.
fn pool(hidden: &Tensor, mask: &Tensor) -> candle_core::Result<Vec<Vec<f32>>> {
    let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
    let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
    let mean = summed.broadcast_div(&counts)?;
    let norms = mean
        .sqr()?
        .sum_keepdim(1)?
        .sqrt()?
        .clamp(1e-12f32, f32::MAX)?;
    mean.broadcast_div(&norms)?.to_vec2()
}
