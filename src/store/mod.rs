//! The results store: the only writer of results/.
