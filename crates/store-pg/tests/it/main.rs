//! The PostgreSQL store's tests, on a real cluster the tests start (engram-test-postgres):
//! the storage contract run against both backends, and what only PostgreSQL has (migrations
//! under an advisory lock).

mod contract;
mod harness;
mod migrations;
mod pg_only;
