//! The lab's board-level commands: `lab power` and `lab image`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::lab::PowerAction;
use crate::lab::image::{self as images, Compression, ImageSpec};

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum PowerArg {
    On,
    Off,
    Cycle,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum CompressArg {
    None,
    Xz,
    Gz,
    Zstd,
}

#[derive(clap::Args, Debug)]
pub struct ImageArgs {
    /// The file name without suffix.
    name: String,
    /// os-release ID.
    #[arg(long)]
    id: String,
    /// os-release VERSION_ID.
    #[arg(long = "version-id")]
    version_id: String,
    #[arg(long, value_enum, default_value = "none")]
    compress: CompressArg,
    /// Firstboot makes a new SSH host key on a lab board.
    #[arg(long)]
    new_host_key: bool,
    /// The image never boots on a lab board.
    #[arg(long)]
    no_boot: bool,
    /// Where the image goes.
    #[arg(long, default_value = "images", value_name = "DIR")]
    out: PathBuf,
}

pub fn power(
    root: &Path,
    action: PowerArg,
    board: &str,
    prefix: &str,
    board_prefix: &str,
) -> Result<(), Error> {
    let action = match action {
        PowerArg::On => PowerAction::On,
        PowerArg::Off => PowerAction::Off,
        PowerArg::Cycle => PowerAction::Cycle,
    };
    let options = crate::lab::LabOptions {
        prefix: prefix.to_string(),
        board_prefix: board_prefix.to_string(),
        ..crate::lab::LabOptions::default()
    };
    let outcome = crate::lab::power_with(root, &options, board, action)?;
    match (outcome.booted, outcome.note) {
        (None, _) => println!("{board}: off"),
        (Some(true), None) => println!("{board}: on"),
        (Some(true), Some(note)) => println!("{board}: on ({note})"),
        (Some(false), note) => println!(
            "{board}: powered on, but it does not boot: {}",
            note.unwrap_or_default()
        ),
    }
    Ok(())
}

pub fn image(a: &ImageArgs) -> Result<(), Error> {
    use sha2::Digest;
    let compression = match a.compress {
        CompressArg::None => Compression::None,
        CompressArg::Xz => Compression::Xz,
        CompressArg::Gz => Compression::Gz,
        CompressArg::Zstd => Compression::Zstd,
    };
    let spec = ImageSpec {
        new_host_key: a.new_host_key,
        no_boot: a.no_boot,
        ..ImageSpec::new(&a.id, &a.version_id)
    };
    let path = images::build(&a.out, &a.name, &spec, compression)?;
    let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
    let digest: String = sha2::Sha256::digest(&bytes)
        .iter()
        .fold(String::new(), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        });
    println!("{}  sha256 {digest}", path.display());
    Ok(())
}
