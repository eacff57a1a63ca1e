//! Tests of tools, one binary (each module one concern).

mod hostile;
mod python;
