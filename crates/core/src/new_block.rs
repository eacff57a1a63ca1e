//! Building the block a backend stores from a [`NewBlock`]: its own file because it answers
//! with [`Error`](crate::Error), which itself names [`Block`] (the two would import each other).

use crate::memory::{
    Block, DEFAULT_BLOCK_LIMIT, NewBlock, check_label, check_limit, default_description,
};
use crate::{BlockId, Timestamp};

impl NewBlock {
    /// The block to store (fresh id, version 1, created and updated at `now`): the label
    /// checked, the default limit ([`DEFAULT_BLOCK_LIMIT`], raised to fit the value) and the
    /// default description filled in. Every backend builds new blocks through this.
    ///
    /// Errors: [`Error::Invalid`](crate::Error::Invalid) for a bad label, or a value over an
    /// explicit limit (characters).
    pub fn to_block(&self, now: Timestamp) -> crate::Result<Block> {
        check_label(&self.label).map_err(|e| {
            crate::Error::invalid(format!("invalid block label {:?}: {e}", self.label))
        })?;
        let limit = match self.limit {
            Some(limit) => {
                check_limit("", &self.value, limit)
                    .map_err(|e| crate::Error::Invalid(e.to_string()))?;
                limit
            }
            None => DEFAULT_BLOCK_LIMIT.max(self.value.chars().count()),
        };
        Ok(Block {
            id: BlockId::new(),
            label: self.label.clone(),
            value: self.value.clone(),
            limit,
            description: self
                .description
                .clone()
                .unwrap_or_else(|| default_description(&self.label)),
            read_only: self.read_only,
            version: 1,
            created_at: now,
            updated_at: now,
        })
    }
}
