//! Integration tests of the store against real SQLite files in temporary directories.

mod agents;
mod blocks;
mod created_pages;
mod file_pieces;
mod folders;
mod index_build;
mod index_release;
mod labels;
mod mcp;
mod message_pages;
mod message_vectors;
mod messages;
mod paging;
mod passages;
mod rollback;
mod scale;
mod schema;
mod search;
mod sleeptime;
mod steps;
mod support;
mod tag_index;
mod tools;
mod trust;
mod versions;
