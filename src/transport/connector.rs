//! How apply, `boards check` and the dry run's probe reach a board and the controller:
//! the `Connector` trait, whose real one opens SSH (or the local machine); tests put a
//! recording fake in its place (`fake::FakeConnector`).

use super::{Transport, TransportError};
use crate::model::Board;

/// Where a board's sysfs is: storage facts and the USB driver are read there.
pub const SYSFS: &str = "/sys";

/// Opens the transports apply uses: the board's (a real SSH session or the local
/// machine) and the controller's. Tests put a recording fake in their place.
pub trait Connector: Sync {
    fn board(&self, board: &Board) -> Result<Box<dyn Transport>, TransportError>;
    fn controller(&self) -> Box<dyn Transport>;
    /// The board's sysfs, where storage facts and the USB driver are read. Only tests
    /// point it at a fake tree (USB storage cannot exist in the lab).
    fn sysfs(&self) -> &str {
        SYSFS
    }
}

/// The real transports: `transport::connect`, and the local machine as controller.
pub struct RealConnector;

impl Connector for RealConnector {
    fn board(&self, board: &Board) -> Result<Box<dyn Transport>, TransportError> {
        super::connect(board, std::time::Duration::from_secs(30))
    }
    fn controller(&self) -> Box<dyn Transport> {
        Box::new(super::local::Local::new())
    }
}
