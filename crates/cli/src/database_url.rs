//! A database's URL as messages show it.

/// `url` with its password left out, for messages (a `key=value` connection string is not
/// shown at all).
pub fn redacted(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.has_host() => {
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        _ => "given by --database".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::redacted;

    #[test]
    fn a_database_url_is_shown_without_its_password() {
        let shown = redacted("postgres://engram:s3cret@db.internal:5432/engram");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("engram@db.internal:5432/engram"), "{shown}");
        assert_eq!(redacted("host=db password=s3cret"), "given by --database");
    }
}
