//! Letta's cursor paging (`before`, `after`, `limit`, order) over lists the engine returns
//! whole. The 1.x SDKs page by asking for `after=<last id>` until a page comes back empty, so
//! every list route must honour the cursors.

use serde::{Deserialize, Deserializer};
use std::str::FromStr;

/// Reads a query value through its text: `#[serde(flatten)]` hands every query value over as
/// a string, so numbers and booleans are parsed here.
pub fn parsed<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: std::fmt::Display,
{
    Option::<String>::deserialize(d)?
        .map(|s| s.parse::<T>().map_err(serde::de::Error::custom))
        .transpose()
}

/// Cursor parameters common to Letta's list routes.
#[derive(Debug, Default, Deserialize)]
pub struct Cursor {
    /// Items after this id, in the list's order.
    pub after: Option<String>,
    /// Items before this id, in the list's order.
    pub before: Option<String>,
    /// At most this many items.
    #[serde(default, deserialize_with = "parsed")]
    pub limit: Option<usize>,
    /// `asc` or `desc` (1.x).
    pub order: Option<String>,
    /// `true` for oldest first (0.1.x spelling of `order`).
    #[serde(default, deserialize_with = "parsed")]
    pub ascending: Option<bool>,
}

impl Cursor {
    /// Whether the caller asked for newest first; `default_desc` when it did not say.
    pub fn descending(&self, default_desc: bool) -> bool {
        match (self.order.as_deref(), self.ascending) {
            (Some(o), _) => o.eq_ignore_ascii_case("desc"),
            (None, Some(asc)) => !asc,
            (None, None) => default_desc,
        }
    }
}

/// Applies `cursor` to `items` (oldest first): reverses for newest first, keeps what lies
/// between the cursors, then the first `limit` (default `default_limit`). An unknown cursor id
/// yields an empty page.
pub fn page<T>(
    items: Vec<T>,
    id: impl Fn(&T) -> &str,
    cursor: &Cursor,
    default_desc: bool,
    default_limit: usize,
) -> Vec<T> {
    engram_core::paging::page(
        items,
        id,
        cursor.after.as_deref(),
        cursor.before.as_deref(),
        cursor.limit.unwrap_or(default_limit),
        !cursor.descending(default_desc),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&'static str]) -> Vec<&'static str> {
        v.to_vec()
    }

    #[test]
    fn forward_paging_ends_with_an_empty_page() {
        let all = ids(&["a", "b", "c"]);
        let c = |after: Option<&str>| Cursor {
            after: after.map(str::to_owned),
            limit: Some(2),
            ..Cursor::default()
        };
        assert_eq!(page(all.clone(), |s| s, &c(None), false, 50), ["a", "b"]);
        assert_eq!(page(all.clone(), |s| s, &c(Some("b")), false, 50), ["c"]);
        assert!(page(all.clone(), |s| s, &c(Some("c")), false, 50).is_empty());
        assert!(page(all, |s| s, &c(Some("zz")), false, 50).is_empty());
    }

    #[test]
    fn before_takes_the_nearest_page_and_desc_reverses() {
        let all = ids(&["a", "b", "c", "d"]);
        let c = Cursor {
            before: Some("d".into()),
            limit: Some(2),
            ..Cursor::default()
        };
        assert_eq!(page(all.clone(), |s| s, &c, false, 50), ["b", "c"]);
        let desc = Cursor {
            order: Some("desc".into()),
            ..Cursor::default()
        };
        assert_eq!(page(all, |s| s, &desc, false, 50), ["d", "c", "b", "a"]);
    }
}
