//! An image's URL: its whole text goes only into the download request; wherever it is
//! shown or stored (errors, `failure.json`, `plan`, reports, `Debug`), it is shown
//! without userinfo, query or fragment, which may carry credentials or signatures.

use std::fmt;

use serde::{Serialize, Serializer};

/// What replaces a URL's userinfo, query or fragment where it is shown.
pub const REDACTED: &str = "[redacted]";

#[derive(Clone, PartialEq, Eq)]
pub struct ImageUrl(String);

impl ImageUrl {
    pub fn new(url: impl Into<String>) -> ImageUrl {
        ImageUrl(url.into())
    }

    /// The URL as declared, credentials and all: for the request, and nothing else.
    pub fn for_download(&self) -> &str {
        &self.0
    }

    /// The URL as it may be shown (`redact`).
    pub fn shown(&self) -> String {
        redact(&self.0)
    }

    /// `text` (a message from a library that may quote the URL) with the URL and its
    /// secret parts replaced by what `shown` gives.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.replace(&self.0, &self.shown());
        let (userinfo, query) = secret_parts(&self.0);
        let mut parts: Vec<&str> = userinfo.into_iter().chain(query).collect();
        if let Some(pass) = userinfo.and_then(|u| u.split_once(':')).map(|(_, p)| p) {
            parts.push(pass);
        }
        // Longest first, so a part's own pieces do not break it up first. Very short
        // ones are left: replacing `a` everywhere would garble the message.
        parts.sort_by_key(|p| std::cmp::Reverse(p.len()));
        for p in parts.into_iter().filter(|p| p.len() >= 4) {
            out = out.replace(p, REDACTED);
        }
        out
    }
}

/// The userinfo (before the host's `@`) and the query and fragment (after `?` or `#`)
/// of a URL, where it has them.
fn secret_parts(url: &str) -> (Option<&str>, Option<&str>) {
    let (start, rest) = match url.find("://") {
        Some(i) => (i + 3, &url[i + 3..]),
        None => (0, url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let userinfo = rest[..end].rfind('@').map(|at| &rest[..at]);
    let query = url[start..]
        .find(['?', '#'])
        .map(|q| &url[start + q + 1..])
        .filter(|q| !q.is_empty());
    (userinfo, query)
}

/// `scheme://[userinfo@]host[:port]/path[?query][#fragment]` shown as
/// `scheme://[redacted]@host[:port]/path?[redacted]`: the host and path say which file
/// it is; userinfo, query and fragment are never shown.
pub fn redact(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => (&url[..i + 3], &url[i + 3..]),
        None => ("", url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(end);
    let host = match authority.rfind('@') {
        Some(at) if !scheme.is_empty() => format!("{REDACTED}@{}", &authority[at + 1..]),
        _ => authority.to_string(),
    };
    let (path, tail) = match after.find(['?', '#']) {
        Some(q) => (&after[..q], Some(&after[q..=q])),
        None => (after, None),
    };
    let tail = tail
        .map(|mark| format!("{mark}{REDACTED}"))
        .unwrap_or_default();
    format!("{scheme}{host}{path}{tail}")
}

impl fmt::Display for ImageUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown())
    }
}

impl fmt::Debug for ImageUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.shown())
    }
}

impl Serialize for ImageUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.shown())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_query_and_fragment_are_never_shown() {
        let u =
            ImageUrl::new("https://alice:s3cret@dl.example:8443/os/a.img.xz?sig=t0ken&x=1#frag");
        assert_eq!(
            u.to_string(),
            "https://[redacted]@dl.example:8443/os/a.img.xz?[redacted]"
        );
        assert_eq!(
            format!("{u:?}"),
            "\"https://[redacted]@dl.example:8443/os/a.img.xz?[redacted]\""
        );
        assert_eq!(
            serde_json::to_string(&u).unwrap(),
            "\"https://[redacted]@dl.example:8443/os/a.img.xz?[redacted]\""
        );
        assert_eq!(
            u.for_download(),
            "https://alice:s3cret@dl.example:8443/os/a.img.xz?sig=t0ken&x=1#frag"
        );
        assert_eq!(redact("http://h/a.img"), "http://h/a.img");
        assert_eq!(redact("http://h/a.img#top"), "http://h/a.img#[redacted]");
        assert_eq!(redact("http://u@h?q"), "http://[redacted]@h?[redacted]");
        assert_eq!(redact("file:///srv/a@b.img"), "file:///srv/a@b.img");
        // An `@` in the path is no userinfo.
        assert_eq!(redact("http://h/p@q/a.img"), "http://h/p@q/a.img");
    }

    #[test]
    fn a_message_quoting_the_url_or_its_parts_is_scrubbed() {
        let u = ImageUrl::new("http://alice:s3cret@h/a.img?sig=t0ken");
        let said = u.scrub(&format!(
            "bad uri {} (password s3cret, query sig=t0ken)",
            u.for_download()
        ));
        assert!(
            !said.contains("s3cret") && !said.contains("t0ken"),
            "{said}"
        );
        assert!(
            said.contains("http://[redacted]@h/a.img?[redacted]"),
            "{said}"
        );
    }
}
