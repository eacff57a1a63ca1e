//! Which reader a file goes to: by its bytes' signature first (PDF, zip), then its extension.

/// A format Engram reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Kind {
    /// Portable Document Format (its text layer).
    Pdf,
    /// Word's Office Open XML.
    Docx,
    /// Markdown.
    Markdown,
    /// HTML.
    Html,
    /// Plain text (and anything not recognised).
    #[default]
    Text,
    /// Source code.
    Code,
    /// Comma-separated values.
    Csv,
    /// JSON (and JSON Lines).
    Json,
}

const CODE: &[&str] = &[
    "rs", "py", "js", "ts", "tsx", "jsx", "go", "c", "h", "cc", "cpp", "hpp", "java", "kt", "rb",
    "php", "sh", "bash", "zsh", "swift", "cs", "scala", "lua", "sql", "toml", "yaml", "yml", "ini",
    "cfg", "xml", "svelte", "vue", "css", "scss", "r", "pl", "hs", "ml", "ex", "exs",
];

impl Kind {
    /// The kind of a file named `name` holding `bytes`.
    pub fn detect(name: &str, bytes: &[u8]) -> Kind {
        let ext = name
            .rsplit_once('.')
            .map(|(_, e)| e.to_ascii_lowercase())
            .unwrap_or_default();
        if bytes.starts_with(b"%PDF-") || ext == "pdf" {
            return Kind::Pdf;
        }
        if ext == "docx" {
            return Kind::Docx;
        }
        match ext.as_str() {
            "md" | "markdown" | "mdx" => Kind::Markdown,
            "html" | "htm" | "xhtml" => Kind::Html,
            "csv" | "tsv" => Kind::Csv,
            "json" | "jsonl" | "ndjson" => Kind::Json,
            e if CODE.contains(&e) => Kind::Code,
            _ => Kind::Text,
        }
    }

    /// Whether files of this kind can be read as a stream ([`crate::stream`]): the text
    /// kinds. PDF, DOCX and HTML are read whole, up to [`crate::MAX_FILE_BYTES`].
    pub fn streams(self) -> bool {
        matches!(
            self,
            Kind::Markdown | Kind::Text | Kind::Code | Kind::Csv | Kind::Json
        )
    }

    /// Its media type.
    pub fn mime(self) -> &'static str {
        match self {
            Kind::Pdf => "application/pdf",
            Kind::Docx => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            Kind::Markdown => "text/markdown",
            Kind::Html => "text/html",
            Kind::Text => "text/plain",
            Kind::Code => "text/x-source",
            Kind::Csv => "text/csv",
            Kind::Json => "application/json",
        }
    }

    /// A short name for messages (`PDF`, `DOCX`, …).
    pub fn label(self) -> &'static str {
        match self {
            Kind::Pdf => "PDF",
            Kind::Docx => "DOCX",
            Kind::Markdown => "Markdown",
            Kind::Html => "HTML",
            Kind::Text => "text",
            Kind::Code => "source code",
            Kind::Csv => "CSV",
            Kind::Json => "JSON",
        }
    }
}
