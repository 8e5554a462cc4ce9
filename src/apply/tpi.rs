//! The `tpi` flash step (a Turing Pi 2 node through its BMC) and the hosts that flash
//! and power templates run on (`via`).

use crate::store::Flashed;

use super::worker::Worker;
use crate::failure::CellFailure;
use crate::image::{self, Fetched};
use crate::model::{Flash, ImageName};
use crate::transport::Transport;

impl Worker<'_> {
    /// A session on `via`: a board of the workspace by that name, or an SSH destination
    /// (strict host keys, as for any board).
    pub(super) fn connect_via(
        &self,
        via: &str,
    ) -> Result<Box<dyn Transport>, crate::transport::TransportError> {
        let host = crate::power::via_board(self.board, self.boards, via);
        self.connector.board(&host)
    }

    /// Puts the verified image on the BMC `via` (streamed decompressed, or found there
    /// by its content's digest), runs `tpi flash` for `node` there and reads its verdict.
    /// Flashes through one BMC take turns. Returns what was written, for the cells' facts.
    pub(super) fn flash_tpi(
        &self,
        image: &ImageName,
        fetched: &Fetched,
        via: &str,
        node: u32,
    ) -> Result<Flashed, CellFailure> {
        let failed = |message: String| CellFailure::Flash {
            image: image.to_string(),
            message,
        };
        let Flash::Tpi { dir, .. } = &self.board.flash else {
            return Err(failed(format!(
                "board {} is not a tpi board",
                self.board.name
            )));
        };
        let mut t = self
            .connect_via(via)
            .map_err(|e| failed(format!("cannot reach the BMC {via}: {e}")))?;
        let _turn = self.resources.acquire(&[format!("tpi-bmc:{via}")]);
        // The content's size and digest measured here by one bounded pass, not taken
        // from the cache's facts: they are what a file on the BMC must match to be
        // reused, and what bounds the stream sent there.
        self.phase(
            None,
            format!("measure {image}: its decompressed size and sha256"),
        );
        let measured =
            image::measure(fetched, image::MAX_IMAGE_BYTES).map_err(|e| failed(e.to_string()))?;
        let mut stream = image::open(fetched, Some(measured.uncompressed_bytes))
            .map_err(|e| failed(e.to_string()))?;
        self.phase(None, format!("put {image} on the BMC {via} in {dir}"));
        let placed = crate::flash::tpi::put_image(
            t.as_mut(),
            dir,
            self.board.name.as_str(),
            (&measured.uncompressed_sha256, measured.uncompressed_bytes),
            &mut stream,
        )
        .map_err(|e| failed(e.to_string()))?;
        if !placed.uploaded {
            self.phase(None, format!("{} is on the BMC already", placed.path));
        }
        let content = measured.uncompressed_sha256;
        if !placed.path.ends_with(&format!("/{content}.img")) {
            return Err(failed(format!(
                "the BMC holds {} but the image's content has sha256 {content}",
                placed.path
            )));
        }
        let command = crate::flash::tpi::flash_command(node, &placed.path);
        self.phase(
            None,
            format!("flash {image} to node {node}: {command} on {via}"),
        );
        let out = t.run(&command, Some(crate::flash::tpi::FLASH_TIMEOUT))?;
        crate::flash::tpi::judge(&out.exit, &out.stdout_str(), &out.stderr_str())
            .map_err(|why| failed(format!("`{command}` on {via}: {why}")))?;
        self.phase(None, format!("tpi flashed {image} to node {node}"));
        Ok(Flashed {
            file_sha256: Some(fetched.sha256.clone()),
            method: Some("tpi".into()),
            bmc_path: Some(placed.path),
            written_bytes: Some(placed.bytes),
            uploaded: Some(placed.uploaded),
            uncompressed_sha256: Some(content),
            ..Flashed::default()
        })
    }
}
