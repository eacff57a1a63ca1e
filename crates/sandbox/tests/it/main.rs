//! Tests of sandbox, one binary (each module one concern).

mod escape;
mod stdio;
mod support;
