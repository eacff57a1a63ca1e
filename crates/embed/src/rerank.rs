//! A cross-encoder reranker: a BERT model with a sequence-classification head
//! (`BertForSequenceClassification`, one logit) that reads the query and a passage together
//! and scores how well the passage answers the query, as the MS MARCO cross-encoders of
//! sentence-transformers do (Nogueira & Cho 2019, "Passage Re-ranking with BERT";
//! `cross-encoder/ms-marco-MiniLM-L6-v2`). Slower than comparing vectors (every candidate is
//! a full model pass), so it reorders only the first candidates of the hybrid search.
//!
//! The weights folder holds `config.json` (a BERT config with `num_labels` = 1),
//! `tokenizer.json` (WordPiece, with the pair template `[CLS] q [SEP] p [SEP]`) and
//! `model.safetensors` with the tensors `bert.*`, `bert.pooler.dense.*` and `classifier.*`.

use crate::encoder::EncoderError;
use candle_core::{DType, Device, IndexOp, Module, Tensor};
use candle_nn::{Linear, VarBuilder, linear};
use candle_transformers::models::bert::{BertModel, Config};
use std::path::Path;
use tokenizers::{
    EncodeInput, PaddingParams, PaddingStrategy, Tokenizer, TruncationParams, TruncationStrategy,
};

/// Longest query-and-passage pair in tokens (word pieces with `[CLS]` and two `[SEP]`); the
/// longer side is cut first. Memory passages are short (a dialog turn is ~30 tokens), so 256
/// cuts nothing in practice and bounds the cost of a pasted page.
pub const MAX_PAIR_TOKENS: usize = 256;

/// Pairs run through the model together (padded to the longest of the batch).
const BATCH: usize = 16;

fn err(what: impl std::fmt::Display) -> EncoderError {
    EncoderError(what.to_string())
}

/// A loaded cross-encoder (about 90 MB of f32 weights for a 6-layer MiniLM).
pub struct CrossEncoder {
    bert: BertModel,
    pooler: Linear,
    classifier: Linear,
    tokenizer: Tokenizer,
}

impl CrossEncoder {
    /// Loads the model from `dir` (see the module docs for the files). Errors name the file
    /// that is missing, unreadable or does not fit: a config that is not BERT or has more
    /// than one label, a damaged safetensors file, a tokenizer that is not JSON.
    pub fn load(dir: &Path) -> Result<Self, EncoderError> {
        let read = |name: &str| {
            std::fs::read(dir.join(name))
                .map_err(|e| err(format!("cannot read {}: {e}", dir.join(name).display())))
        };
        let raw = read("config.json")?;
        let config: Config = serde_json::from_slice(&raw).map_err(|e| {
            err(format!(
                "config.json in {} is not a BERT config: {e}",
                dir.display()
            ))
        })?;
        // A classifier with several labels (e.g. NLI) scores something else than relevance.
        let labels = serde_json::from_slice::<serde_json::Value>(&raw)
            .ok()
            .and_then(|v| {
                v.get("id2label")
                    .and_then(|l| l.as_object().map(|o| o.len()))
            })
            .unwrap_or(1);
        if labels != 1 {
            return Err(err(format!(
                "config.json in {} describes a classifier with {labels} labels; a reranker has one",
                dir.display()
            )));
        }
        let mut tokenizer = Tokenizer::from_bytes(read("tokenizer.json")?).map_err(|e| {
            err(format!(
                "tokenizer.json in {} is not a tokenizer: {e}",
                dir.display()
            ))
        })?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_PAIR_TOKENS,
                strategy: TruncationStrategy::LongestFirst,
                ..Default::default()
            }))
            .map_err(err)?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..Default::default()
        }));
        let damaged = |e: candle_core::Error| {
            err(format!(
                "model.safetensors in {} does not hold a BERT sequence classifier: {e}",
                dir.display()
            ))
        };
        let vb = VarBuilder::from_buffered_safetensors(
            read("model.safetensors")?,
            DType::F32,
            &Device::Cpu,
        )
        .map_err(|e| {
            err(format!(
                "model.safetensors in {} is damaged: {e}",
                dir.display()
            ))
        })?;
        let bert = BertModel::load(vb.clone(), &config).map_err(damaged)?;
        let h = config.hidden_size;
        let pooler = linear(h, h, vb.pp("bert.pooler.dense")).map_err(damaged)?;
        let classifier = linear(h, 1, vb.pp("classifier")).map_err(damaged)?;
        Ok(Self {
            bert,
            pooler,
            classifier,
            tokenizer,
        })
    }

    /// The model's relevance logit of each passage for `query`, in input order (higher is more
    /// relevant; MS MARCO cross-encoders give about −11 to +11). CPU-bound: call it off the
    /// async runtime. Errors only on a tokenizer or tensor failure.
    pub fn score(&self, query: &str, passages: &[String]) -> Result<Vec<f32>, EncoderError> {
        let mut order: Vec<usize> = (0..passages.len()).collect();
        order.sort_by_key(|&i| passages[i].len());
        let mut out = vec![0.0f32; passages.len()];
        for chunk in order.chunks(BATCH) {
            let pairs: Vec<EncodeInput> = chunk
                .iter()
                .map(|&i| (query, passages[i].as_str()).into())
                .collect();
            for (&i, s) in chunk.iter().zip(self.score_batch(pairs)?) {
                out[i] = s;
            }
        }
        Ok(out)
    }

    fn score_batch(&self, pairs: Vec<EncodeInput>) -> Result<Vec<f32>, EncoderError> {
        let encodings = self.tokenizer.encode_batch(pairs, true).map_err(err)?;
        let device = &self.bert.device;
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
        let hidden = self.bert.forward(&ids, &types, Some(&mask)).map_err(err)?;
        // BERT's pooler: the [CLS] state through a dense layer and tanh; then the one-logit
        // classifier (dropout is off at inference).
        let cls = hidden.i((.., 0, ..)).map_err(err)?;
        let pooled = self
            .pooler
            .forward(&cls)
            .and_then(|t| t.tanh())
            .map_err(err)?;
        let logits = self.classifier.forward(&pooled).map_err(err)?;
        logits.squeeze(1).and_then(|t| t.to_vec1()).map_err(err)
    }
}

/// A tiny cross-encoder with made-up weights, for tests of the loading code and of the search
/// pipeline around it (it ranks nothing meaningfully). Written as a real weights folder:
/// `config.json` (BERT, hidden size 32, 2 layers), `model.safetensors`, and the given
/// `tokenizer.json` (a BERT WordPiece tokenizer, e.g. all-MiniLM-L6-v2's).
pub mod fixture {
    use candle_core::{Device, Tensor};
    use std::collections::HashMap;
    use std::path::Path;

    const HIDDEN: usize = 32;
    const LAYERS: usize = 2;
    const INTERMEDIATE: usize = 64;
    const POSITIONS: usize = 512;

    /// How the classification head is set.
    #[derive(Clone, Copy, Debug)]
    pub enum Head {
        /// Made-up weights everywhere: scores differ by text, deterministically.
        Random,
        /// Pooler weights zero with bias `b`, classifier weights one with bias zero: every
        /// pair scores exactly `32 · tanh(b)`, whatever its text.
        Constant(f32),
    }

    /// Writes the folder into `dir` with the tokenizer file `tokenizer`. Errors: I/O.
    pub fn write(dir: &Path, tokenizer: &Path, head: Head) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::copy(tokenizer, dir.join("tokenizer.json"))?;
        let vocab = serde_json::from_slice::<serde_json::Value>(&std::fs::read(tokenizer)?)
            .ok()
            .and_then(|t| t["model"]["vocab"].as_object().map(|v| v.len()))
            .unwrap_or(30_522);
        let config = serde_json::json!({
            "architectures": ["BertForSequenceClassification"],
            "model_type": "bert",
            "vocab_size": vocab,
            "hidden_size": HIDDEN,
            "num_hidden_layers": LAYERS,
            "num_attention_heads": 2,
            "intermediate_size": INTERMEDIATE,
            "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1,
            "attention_probs_dropout_prob": 0.1,
            "max_position_embeddings": POSITIONS,
            "type_vocab_size": 2,
            "initializer_range": 0.02,
            "layer_norm_eps": 1e-12,
            "pad_token_id": 0,
            "position_embedding_type": "absolute",
            "use_cache": true,
            "classifier_dropout": null,
            "id2label": {"0": "LABEL_0"},
        });
        std::fs::write(dir.join("config.json"), config.to_string())?;
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut random = |shape: &[usize]| {
            let n: usize = shape.iter().product();
            let v: Vec<f32> = (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed % 2001) as f32 / 10_000.0 - 0.1
                })
                .collect();
            Tensor::from_vec(v, shape, &Device::Cpu).expect("tensor")
        };
        let fill = |shape: &[usize], x: f32| Tensor::full(x, shape, &Device::Cpu).expect("tensor");
        let mut t: HashMap<String, Tensor> = HashMap::new();
        let e = "bert.embeddings";
        t.insert(
            format!("{e}.word_embeddings.weight"),
            random(&[vocab, HIDDEN]),
        );
        t.insert(
            format!("{e}.position_embeddings.weight"),
            random(&[POSITIONS, HIDDEN]),
        );
        t.insert(
            format!("{e}.token_type_embeddings.weight"),
            random(&[2, HIDDEN]),
        );
        t.insert(format!("{e}.LayerNorm.weight"), fill(&[HIDDEN], 1.0));
        t.insert(format!("{e}.LayerNorm.bias"), fill(&[HIDDEN], 0.0));
        for l in 0..LAYERS {
            let p = format!("bert.encoder.layer.{l}");
            for name in [
                "attention.self.query",
                "attention.self.key",
                "attention.self.value",
                "attention.output.dense",
            ] {
                t.insert(format!("{p}.{name}.weight"), random(&[HIDDEN, HIDDEN]));
                t.insert(format!("{p}.{name}.bias"), random(&[HIDDEN]));
            }
            t.insert(
                format!("{p}.intermediate.dense.weight"),
                random(&[INTERMEDIATE, HIDDEN]),
            );
            t.insert(
                format!("{p}.intermediate.dense.bias"),
                random(&[INTERMEDIATE]),
            );
            t.insert(
                format!("{p}.output.dense.weight"),
                random(&[HIDDEN, INTERMEDIATE]),
            );
            t.insert(format!("{p}.output.dense.bias"), random(&[HIDDEN]));
            for norm in ["attention.output.LayerNorm", "output.LayerNorm"] {
                t.insert(format!("{p}.{norm}.weight"), fill(&[HIDDEN], 1.0));
                t.insert(format!("{p}.{norm}.bias"), fill(&[HIDDEN], 0.0));
            }
        }
        let (pw, pb, cw, cb) = match head {
            Head::Random => (
                random(&[HIDDEN, HIDDEN]),
                random(&[HIDDEN]),
                random(&[1, HIDDEN]).affine(20.0, 0.0).expect("scale"),
                fill(&[1], 0.0),
            ),
            Head::Constant(b) => (
                fill(&[HIDDEN, HIDDEN], 0.0),
                fill(&[HIDDEN], b),
                fill(&[1, HIDDEN], 1.0),
                fill(&[1], 0.0),
            ),
        };
        t.insert("bert.pooler.dense.weight".into(), pw);
        t.insert("bert.pooler.dense.bias".into(), pb);
        t.insert("classifier.weight".into(), cw);
        t.insert("classifier.bias".into(), cb);
        candle_core::safetensors::save(&t, dir.join("model.safetensors"))
            .map_err(std::io::Error::other)
    }
}
