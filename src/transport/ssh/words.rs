//! libssh2's errors in words: what happened, the likely cause, what to try. The one
//! place a `ssh2::Error` becomes text; no `[Session(-43)] Failed getting banner` reaches
//! a message, a failure.json or a report.

use ssh2::ErrorCode;

/// What the session was doing when the error came: the same code means another thing
/// during the handshake (the server never spoke) than during a command (it went away).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum During {
    /// The TCP connection is up; the SSH greeting and key exchange.
    Handshake,
    /// Logging in: a key, the ssh-agent, a password.
    Login,
    /// Reading the known_hosts file.
    KnownHosts,
    /// A command, an upload or a download on a live session.
    Session,
}

/// A libssh2 error in words.
pub fn ssh_error(e: &ssh2::Error, during: During) -> String {
    match e.code() {
        ErrorCode::Session(code) => session_code(code, e.message(), during),
        ErrorCode::SFTP(code) => format!(
            "the SFTP server refused the request (SFTP status {code}: {})",
            e.message()
        ),
    }
}

/// An error a channel's `Read` or `Write` gave: ssh2 turned a libssh2 error into an
/// `io::Error` holding only its message, so the code is gone; OS errors keep theirs.
pub fn channel_io_error(e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    if e.raw_os_error().is_some() {
        let text = e.to_string();
        return match text.find(" (os error") {
            Some(i) => text[..i].to_string(),
            None => text,
        };
    }
    match e.kind() {
        ErrorKind::TimedOut => session_code(-9, "", During::Session),
        _ => format!(
            "the SSH session broke (libssh2 said \"{}\"): the connection dropped, or the board's sshd ended or restarted; the command's fate on the board is unknown",
            e.to_string().escape_debug()
        ),
    }
}

fn session_code(code: i32, message: &str, during: During) -> String {
    let gone = "the board rebooted, lost power or its network, or its sshd was restarted; check that it is up (`ping`, `ssh`) and run again";
    let closed_at_hello = "the connection was closed before the SSH server greeted us: something accepts TCP on that port but is not an SSH server that will talk to us now. Likely: the board is still booting (sshd starting, or generating host keys on a first boot), sshd refused the connection (MaxStartups under many connections at once, TCP wrappers, fail2ban or a firewall that resets), or another service owns the port. Wait a minute and try again; `ssh -v` from this machine shows the same, and the board's sshd log (`journalctl -u ssh`) says why";
    match code {
        // The connection itself.
        -1 | -45 => "no usable socket for the SSH session (a benchpipe bug: please report it)".into(),
        -2 | -13 | -43 | -7 | -3 => match during {
            During::Handshake => closed_at_hello.into(),
            During::Login => "the board closed the connection while logging in: sshd gave up on us (LoginGraceTime, MaxAuthTries after too many keys offered, or a login refused by PAM); try `ssh -v` with the same user and key, and see the board's sshd log (`journalctl -u ssh`)".into(),
            During::KnownHosts | During::Session => {
                format!("the SSH connection was lost: {gone}")
            }
        },
        -9 | -30 => match during {
            During::Handshake => "the SSH handshake timed out: the board accepted TCP but answered too slowly (overloaded, still booting, or a slow link); raise `connect_timeout` in its [ssh] table, or try again".into(),
            During::Login => "logging in timed out: the board answered too slowly (overloaded, or a slow PAM or DNS lookup in its sshd: `UseDNS no`); raise `connect_timeout`, or try again".into(),
            _ => format!("the board stopped answering within the timeout: {gone}"),
        },
        // Keys and algorithms.
        -5 | -8 | -33 | -51 => "the board's SSH server and benchpipe agree on no key exchange, cipher or host-key algorithm (a very old or locked-down sshd, or a pinned `host_key` of an algorithm the server no longer offers); `ssh -vv` shows what the server offers".into(),
        -10 | -11 => "the board's host key could not be read or its signature does not verify (a damaged or unusual host key); regenerate the board's host keys (`ssh-keygen -A`) and trust the new one".into(),
        -4 | -12 | -44 | -52 | -53 | -54 => "the encrypted SSH stream was corrupted or could not be computed (a faulty network link, NIC offload or middlebox in between); try again, and check the link if it repeats".into(),
        -14 => "the server broke the SSH protocol: the port does not hold a (compatible) SSH server".into(),
        // Logging in.
        -15 => "the board user's password has expired: log in once with `ssh` and change it".into(),
        -16 => "a key file could not be read: it is missing, unreadable, or in a format libssh2 does not take (convert it with `ssh-keygen -p -m PEM -f KEY`, or load it into ssh-agent)".into(),
        -17 => "the board's sshd offers no login method benchpipe can use (public key or password): enable PubkeyAuthentication in its sshd_config".into(),
        -18 => "the board refused this key or password: the key is not in that user's ~/.ssh/authorized_keys, the user is wrong, or the password is".into(),
        -19 | -48 => "the key file could not be used: it needs a passphrase (load it into ssh-agent, which benchpipe asks first), or it does not match its .pub file".into(),
        -36 => "the board's sshd refused the public key request (a protocol error): try another key type, ed25519 say".into(),
        -42 => "the ssh-agent did not answer as expected: is SSH_AUTH_SOCK the socket of a live agent? (`ssh-add -l`)".into(),
        -50 => "the board's sshd sent no list of login methods".into(),
        // Channels: running commands on a live session.
        -21 | -22 | -32 => "the board's sshd refused to run the command (MaxSessions reached, a ForceCommand, or a restricted account such as one with `internal-sftp` only); check the user's entry in its sshd_config".into(),
        -26 | -27 => format!("the board closed the command's channel early: {gone}"),
        -20 | -23 | -24 | -25 | -47 => "the SSH channel's flow control went wrong (a server bug or a broken proxy in between); try again".into(),
        -28 | -31 => "a file transfer failed in the server's protocol (scp or sftp): check the board's disk space and sshd".into(),
        -29 | -40 => "the SSH stream's compression failed: try again".into(),
        -46 => "the known_hosts file could not be read or holds a line libssh2 cannot parse: check it with `ssh-keygen -F HOST -f FILE`, or name another in the board's `known_hosts`".into(),
        -6 => "libssh2 ran out of memory on this machine".into(),
        -49 => "this machine's random number generator failed (libssh2 could not get random bytes)".into(),
        -37 => "libssh2 would block where benchpipe waits (a benchpipe bug: please report it)".into(),
        -34 | -35 | -38 | -39 | -41 | -55 => format!(
            "benchpipe used libssh2 wrongly (a benchpipe bug: please report it, with \"{}\")",
            message.escape_debug()
        ),
        _ => format!(
            "SSH failed with libssh2 error {code} (\"{}\"), which benchpipe does not know: please report it",
            message.escape_debug()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(code: i32, msg: &'static str) -> ssh2::Error {
        ssh2::Error::new(ErrorCode::Session(code), msg)
    }

    #[test]
    fn every_libssh2_code_is_words_without_the_raw_form() {
        for code in -60..=0 {
            for during in [
                During::Handshake,
                During::Login,
                During::KnownHosts,
                During::Session,
            ] {
                let w = ssh_error(&error(code, "Failed getting banner"), during);
                assert!(!w.contains("[Session("), "{code}: {w}");
                assert!(!w.contains("Session(-"), "{code}: {w}");
                assert!(w.len() > 20, "{code}: {w}");
            }
        }
    }

    #[test]
    fn a_banner_never_received_is_told_by_what_the_session_was_doing() {
        let banner = error(-43, "Failed getting banner");
        let hello = ssh_error(&banner, During::Handshake);
        assert!(
            hello.contains("closed before the SSH server greeted us"),
            "{hello}"
        );
        assert!(hello.contains("still booting"), "{hello}");
        let later = ssh_error(&banner, During::Session);
        assert!(later.contains("connection was lost"), "{later}");
    }

    #[test]
    fn a_channels_io_error_keeps_no_os_error_number() {
        let os = std::io::Error::from_raw_os_error(libc::ECONNRESET);
        assert_eq!(channel_io_error(&os), "Connection reset by peer");
        let lib = std::io::Error::other("Unable to send FXP_OPEN");
        assert!(channel_io_error(&lib).contains("SSH session broke"));
    }
}
