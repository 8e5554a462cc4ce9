//! A board reached over SSH (ssh2): one session per board, strict host keys.
