//! Command-line arguments -> library calls -> exit code.

pub fn main() -> std::process::ExitCode {
    std::process::ExitCode::SUCCESS
}
