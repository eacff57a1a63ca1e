//! Deterministic embeddings: a hashed bag of lowercased word stems, L2-normalised, so texts
//! that share words come out similar and the same text always gives the same vector.

use serde_json::{Value, json};

/// Default vector length (requests may ask for another with `dimensions`).
pub const EMBEDDING_DIMS: usize = 256;

/// Words too common to say anything about similarity.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "do", "for", "from", "has", "have",
    "he", "her", "his", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "she",
    "so", "that", "the", "their", "them", "they", "this", "to", "was", "we", "were", "what", "who",
    "with", "you", "your",
];

/// A crude stemmer: enough that "pies"/"pie" and "loves"/"loved"/"loving" land together.
fn stem(word: &str) -> &str {
    for (suffix, min_len) in [("ing", 6), ("ed", 5), ("es", 5), ("s", 4)] {
        if word.len() >= min_len && word.ends_with(suffix) && !word.ends_with("ss") {
            return &word[..word.len() - suffix.len()];
        }
    }
    word
}

/// FNV-1a: stable across runs and platforms, unlike std's randomised hasher.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The embedding of `text` with `dims` components (at least 1), unit length. Text without any
/// content word gets a fixed unit vector (first component 1) rather than zeros, so cosine
/// similarity never divides by zero.
pub fn embed(text: &str, dims: usize) -> Vec<f32> {
    let dims = dims.max(1);
    let mut v = vec![0f32; dims];
    let lower = text.to_lowercase();
    for word in lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !STOP_WORDS.contains(w))
    {
        let slot = (fnv1a(stem(word)) % dims as u64) as usize;
        v[slot] += 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 {
        v[0] = 1.0;
    } else {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// Answers an OpenAI `/v1/embeddings` body, or says what is wrong with it.
pub(crate) fn respond(body: &Value) -> Result<Value, String> {
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .ok_or("`model` is missing")?;
    let inputs: Vec<String> = match body.get("input") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect::<Option<_>>()
            .ok_or(
                "`input` must be a string or a list of strings (token arrays are not supported)",
            )?,
        _ => return Err("`input` is missing or empty".into()),
    };
    if inputs.iter().any(String::is_empty) {
        return Err("`input` contains an empty string, which OpenAI rejects".into());
    }
    let dims = match body.get("dimensions") {
        None | Some(Value::Null) => EMBEDDING_DIMS,
        Some(d) => d
            .as_u64()
            .filter(|&d| d > 0)
            .ok_or("`dimensions` must be a positive integer")? as usize,
    };
    let base64 = match body.get("encoding_format").and_then(Value::as_str) {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => return Err(format!("unknown encoding_format {other:?}")),
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(index, text)| {
            let v = embed(text, dims);
            let embedding = if base64 {
                json!(base64_f32(&v))
            } else {
                json!(v)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    let tokens: u64 = inputs
        .iter()
        .map(|t| crate::wire::tokens(t.chars().count()))
        .sum();
    Ok(json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }))
}

/// Little-endian f32s in standard base64, as OpenAI sends `encoding_format: "base64"` (the
/// default of the official Python SDK).
fn base64_f32(v: &[f32]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn shared_words_are_similar() {
        let a = embed("Alya loves cherry pie", EMBEDDING_DIMS);
        let b = embed("cherry pies are what Alya loved", EMBEDDING_DIMS);
        let c = embed("The quarterly tax report is due", EMBEDDING_DIMS);
        assert!((cos(&a, &a) - 1.0).abs() < 1e-5);
        assert!(cos(&a, &b) > 0.7, "{}", cos(&a, &b));
        assert!(cos(&a, &c) < 0.3, "{}", cos(&a, &c));
        assert_eq!(embed("", 8), vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    }

    #[test]
    fn base64_matches_known_encoding() {
        // 1.0f32 = 00 00 80 3f
        assert_eq!(base64_f32(&[1.0]), "AACAPw==");
        assert_eq!(base64_f32(&[1.0, 1.0]), "AACAPwAAgD8=");
    }
}
