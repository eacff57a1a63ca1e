//! Harness shared by Engram's whole-system tests and benchmarks.
