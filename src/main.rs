//! The `benchpipe` binary: arguments in, exit code out. Everything else is in the library.

fn main() -> std::process::ExitCode {
    benchpipe::cli::main()
}
