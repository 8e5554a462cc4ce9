//! Integration tests: pipeline/wordpress-login.toml, the client-only login-and-load
//! recipe for a WordPress that is already running (a cluster's): measured on the lab
//! against a real WordPress that a lab cluster's deploy started on its member, and
//! its `password_file` parameter refused at check when it is not a plain absolute path.

use crate::scratch::Project;
use benchpipe::lab::LabBoard;
use serde_json::Value;
use std::fmt::Write as _;

use crate::lab::{Lab, bp, text};
use crate::repo;
use crate::webapp::{assert_nothing_left, capturing_secrets_in, files_holding, needles, samples};

/// wordpress.toml's board-side commands (the site's files, then the database and the
/// install once the daemons run, which opens nginx's listener on the board's address),
/// made into a cluster deploy on `board`: the site in `<workdir>/wp-login-site` instead
/// of the cell's directory, on the endpoint's port, the board's and the controller's
/// addresses written in (a deploy has no `bind_address` or `controller_address`), and
/// the admin password from `password_file` (lab boards share the controller's
/// filesystem). The daemons are wordpress.toml's services, started detached, each
/// waited for by its ready check.
fn deploy_and_teardown(board: &LabBoard, password_file: &str) -> (String, String) {
    let recipe: toml::Value =
        toml::from_str(&std::fs::read_to_string(repo().join("pipeline/wordpress.toml")).unwrap())
            .unwrap();
    let board_steps: Vec<(&str, bool)> = recipe["setup"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["on"].as_str() == Some("board"))
        .map(|s| {
            (
                s["command"].as_str().unwrap(),
                s.get("after").and_then(|a| a.as_str()) == Some("services"),
            )
        })
        .collect();
    assert_eq!(board_steps.len(), 2, "wordpress.toml's board setup changed");
    let sub = |s: &str| {
        s.replace("wp-{{ cell }}", "wp-login-site")
            .replace("{{ port }}", "{{ endpoint_port }}")
            .replace("{{ php_workers }}", "2")
            .replace("{{ innodb_buffer_pool_mib }}", "32")
            .replace("{{ bind_address }}", &board.address.to_string())
            .replace(
                "{{ controller_address }}",
                &board.controller_address.to_string(),
            )
    };
    let files = sub(board_steps[0].0);
    assert!(!board_steps[0].1 && board_steps[1].1);
    assert!(!password_file.contains('\''));
    let install_line = "\"$d/install.php\" {{ posts }}";
    assert!(board_steps[1].0.contains(install_line));
    let install = sub(board_steps[1].0).replace(
        install_line,
        &format!("\"$d/install.php\" 3 < '{password_file}'"),
    );
    let wait = |cond: &str| {
        format!("i=0; until {cond}; do i=$((i + 1)); [ $i -lt 600 ] || exit 1; sleep 0.2; done\n")
    };
    // Each service's command in a session of its own (the deploy's own processes are
    // stopped when it ends), its directory from the environment: a template value may
    // not stand inside the quotes `sh -c` needs.
    let mut daemons = "export D={{ workdir }}/wp-login-site\n".to_string();
    for sv in recipe["services"].as_array().unwrap() {
        let command =
            sub(sv["command"].as_str().unwrap()).replace("{{ workdir }}/wp-login-site", "$D");
        assert!(
            !command.contains('\'') && !command.contains("{{"),
            "{command}"
        );
        let _ = write!(
            daemons,
            "setsid sh -c '{command}' < /dev/null > /dev/null 2>&1 &\n{}",
            wait(&sub(sv["ready"].as_str().unwrap()))
        );
    }
    let deploy = format!("{files}\n{daemons}\n{install}");
    let teardown = "d={{ workdir }}/wp-login-site\n\
        for f in nginx.pid php-fpm.pid db/mysqld.pid; do\n\
          p=$(cat \"$d/$f\" 2>/dev/null); case $p in ''|*[!0-9]*) continue ;; esac\n\
          kill \"$p\" 2>/dev/null\n\
        done\n\
        i=0; while { [ -f \"$d/nginx.pid\" ] || [ -f \"$d/php-fpm.pid\" ] || [ -f \"$d/db/mysqld.pid\" ]; } && [ $i -lt 300 ]; do i=$((i + 1)); sleep 0.1; done\n\
        rm -rf --one-file-system \"$d\" && chmod 0700 {{ workdir }} && chgrp 0 {{ workdir }}\n"
        .to_string();
    (deploy, teardown)
}

/// The cluster's name, this test process's own (its directory on the controller is
/// per name).
fn cluster_name() -> String {
    format!("wp-login-{}", std::process::id())
}

/// A one-member lab cluster whose deploy runs WordPress (as above) and whose cells
/// are the shipped wordpress-login recipe's, logging in as wp_install's `admin`.
fn workspace(lab: &Lab, password_file: &str) {
    let b = &lab.board(0).name;
    let (deploy, teardown) = deploy_and_teardown(lab.board(0), password_file);
    let c = cluster_name();
    let scenario = format!(
        "title = \"A lab WordPress behind a cluster's endpoint, logged in to\"\n\
         [images.installed]\ninstalled = true\n\n\
         [clusters.{c}]\nmembers = [\"{b}\"]\nendpoint = {{ board = \"{b}\", port = 8191 }}\n\n\
         [[clusters.{c}.deploy]]\non = \"{b}\"\ntimeout = \"10m\"\ncommand = '''\n{deploy}'''\n\n\
         [[clusters.{c}.teardown]]\non = \"{b}\"\ncommand = '''\n{teardown}'''\n\n\
         [matrix]\nimage = [\"installed\"]\nboard = [\"{c}\"]\ntest = [\"wordpress-login\"]\n\n\
         [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 1 }}\nruns = {{ min = 2, max = 2 }}\n\n\
         [params.wordpress-login]\nuser = \"admin\"\npassword_file = \"{password_file}\"\n\
         seconds = 3\nwrk_threads = 1\nwrk_connections = 2\nlogin_seconds = 4\nlogin_threads = 1\nlogin_connections = 2\n"
    );
    lab.project()
        .recipe("wordpress-login")
        .scenario("s", &scenario);
}

/// A real WordPress on a lab board, started by a cluster's deploy outside the measured
/// cell: wordpress-login logs in with the password from the controller's file, both
/// rates are stored for every run with no non-2xx, the password and the cookie are in
/// no store file, report or output, and the teardown leaves nothing running.
#[test]
fn wordpress_login_measures_a_running_wordpress_through_a_cluster_endpoint() {
    let Some(lab) = Lab::up(1) else { return };
    let boards: Vec<LabBoard> = lab.info.boards.clone();
    let password: String = {
        let bytes = std::fs::read("/proc/sys/kernel/random/uuid").unwrap();
        String::from_utf8(bytes).unwrap().trim().replace('-', "")
    };
    // Not under the lab's root in /tmp, where anyone may put files: a private file.
    let private = RunDir::new("wp-login");
    let password_file = private.0.join("wp-password");
    std::fs::write(&password_file, format!("{password}\n")).unwrap();
    let password_file = password_file.to_str().unwrap().to_string();
    workspace(&lab, &password_file);
    let check = bp(&lab.root, &["check", "scenarios/s.toml"]);
    assert!(check.status.success(), "{}", text(&check));
    // The cluster's directory on the controller holds its cells' secret directories.
    let cluster_dir = lab.controller_dir(&cluster_name());
    let (out, mut secrets) = capturing_secrets_in(vec![cluster_dir.clone()], || {
        bp(&lab.root, &["apply", "scenarios/s.toml"])
    });
    let output = text(&out);
    assert!(
        out.status.success(),
        "{output}\n{}",
        crate::failures(&lab.root)
    );
    let measured: Vec<Value> = samples(&lab.root)
        .into_iter()
        .filter(|(t, s)| t == "wordpress-login" && s["kind"] == "measured")
        .map(|(_, s)| s)
        .collect();
    assert_eq!(measured.len(), 2, "two runs: {output}");
    for s in &measured {
        for m in ["anonymous", "authenticated"] {
            let v = s["metrics"][m].as_f64().unwrap_or(f64::NAN);
            assert!(v.is_finite() && v > 0.0, "{m} = {v}: {s}");
        }
        for m in ["anonymous_non_2xx", "authenticated_non_2xx"] {
            assert_eq!(s["metrics"][m], 0.0, "{m}: the site answered 200: {s}");
        }
    }
    // The cell's copy of the password and its cookie, really captured while it ran.
    assert!(secrets.contains(&password), "{secrets:?}");
    assert!(
        secrets.iter().any(|s| s.contains("wordpress_logged_in_")),
        "{secrets:?}"
    );
    secrets.insert(password.clone());
    let report = bp(
        &lab.root,
        &["report", "scenarios/s.toml", "--out", "reports"],
    );
    assert!(report.status.success(), "{}", text(&report));
    let needles = needles(&secrets);
    for dir in ["results", "reports"] {
        let found = files_holding(&lab.root.join(dir), &needles);
        assert!(found.is_empty(), "{found:?}");
    }
    for n in &needles {
        assert!(!output.contains(n.as_str()), "apply printed a secret");
        assert!(
            !text(&report).contains(n.as_str()),
            "report printed a secret"
        );
    }
    for b in &boards {
        assert_nothing_left(&lab, b);
    }
    let left: Vec<String> = std::fs::read_dir(&cluster_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("secrets-"))
        .collect();
    assert!(left.is_empty(), "secrets left on the controller: {left:?}");
}

/// `password_file` must be a plain absolute path to a file whose name says `password`:
/// a relative one, one with shell metacharacters or a leading option, or another file
/// (/etc/shadow) is refused at check with the scenario's place.
#[test]
fn wordpress_login_refuses_a_password_file_that_is_not_a_plain_absolute_path() {
    let pi = std::fs::read_to_string(repo().join("tests/hostile/base/boards/pi.toml")).unwrap();
    let root = Project::new("login-check")
        .recipe("wordpress-login")
        .file("boards/pi.toml", &pi);
    let scenario = |file: &str| {
        format!(
            "title = \"t\"\n[images.installed]\ninstalled = true\n[matrix]\nimage = [\"installed\"]\n\
             board = [\"pi\"]\ntest = [\"wordpress-login\"]\n[params.wordpress-login]\npassword_file = \"{file}\"\n"
        )
    };
    std::fs::write(
        root.join("scenarios/ok.toml"),
        scenario("/root/k3s/wp-password"),
    )
    .unwrap();
    let ok = bp(&root, &["check", "scenarios/ok.toml"]);
    assert!(ok.status.success(), "{}", text(&ok));
    for bad in [
        "wp-password",
        "/root/$(reboot)",
        "/root/a;b",
        "/root/a b",
        "-/x",
        "/root/",
        // Root-readable files whose first line must never be sent as a password.
        "/etc/shadow",
        "/root/.ssh/id_ed25519",
    ] {
        std::fs::write(root.join("scenarios/bad.toml"), scenario(bad)).unwrap();
        let out = bp(&root, &["check", "scenarios/bad.toml"]);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{bad}: {t}");
        assert!(t.contains("scenarios/bad.toml:9:"), "{bad}: {t}");
        assert!(
            t.contains("expected an absolute path on the controller"),
            "{bad}: {t}"
        );
    }
    // Files anyone may have put there, or a path whose text is not where it leads:
    // refused as a private file, at the value.
    for bad in [
        "/tmp/wp-password",
        "/dev/shm/wp-password",
        "/var/tmp/wp-password",
        "/etc/../tmp/wp-password",
    ] {
        std::fs::write(root.join("scenarios/bad.toml"), scenario(bad)).unwrap();
        let out = bp(&root, &["check", "scenarios/bad.toml"]);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{bad}: {t}");
        assert!(t.contains("scenarios/bad.toml:9:"), "{bad}: {t}");
        assert!(t.contains("is refused as a private file"), "{bad}: {t}");
    }
    // A command that reads the parameter itself (the shell would follow links) is
    // refused in the recipe, at the template's word.
    let recipe = std::fs::read_to_string(root.join("pipeline/wordpress-login.toml")).unwrap();
    let from = "umask 077; s={{ secrets }}\nsed -n 1p |";
    assert!(recipe.contains(from));
    std::fs::write(
        root.join("pipeline/wordpress-login.toml"),
        recipe.replace(
            from,
            "umask 077; s={{ secrets }}\nsed -n 1p {{ password_file }} |",
        ),
    )
    .unwrap();
    let out = bp(&root, &["check", "scenarios/ok.toml"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("`password_file` names a private file"), "{t}");
    assert!(t.contains("pipeline/wordpress-login.toml:"), "{t}");
    let _ = std::fs::remove_dir_all(&root);
}

/// A directory of this test's own under /run (root's, mode 0755, not shared), removed
/// on drop.
struct RunDir(std::path::PathBuf);

impl RunDir {
    fn new(tag: &str) -> RunDir {
        use std::os::unix::fs::PermissionsExt;
        let d = std::path::PathBuf::from(format!("/run/benchpipe-it-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        RunDir(d)
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// At run time the password file is opened by benchpipe, not by a shell: a link to a
/// good file, a file of another user, a group-writable file and a file below a
/// directory others can write each fail the cell with the reason before anything is
/// read, and a good file is read (the cell goes on to the login, which fails here: no
/// WordPress listens). On a local board; the password never shows.
#[test]
fn wordpress_login_opens_the_password_file_through_no_link_and_only_when_it_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let d = RunDir::new("pw");
    let at = |n: &str| d.0.join(n).to_str().unwrap().to_string();
    let secret = "never-shown-password-8c1f";
    std::fs::write(at("wp-password"), format!("{secret}\n")).unwrap();
    std::fs::set_permissions(at("wp-password"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink(at("wp-password"), at("link-password")).unwrap();
    std::fs::write(at("theirs-password"), format!("{secret}\n")).unwrap();
    std::os::unix::fs::chown(at("theirs-password"), Some(65534), Some(65534)).unwrap();
    std::fs::write(at("gw-password"), format!("{secret}\n")).unwrap();
    std::fs::set_permissions(at("gw-password"), std::fs::Permissions::from_mode(0o660)).unwrap();
    std::fs::create_dir(at("open")).unwrap();
    std::fs::set_permissions(at("open"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(at("open/wp-password"), format!("{secret}\n")).unwrap();
    let p = crate::spine::Project::local("login-private").file(
        "pipeline/wordpress-login.toml",
        &std::fs::read_to_string(repo().join("pipeline/wordpress-login.toml")).unwrap(),
    );
    let failure_of = |file: &str| {
        let _ = std::fs::remove_dir_all(p.dir.join("results"));
        std::fs::write(
            p.dir.join("scenarios/s.toml"),
            format!(
                "title = \"t\"\n[images.installed]\ninstalled = true\n[matrix]\nimage = [\"installed\"]\n\
                 board = [\"here\"]\ntest = [\"wordpress-login\"]\n[method]\nwarmup = {{ runs = 0 }}\n\
                 runs = {{ min = 1, max = 1 }}\n[params.wordpress-login]\nport = 9\npassword_file = \"{file}\"\n"
            ),
        )
        .unwrap();
        let out = p.bp(&["apply", "scenarios/s.toml"]);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(1), "{file}: {t}");
        assert!(!t.contains(secret), "{file}: {t}");
        let failure = std::fs::read_dir(p.dir.join("results"))
            .unwrap()
            .flatten()
            .find_map(|e| std::fs::read_to_string(e.path().join("failure.json")).ok())
            .unwrap_or_else(|| panic!("{file}: no failure: {t}"));
        let v: Value = serde_json::from_str(&failure).unwrap();
        v["cause"].as_str().unwrap().to_string()
    };
    for (file, why) in [
        ("link-password", "it is a symbolic link"),
        ("theirs-password", "it is owned by uid 65534"),
        ("gw-password", "others may write to it (mode 660)"),
        ("open/wp-password", "others may write to the directory"),
    ] {
        let cause = failure_of(&at(file));
        assert!(
            cause.contains("refusing the private file `password_file` names on the controller")
                && cause.contains(why),
            "{file}: {cause}"
        );
    }
    // The good file is read: the cell fails later, at the login.
    let cause = failure_of(&at("wp-password"));
    assert!(!cause.contains("refusing"), "{cause}");
    assert!(cause.contains("setup"), "{cause}");
}

/// A stand-in for Drupal 10's login and front page, on the controller: `/user/login`
/// answers its form with a `form_build_id` and, to the form's POST with the right name,
/// password, `form_id` and that `form_build_id`, a 303 setting a `SESS...` cookie;
/// `/` carries the `user-logged-in` body class only with that cookie, and answers a
/// request bearing any other `SESS` cookie with 403 (so a lost cookie shows as non-2xx).
const FAKE_DRUPAL: &str = r#"
import http.server, sys, urllib.parse
port, password = int(sys.argv[1]), open(sys.argv[2]).read().strip()
SESSION = "SESSd41d8cd98f00b204e9800998ecf8427e=fake-session-5b2e"
BUILD = "form-aBcD_12-34"
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def reply(self, code, body, headers=()):
        b = body.encode()
        self.send_response(code)
        for k, v in headers: self.send_header(k, v)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        cookie = self.headers.get("Cookie", "")
        if self.path == "/user/login":
            return self.reply(200, '<form><input type="hidden" name="form_build_id" value="%s" /></form>' % BUILD)
        if self.path != "/":
            return self.reply(404, "no")
        if SESSION in cookie:
            return self.reply(200, '<body class="path-frontpage user-logged-in">hello</body>')
        if "SESS" in cookie:
            return self.reply(403, "bad session")
        return self.reply(200, '<body class="path-frontpage">anonymous</body>')
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        form = urllib.parse.parse_qs(self.rfile.read(n).decode())
        ok = form.get("name") == ["editor"] and form.get("pass") == [password] \
            and form.get("form_id") == ["user_login_form"] and form.get("form_build_id") == [BUILD]
        if self.path == "/user/login" and ok:
            return self.reply(303, "", [("Location", "/user/1"), ("Set-Cookie", SESSION + "; path=/; HttpOnly")])
        return self.reply(200, "Unrecognized username or password.")
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
"#;

/// The stand-in's process, ended by its id when the test ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// pipeline/drupal-login.toml's steps against a FAKE Drupal (no Drupal exists on this
/// machine: Debian packages none and no release is reachable): the form login with the
/// password from `password_file`, the session cookie carried by every logged-in request
/// of wrk's and of the seed's ab, and neither the password nor the cookie anywhere
/// benchpipe writes or prints. On a local board, the stand-in on the controller.
#[test]
fn fake_drupal_login_logs_in_through_the_form_and_loads_with_the_session_cookie() {
    use std::os::unix::fs::PermissionsExt;
    let d = RunDir::new("drupal-pw");
    let file = d.0.join("drupal-password");
    let secret = "never-shown-drupal-password-3e9a";
    std::fs::write(&file, format!("{secret}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let _server = Child(
        std::process::Command::new("python3")
            .args(["-c", FAKE_DRUPAL, &port.to_string(), file.to_str().unwrap()])
            .spawn()
            .unwrap(),
    );
    let mut up = false;
    for _ in 0..600 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(up, "the stand-in did not listen on {port}");
    let p = crate::spine::Project::local("drupal-login").file(
        "pipeline/drupal-login.toml",
        &std::fs::read_to_string(repo().join("pipeline/drupal-login.toml")).unwrap(),
    );
    for tool in ["wrk", "ab"] {
        let _ = std::fs::remove_dir_all(p.dir.join("results"));
        std::fs::write(
            p.dir.join("scenarios/s.toml"),
            format!(
                "title = \"t\"\n[images.installed]\ninstalled = true\n[matrix]\nimage = [\"installed\"]\n\
                 board = [\"here\"]\ntest = [\"drupal-login\"]\n[method]\nwarmup = {{ runs = 0 }}\n\
                 runs = {{ min = 1, max = 1 }}\n[params.drupal-login]\nport = {port}\nuser = \"editor\"\n\
                 password_file = \"{}\"\nseconds = 1\nwrk_threads = 1\nwrk_connections = 2\n\
                 login_tool = \"{tool}\"\nlogin_seconds = 1\nlogin_threads = 1\nlogin_connections = 2\n\
                 ab_requests = 20\nab_concurrency = 2\n",
                file.display()
            ),
        )
        .unwrap();
        let out = p.bp(&["apply", "scenarios/s.toml"]);
        let t = text(&out);
        assert!(
            out.status.success(),
            "{tool}: {t}\n{}",
            crate::failures(&p.dir)
        );
        let results = p.dir.join("results");
        let sample = std::fs::read_dir(&results)
            .unwrap()
            .flatten()
            .find_map(|e| std::fs::read_to_string(e.path().join("samples.jsonl")).ok())
            .unwrap_or_else(|| panic!("{tool}: no samples: {t}"));
        let v: Value = serde_json::from_str(sample.lines().last().unwrap()).unwrap();
        let m = &v["metrics"];
        assert!(m["authenticated"].as_f64().unwrap() > 0.0, "{tool}: {v}");
        assert!(m["anonymous"].as_f64().unwrap() > 0.0, "{tool}: {v}");
        // Every logged-in request carried the session: none got the stand-in's 403.
        assert_eq!(
            m["authenticated_non_2xx"].as_f64(),
            Some(0.0),
            "{tool}: {v}"
        );
        for needle in [secret, "fake-session-5b2e"] {
            assert!(!t.contains(needle), "{tool}: {needle} in the output: {t}");
            let held = files_holding(&results, &[needle.to_string()]);
            assert!(held.is_empty(), "{tool}: {needle} stored in {held:?}");
        }
    }
}
