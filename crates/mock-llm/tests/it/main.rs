//! Tests of mock-llm, one binary (each module one concern).

mod anthropic;
mod binary;
mod brain;
mod common;
mod embeddings;
mod faults;
mod openai;
mod validation;
