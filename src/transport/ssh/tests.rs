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
