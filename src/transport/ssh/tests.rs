//! Resolving a board's target against ssh_config, and connecting where nothing listens.

use super::*;

fn target(host: &str) -> SshTarget {
    SshTarget {
        host: host.into(),
        port: None,
        user: None,
        identity: None,
        password_env: None,
        known_hosts: None,
        ..SshTarget::default()
    }
}

#[test]
fn board_file_values_override_ssh_config() {
    let cfg = SshConfig::parse(
        "Host pi\n HostName 10.1.1.1\n User pi\n Port 2200\n IdentityFile /k/cfg\n",
    );
    let mut t = target("pi");
    let r = Resolved::new(&t, &cfg);
    assert_eq!(
        (r.host.as_str(), r.port, r.user.as_str()),
        ("10.1.1.1", 2200, "pi")
    );
    assert_eq!(r.identities, vec![PathBuf::from("/k/cfg")]);
    t.port = Some(22);
    t.user = Some("root".into());
    t.identity = Some(PathBuf::from("/k/board"));
    let r = Resolved::new(&t, &cfg);
    assert_eq!((r.port, r.user.as_str()), (22, "root"));
    assert_eq!(r.identities[0], PathBuf::from("/k/board"));
}

#[test]
fn an_unreachable_board_fails_within_the_timeout_and_names_the_board() {
    // 198.18.255.254 is in the benchmarking range and routed nowhere here.
    let mut t = target("198.18.255.254");
    t.known_hosts = Some(PathBuf::from("/nonexistent/known_hosts"));
    let started = Instant::now();
    let r = SshTransport::connect_with(
        &BoardName::new("nowhere"),
        &t,
        Duration::from_millis(500),
        ConnectOptions {
            ssh_config: Some(PathBuf::from("/nonexistent/config")),
            ..ConnectOptions::default()
        },
    );
    let Err(e) = r else {
        panic!("connected to nowhere")
    };
    assert!(matches!(e, TransportError::Unreachable { .. }), "{e}");
    assert!(e.to_string().starts_with("nowhere:"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

fn quick_connect(host: &str, port: u16, timeout: Duration) -> TransportError {
    let mut t = target(host);
    t.port = Some(port);
    t.known_hosts = Some(PathBuf::from("/nonexistent/known_hosts"));
    let r = SshTransport::connect_with(
        &BoardName::new("b"),
        &t,
        timeout,
        ConnectOptions {
            ssh_config: Some(PathBuf::from("/nonexistent/config")),
            ..ConnectOptions::default()
        },
    );
    match r {
        Err(e) => e,
        Ok(_) => panic!("connected"),
    }
}

#[test]
fn a_closed_port_is_connection_refused_and_never_a_handshake() {
    // A port bound and closed again: nothing listens there now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = quick_connect("127.0.0.1", port, Duration::from_secs(5)).to_string();
    assert!(e.contains("connection refused"), "{e}");
    assert!(!e.contains("handshake"), "{e}");
}

#[test]
fn a_server_that_accepts_but_never_speaks_is_a_handshake_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let e = quick_connect("127.0.0.1", port, Duration::from_millis(300)).to_string();
    assert!(
        e.contains("TCP connected, but the SSH handshake timed out (after 0.3 s)"),
        "{e}"
    );
    drop(listener);
}

#[test]
fn a_name_that_does_not_resolve_says_so() {
    let e = quick_connect("no-such-board.invalid", 22, Duration::from_secs(5)).to_string();
    assert!(
        e.contains("cannot resolve host name no-such-board.invalid"),
        "{e}"
    );
}

#[test]
fn tcp_causes_are_the_words_an_operator_looks_for() {
    let t = Duration::from_millis(2500);
    let cause = |errno| connect::tcp_cause(&std::io::Error::from_raw_os_error(errno), t);
    assert_eq!(cause(libc::EHOSTUNREACH), "no route to host");
    assert!(cause(libc::ENETUNREACH).starts_with("network unreachable"));
    assert!(cause(libc::ECONNREFUSED).starts_with("connection refused"));
    assert!(cause(libc::ETIMEDOUT).starts_with("timed out connecting (after 2.5 s"));
    let timed_out = std::io::Error::new(std::io::ErrorKind::TimedOut, "connection timed out");
    assert!(connect::tcp_cause(&timed_out, t).starts_with("timed out connecting"));
    assert!(!cause(libc::EACCES).contains("os error"));
}

#[test]
fn the_board_files_timeouts_override_the_defaults() {
    let options = || ConnectOptions {
        ssh_config: Some(PathBuf::from("/nonexistent/config")),
        ..ConnectOptions::default()
    };
    let mut t = target("pi");
    let b = BoardName::new("b");
    let plain = SshTransport::new(&b, &t, Duration::from_secs(30), options()).unwrap();
    assert_eq!(plain.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
    assert_eq!(plain.options.keepalive, ConnectOptions::default().keepalive);
    t.connect_timeout = Some(Duration::from_secs(3));
    t.keepalive = Some(Duration::from_secs(17));
    let set = SshTransport::new(&b, &t, Duration::from_secs(30), options()).unwrap();
    assert_eq!(set.connect_timeout, Duration::from_secs(3));
    assert_eq!(set.options.keepalive, Duration::from_secs(17));
}

#[test]
fn proxy_jump_comes_from_the_board_file_then_ssh_config_and_none_turns_it_off() {
    let cfg = SshConfig::parse("Host pi\n HostName 10.1.1.1\n ProxyJump pi@bastion:2222\n");
    let mut t = target("pi");
    assert_eq!(
        Resolved::new(&t, &cfg).proxy_jump.as_deref(),
        Some("pi@bastion:2222")
    );
    t.proxy_jump = Some("root@other".into());
    assert_eq!(
        Resolved::new(&t, &cfg).proxy_jump.as_deref(),
        Some("root@other")
    );
    t.proxy_jump = Some("none".into());
    assert_eq!(Resolved::new(&t, &cfg).proxy_jump, None);
    assert_eq!(
        config::split_jump("pi@[fe80::1]:2200"),
        Some((Some("pi"), "fe80::1", Some(2200)))
    );
}
