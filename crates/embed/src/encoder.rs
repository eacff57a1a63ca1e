//! The sentence encoder itself: a BERT model (candle-transformers) over a WordPiece tokenizer
//! (`tokenizers`), mean-pooled over the real tokens and L2-normalised, as sentence-transformers
//! runs all-MiniLM-L6-v2 (its `1_Pooling/config.json`: mean tokens; `modules.json`: Normalize).

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use std::path::Path;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// Longest input in tokens (word pieces, with `[CLS]`/`[SEP]`); longer texts are cut. The
/// model was trained at 256 (`sentence_bert_config.json`: `max_seq_length`).
pub const MAX_TOKENS: usize = 256;

/// Texts run through the model together. Larger batches pad more (every text is padded to the
/// longest of its batch); texts are sorted by length first so a batch holds similar lengths.
const BATCH: usize = 32;

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

/// A loaded model: about 90 MB of weights in memory for all-MiniLM-L6-v2.
pub struct Encoder {
    model: BertModel,
    tokenizer: Tokenizer,
    dimension: usize,
}

impl Encoder {
    /// Loads `config.json`, `tokenizer.json` and `model.safetensors` from `dir`. Errors name the
    /// missing or unreadable file (a truncated or corrupt safetensors file, a tokenizer that is
    /// not JSON, weights that do not fit the config).
    pub fn load(dir: &Path) -> Result<Self, EncoderError> {
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
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..Default::default()
        }));
        let weights = read("model.safetensors")?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu).map_err(
            |e| {
                err(format!(
                    "model.safetensors in {} is damaged: {e}",
                    dir.display()
                ))
            },
        )?;
        let model = BertModel::load(vb, &config).map_err(|e| {
            err(format!(
                "model.safetensors in {} does not fit its config: {e}",
                dir.display()
            ))
        })?;
        Ok(Self {
            model,
            tokenizer,
            dimension: config.hidden_size,
        })
    }

    /// The length of every vector (384 for all-MiniLM-L6-v2).
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// One unit-length vector per text, in input order. CPU-bound: call it off the async
    /// runtime. Errors only on a tokenizer or tensor failure (not on any text: empty text
    /// embeds as `[CLS] [SEP]`).
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EncoderError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i].as_str()).collect();
            for (&i, v) in chunk.iter().zip(self.embed_batch(&batch)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncoderError> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(err)?;
        let device = &self.model.device;
        let rows = |f: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> Result<Tensor, EncoderError> {
            let rows = encodings
                .iter()
                .map(|e| Tensor::new(f(e), device))
                .collect::<candle_core::Result<Vec<_>>>()
                .map_err(err)?;
            Tensor::stack(&rows, 0).map_err(err)
        };
        let ids = rows(&|e| e.get_ids())?;
        let types = rows(&|e| e.get_type_ids())?;
        let mask = rows(&|e| e.get_attention_mask())?;
        let hidden = self.model.forward(&ids, &types, Some(&mask)).map_err(err)?;
        pool(&hidden, &mask).map_err(err)
    }
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
