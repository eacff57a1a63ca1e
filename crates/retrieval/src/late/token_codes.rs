//! Token vectors kept small enough to store beside every passage, so late interaction reads a
//! candidate's vectors from disk instead of running the model over it at search time.
//!
//! A passage's word-piece vectors (`engram_embed::TokenVectors`) are unit vectors of the model's
//! dimension (384 floats, 1.5 kB each for all-MiniLM-L6-v2). Compressed vectors stand in for
//! them the way ColBERTv2 and PLAID store theirs (Santhanam et al., "ColBERTv2: Effective and
//! Efficient Retrieval via Lightweight Late Interaction", NAACL 2022): a few bits per
//! dimension. Three codes are offered; `benches/retrieval.rs` measures each against the
//! uncompressed vectors on the LoCoMo development set, and [`SHIPPED`] is the one chosen there.
//!
//! Layout of an encoded blob (little-endian): `[code: u8][dim: u16][count: u16]`, then per
//! token its `f32` scale (not for [`Code::Binary`]) and its packed components.

/// How each component of a unit token vector is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// One signed byte per component, scaled by the token's largest magnitude: `dim + 4`
    /// bytes a token (388 at 384 dimensions).
    I8,
    /// Four bits per component (`-7..=7`), scaled likewise: `dim / 2 + 4` bytes a token
    /// (196 at 384).
    I4,
    /// The sign of each component: `dim / 8` bytes a token (48 at 384). A decoded token is
    /// `±1/√dim` per component, again of unit length.
    Binary,
}

/// The code stored with passages: int8 (measured in `benches/retrieval.rs`; see
/// docs/retrieval.md).
pub const SHIPPED: Code = Code::I8;

/// Why a blob could not be decoded: it was cut short, or written by a code this build does
/// not know. The stored vectors are then recomputed, never trusted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("stored token vectors are unreadable: {0}")]
pub struct CodeError(&'static str);

const HEADER: usize = 5;

impl Code {
    fn tag(self) -> u8 {
        match self {
            Code::I8 => 1,
            Code::I4 => 2,
            Code::Binary => 3,
        }
    }

    fn from_tag(tag: u8) -> Option<Self> {
        match tag {
            1 => Some(Code::I8),
            2 => Some(Code::I4),
            3 => Some(Code::Binary),
            _ => None,
        }
    }

    /// Bytes one token of `dim` components takes.
    pub fn token_bytes(self, dim: usize) -> usize {
        match self {
            Code::I8 => 4 + dim,
            Code::I4 => 4 + dim.div_ceil(2),
            Code::Binary => dim.div_ceil(8),
        }
    }
}

/// Encodes `vectors` (all of one dimension, at most 65,535 of at most 65,535 components;
/// more tokens are cut, as the model never makes them) as `code`. An empty list encodes to a
/// header alone.
pub fn encode(code: Code, vectors: &[Vec<f32>]) -> Vec<u8> {
    let dim = vectors.first().map_or(0, Vec::len).min(u16::MAX as usize);
    let count = vectors.len().min(u16::MAX as usize);
    let mut out = Vec::with_capacity(HEADER + count * code.token_bytes(dim));
    out.push(code.tag());
    out.extend_from_slice(&(dim as u16).to_le_bytes());
    out.extend_from_slice(&(count as u16).to_le_bytes());
    for v in vectors.iter().take(count) {
        let v = &v[..dim.min(v.len())];
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        match code {
            Code::I8 => {
                let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
                out.extend_from_slice(&scale.to_le_bytes());
                out.extend(
                    v.iter()
                        .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8 as u8),
                );
                out.resize(out.len() + (dim - v.len()), 0);
            }
            Code::I4 => {
                let scale = if max > 0.0 { max / 7.0 } else { 1.0 };
                out.extend_from_slice(&scale.to_le_bytes());
                let nib = |i: usize| -> u8 {
                    let q = v
                        .get(i)
                        .map_or(0.0, |x| (x / scale).round().clamp(-7.0, 7.0));
                    (q as i8 as u8) & 0x0f
                };
                out.extend((0..dim.div_ceil(2)).map(|i| nib(2 * i) | (nib(2 * i + 1) << 4)));
            }
            Code::Binary => {
                out.extend((0..dim.div_ceil(8)).map(|byte| {
                    (0..8).fold(0u8, |acc, bit| {
                        let positive = v.get(byte * 8 + bit).is_some_and(|x| *x >= 0.0);
                        acc | (u8::from(positive) << bit)
                    })
                }));
            }
        }
    }
    out
}

/// Decodes a blob written by [`encode`] back to one vector per token (approximations of the
/// originals, each of the stored dimension). Errors: a cut-short blob or an unknown code.
pub fn decode(blob: &[u8]) -> Result<Vec<Vec<f32>>, CodeError> {
    let (head, body) = blob
        .split_at_checked(HEADER)
        .ok_or(CodeError("no header"))?;
    let [tag, d0, d1, c0, c1] = *head else {
        return Err(CodeError("no header"));
    };
    let code = Code::from_tag(tag).ok_or(CodeError("unknown code"))?;
    let dim = usize::from(u16::from_le_bytes([d0, d1]));
    let count = usize::from(u16::from_le_bytes([c0, c1]));
    let each = code.token_bytes(dim);
    if body.len() != count * each {
        return Err(CodeError("wrong length"));
    }
    Ok(body
        .chunks_exact(each.max(1))
        .take(count)
        .map(|t| decode_token(code, dim, t))
        .collect())
}

fn decode_token(code: Code, dim: usize, t: &[u8]) -> Vec<f32> {
    let scale = || f32::from_le_bytes([t[0], t[1], t[2], t[3]]);
    match code {
        Code::I8 => {
            let s = scale();
            t[4..].iter().map(|&b| f32::from(b as i8) * s).collect()
        }
        Code::I4 => {
            let s = scale();
            (0..dim)
                .map(|i| {
                    let byte = t[4 + i / 2];
                    let nib = if i % 2 == 0 { byte & 0x0f } else { byte >> 4 };
                    // Sign-extend the four bits.
                    f32::from(((nib << 4) as i8) >> 4) * s
                })
                .collect()
        }
        Code::Binary => {
            let unit = 1.0 / (dim.max(1) as f32).sqrt();
            (0..dim)
                .map(|i| {
                    if t[i / 8] >> (i % 8) & 1 == 1 {
                        unit
                    } else {
                        -unit
                    }
                })
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: Vec<f32>) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    fn sample() -> Vec<Vec<f32>> {
        (0..5)
            .map(|t| {
                unit(
                    (0..384)
                        .map(|i| ((i * 7 + t * 13) % 31) as f32 - 15.0)
                        .collect(),
                )
            })
            .collect()
    }

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn each_code_round_trips_close_to_the_original_at_its_stated_size() {
        let tokens = sample();
        for (code, min_cos) in [(Code::I8, 0.999), (Code::I4, 0.98), (Code::Binary, 0.75)] {
            let blob = encode(code, &tokens);
            assert_eq!(blob.len(), HEADER + tokens.len() * code.token_bytes(384));
            let back = decode(&blob).unwrap();
            assert_eq!(back.len(), tokens.len());
            for (a, b) in tokens.iter().zip(&back) {
                let cos = dot(a, b) / dot(b, b).sqrt();
                assert!(cos > min_cos, "{code:?}: cosine {cos}");
            }
        }
        assert_eq!(Code::I8.token_bytes(384), 388);
        assert_eq!(Code::I4.token_bytes(384), 196);
        assert_eq!(Code::Binary.token_bytes(384), 48);
    }

    #[test]
    fn nothing_encodes_to_nothing_and_damage_is_an_error() {
        assert_eq!(
            decode(&encode(Code::I8, &[])).unwrap(),
            Vec::<Vec<f32>>::new()
        );
        let blob = encode(Code::I8, &sample());
        assert_eq!(
            decode(&blob[..blob.len() - 1]),
            Err(CodeError("wrong length"))
        );
        assert_eq!(decode(&blob[..3]), Err(CodeError("no header")));
        let mut unknown = blob.clone();
        unknown[0] = 9;
        assert_eq!(decode(&unknown), Err(CodeError("unknown code")));
    }
}
