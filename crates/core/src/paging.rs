//! Letta's cursor paging over a list held whole in memory: the REST routes over lists the
//! engine returns whole, and a shared server's lists the storage interface gives in full,
//! cut the way the SQLite queries cut theirs.

/// The page of `items` (oldest first) in the list's order — reversed unless `ascending` —
/// after the item `after` and before the item `before` (the `limit` nearest it), at most
/// `limit`. A cursor that is not in the list gives an empty page, as on SQLite.
pub fn page<T>(
    mut items: Vec<T>,
    id: impl Fn(&T) -> &str,
    after: Option<&str>,
    before: Option<&str>,
    limit: usize,
    ascending: bool,
) -> Vec<T> {
    if !ascending {
        items.reverse();
    }
    if let Some(after) = after {
        match items.iter().position(|x| id(x) == after) {
            Some(i) => drop(items.drain(..=i)),
            None => return Vec::new(),
        }
    }
    if let Some(before) = before {
        match items.iter().position(|x| id(x) == before) {
            Some(i) => {
                items.truncate(i);
                let skip = items.len().saturating_sub(limit);
                items.drain(..skip);
            }
            None => return Vec::new(),
        }
    }
    items.truncate(limit);
    items
}

#[cfg(test)]
mod tests {
    use super::page;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    fn id(x: &String) -> &str {
        x
    }

    #[test]
    fn cursors_limit_and_order_cut_as_sql_does() {
        let all = ids(&["a", "b", "c", "d", "e"]);
        assert_eq!(page(all.clone(), id, None, None, 2, true), ["a", "b"]);
        assert_eq!(page(all.clone(), id, None, None, 2, false), ["e", "d"]);
        assert_eq!(
            page(all.clone(), id, Some("b"), None, 10, true),
            ["c", "d", "e"]
        );
        assert_eq!(page(all.clone(), id, None, Some("d"), 2, true), ["b", "c"]);
        assert_eq!(
            page(all.clone(), id, Some("d"), None, 10, false),
            ["c", "b", "a"]
        );
        assert!(page(all.clone(), id, Some("zz"), None, 10, true).is_empty());
        assert!(page(all, id, None, Some("zz"), 10, true).is_empty());
    }
}
