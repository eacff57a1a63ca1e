//! Integration tests: the real provider code against the scripted mock model server
//! (`engram-mock-llm`) and, for shapes the mock does not produce, small axum handlers.

mod anthropic;
mod embeddings;
mod faults;
mod openai;
mod recover;
mod support;
