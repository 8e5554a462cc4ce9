//! Proof that a board runs the image its cells name: the scenario's `expect` (its
//! `/etc/os-release` fields and `uname -m`) against the board, before any of those cells
//! is measured.

use std::time::Duration;

use super::worker::Worker;
use crate::failure::CellFailure;
use crate::image::expect;
use crate::model::{Expectations, ImageName};
use crate::transport::Transport;

/// os-release is a few hundred bytes; a board's file is never read past this.
const OS_RELEASE_MAX: usize = 64 * 1024;

impl Worker<'_> {
    /// Reads the board's os-release and `uname -m` and compares the expectations.
    pub(super) fn verify_image(
        &self,
        t: &mut dyn Transport,
        image: &ImageName,
        expected: &Expectations,
    ) -> Result<(), CellFailure> {
        self.phase(None, format!("verify image {image}"));
        let out = t.run(
            &format!("head -c {OS_RELEASE_MAX} /etc/os-release; echo @@uname; uname -m"),
            Some(Duration::from_secs(30)),
        )?;
        if !out.exit.success() {
            return Err(CellFailure::step_failed(
                format!("verify image {image}"),
                "head -c ... /etc/os-release; uname -m",
                &out.exit,
                &out.stderr_str(),
            ));
        }
        let text = out.stdout_str();
        let (os_release, uname) = text.split_once("@@uname\n").unwrap_or((&text, ""));
        match expect::check(expected, os_release, Some(uname))
            .into_iter()
            .next()
        {
            None => Ok(()),
            Some(m) => Err(CellFailure::ImageMismatch {
                image: image.to_string(),
                field: m.what,
                expected: m.expected,
                found: m.actual.map(|a| a.chars().take(80).collect()),
            }),
        }
    }
}
