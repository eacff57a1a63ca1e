//! Folders, files and the agents' file state in Letta's shapes (`Folder`, `FileMetadata`,
//! `Passage` of a folder, `AgentFileAttachment`).

use crate::shapes::{embedding_config_of, time};
use engram_core::{AgentFile, FileChunk, Folder, FolderFile};
use serde_json::{Value, json};

/// Letta's `Folder` (and `Source`, its older name).
pub fn folder(f: &Folder) -> Value {
    json!({
        "id": f.id,
        "name": f.name,
        "description": f.description,
        "instructions": f.instructions,
        "metadata": {},
        "embedding_config": embedding_config_of(f.embedding.as_ref()),
        "created_at": time(&f.created_at),
        "updated_at": time(&f.updated_at),
    })
}

/// Letta's `FileMetadata`; `processing_status` is `pending` … `completed` or `error` with
/// `error_message`. `content` is the extracted text when asked for.
pub fn file(f: &FolderFile, content: Option<&str>) -> Value {
    let base = f.name.rsplit('/').next().unwrap_or(&f.name);
    json!({
        "id": f.id,
        "source_id": f.folder_id,
        "folder_id": f.folder_id,
        "file_name": f.name,
        "original_file_name": base,
        "file_path": null,
        "file_type": f.mime,
        "file_size": f.size,
        "processing_status": f.status.as_str(),
        "error_message": f.error,
        "total_chunks": f.chunks,
        "chunks_embedded": if f.status == engram_core::FileStatus::Completed { f.chunks } else { 0 },
        "content": content,
        "created_at": time(&f.created_at),
        "updated_at": time(&f.updated_at),
        "engram": {"pages": f.pages, "lines": f.lines, "sha256": f.sha256},
    })
}

/// A folder's passage as Letta's `Passage`, with where it came from in `metadata`.
pub fn passage(folder: &Folder, file_name: &str, c: &FileChunk) -> Value {
    json!({
        "id": format!("{}:{}", c.file_id, c.seq),
        "text": c.text,
        "source_id": folder.id,
        "file_id": c.file_id,
        "file_name": file_name,
        "embedding": null,
        "embedding_config": embedding_config_of(folder.embedding.as_ref()),
        "metadata": {
            "page": c.provenance.page,
            "heading": c.provenance.heading,
            "line_start": c.provenance.line_start,
            "line_end": c.provenance.line_end,
            "citation": c.provenance.cite(file_name),
        },
        "tags": [],
        "created_at": time(&folder.created_at),
    })
}

/// An agent's state of one file, as Letta's `AgentFileAttachment`.
pub fn agent_file(f: &AgentFile) -> Value {
    let folder_name = f.file_name.split_once('/').map_or("", |(d, _)| d);
    let (start, end) = if f.is_open {
        (Some(f.offset), Some(f.offset + f.length.saturating_sub(1)))
    } else {
        (None, None)
    };
    json!({
        "id": f.file_id,
        "file_id": f.file_id,
        "file_name": f.file_name,
        "folder_id": f.folder_id,
        "folder_name": folder_name,
        "is_open": f.is_open,
        "start_line": start,
        "end_line": end,
        "last_accessed_at": f.last_accessed_at.as_ref().map(time),
        "visible_content": null,
    })
}
