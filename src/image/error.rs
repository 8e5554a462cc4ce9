//! Why an image could not be fetched, verified or read: one typed error for the whole of
//! `image`, each variant rendering as one line a user can act on.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::model::ImageUrl;

/// Where an image comes from, as it may be shown and stored: a URL only redacted
/// (`ImageUrl`), so no error, `failure.json`, plan or report can hold its credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    Url(ImageUrl),
    Path(PathBuf),
    Installed,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Url(u) => u.fmt(f),
            Origin::Path(p) => p.display().fmt(f),
            Origin::Installed => f.write_str("installed = true"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The file's bytes are not the ones the scenario declared: nothing may be flashed.
    #[error(
        "image `{name}`: sha256 mismatch for {origin}: the scenario declares {expected}, the file is {actual}; nothing was flashed"
    )]
    Mismatch {
        name: String,
        origin: Origin,
        expected: String,
        actual: String,
    },
    #[error("image `{name}`: {path}: {source}")]
    Io {
        name: String,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A local image that is not there, with the path as the user wrote it.
    #[error("image `{name}`: {path}: no such file")]
    NotFound { name: String, path: PathBuf },
    #[error("image `{name}`: unsupported source `{origin}`: {why}")]
    BadSource {
        name: String,
        origin: Origin,
        why: String,
    },
    /// No connection could be made at all: the machine is offline, or the host is wrong.
    #[error("image `{name}`: cannot download {url}: {cause}")]
    Network {
        name: String,
        url: ImageUrl,
        cause: String,
    },
    /// The server answered, but not with the image.
    #[error("image `{name}`: {url}: {why}")]
    Http {
        name: String,
        url: ImageUrl,
        why: String,
    },
    #[error(
        "image `{name}`: not enough space in the image cache {dir}: {need} bytes needed, {free} free"
    )]
    NoSpace {
        name: String,
        dir: PathBuf,
        need: u64,
        free: u64,
    },
    /// What the bytes are disagrees with what the name says, or they are no image at all.
    #[error("image `{name}`: {why}")]
    Format { name: String, why: String },
    /// A zip must hold exactly one `.img`.
    #[error("image `{name}`: the zip archive {why}")]
    Archive { name: String, why: String },
    /// The compressed data is damaged or cut short.
    #[error("image `{name}`: corrupt {format} data: {cause}")]
    Corrupt {
        name: String,
        format: &'static str,
        cause: String,
    },
    /// The decompressed image outgrew its bound (the target device, or the cap).
    #[error(
        "image `{name}`: decompresses to more than {max} bytes (the most it may be here); refused"
    )]
    TooLarge { name: String, max: u64 },
    /// The image cache, or a file in it, is not benchpipe's own (a link, another
    /// user's, writable by others): nothing is written there.
    #[error("image `{name}`: refusing the image cache: {why}")]
    Cache { name: String, why: String },
    /// The first-boot preparation could not be written into the image's boot partition.
    #[error("image `{name}`: first-boot preparation (kind {kind}): {why}")]
    Prepare {
        name: String,
        kind: &'static str,
        why: String,
    },
    /// A verified local file was changed before it was read.
    #[error("image `{name}`: {path} changed after it was verified ({why}); fetch it again")]
    Changed {
        name: String,
        path: PathBuf,
        why: String,
    },
}

impl ImageError {
    pub(crate) fn io(name: &str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        ImageError::Io {
            name: name.to_string(),
            path: path.into(),
            source,
        }
    }

    /// A download that could not be made; `cause` is scrubbed of the URL's secrets.
    pub(crate) fn network(name: &str, url: &ImageUrl, cause: &str) -> Self {
        ImageError::Network {
            name: name.to_string(),
            url: url.clone(),
            cause: url.scrub(cause),
        }
    }

    /// A server that did not answer with the image; `why` is scrubbed as in `network`.
    pub(crate) fn http(name: &str, url: &ImageUrl, why: &str) -> Self {
        ImageError::Http {
            name: name.to_string(),
            url: url.clone(),
            why: url.scrub(why),
        }
    }

    /// The cache refused (`crate::owned`): I/O errors stay I/O errors of their path.
    pub(crate) fn cache(name: &str, e: crate::owned::OwnedError) -> Self {
        match e {
            crate::owned::OwnedError::Io { path, source } => ImageError::io(name, path, source),
            refused @ crate::owned::OwnedError::Refused(_) => ImageError::Cache {
                name: name.to_string(),
                why: refused.to_string(),
            },
        }
    }

    /// An error a decompressing stream returns from `read`, kept whole inside the
    /// `io::Error` so a caller can get it back with [`ImageError::from_io`].
    pub(crate) fn into_io(self) -> io::Error {
        io::Error::other(self)
    }

    /// The `ImageError` inside an `io::Error` from an image stream, if there is one.
    pub fn from_io(e: &io::Error) -> Option<&ImageError> {
        e.get_ref()?.downcast_ref::<ImageError>()
    }
}
