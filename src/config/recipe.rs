//! Validates one recipe file (`pipeline/<test>.toml`) into a `model::Recipe`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use toml::Spanned;

use super::{Source, names, raw, template, units};
use crate::diag::Diagnostic;
use crate::model::{ParamValue, Recipe, ServiceSpec, Side, Step, TestName};

pub fn validate(src: &Source, raw: raw::Recipe, diags: &mut Vec<Diagnostic>) -> Option<Recipe> {
    let start = diags.len();
    let (uses_storage, raw_device) = uses_storage(src, raw.uses_storage.as_ref(), diags);

    let mut params = BTreeMap::new();
    for (key, value) in &raw.params {
        let name = key.get_ref();
        let is_identifier = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_identifier {
            diags.push(
                src.at_value(key, format!("bad parameter name `{name}`: templates can only refer to names of letters, digits and `_`"))
                    .with_help(format!("try `{}`", name.replace(|c: char| !c.is_ascii_alphanumeric(), "_"))),
            );
        } else if template::reserved(name) {
            diags.push(
                src.at_value(
                    key,
                    format!(
                        "parameter `{name}` would hide the built-in template variable of that name"
                    ),
                )
                .with_help(format!(
                    "built-in variables: {}, and `params` is reserved; rename the parameter",
                    template::BUILTINS.join(", ")
                )),
            );
        }
        if let Some(v) = param_value(src, value, diags) {
            params.insert(name.clone(), v);
        }
    }

    let secrets = super::secrets::names(src, &raw.secrets, diags);
    let mut variables: BTreeSet<String> =
        template::BUILTINS.iter().map(ToString::to_string).collect();
    variables.extend(params.keys().cloned());
    let uses_device = std::cell::Cell::new(false);
    let uses_addresses = std::cell::Cell::new(false);
    // Parameters naming a private file: a step's stdin only, never a command's text.
    let private: BTreeSet<String> = raw
        .param_patterns
        .iter()
        .filter(|(_, p)| {
            p.get_ref()
                .private_file
                .as_ref()
                .is_some_and(|b| *b.get_ref())
        })
        .map(|(k, _)| k.get_ref().clone())
        .collect();
    // Where a step or service reads `{{ host }}`: the test goes over the network.
    let host_at = std::cell::RefCell::new(None);
    let mut samples = template::sample_builtins();
    samples.params(&params);
    // A recipe with a peer board knows where the peer is.
    if params.contains_key(crate::model::PEER_PARAM) {
        variables.insert(super::members::PEER_HOST.to_string());
        variables.insert(super::members::PEER_DIR.to_string());
        samples.set(super::members::PEER_HOST, "sample-peer-host");
        samples.set(
            super::members::PEER_DIR,
            "/var/tmp/benchpipe/sample-peer/peer-sample-board",
        );
    }
    let word_starts = std::cell::RefCell::new(Vec::new());
    let check_step = |on: &Option<Spanned<String>>,
                      command: &Spanned<String>,
                      timeout: &Option<Spanned<String>>,
                      diags: &mut Vec<Diagnostic>| {
        let on = side(src, on.as_ref(), diags);
        if command.get_ref().trim().is_empty() {
            diags.push(src.at_value(command, "`command` is empty: there is nothing to run"));
        }
        let used = match template::check(src, command, &variables, diags) {
            Some(used) => {
                let starts = template::check_rendered(src, command, &samples, diags);
                word_starts.borrow_mut().extend(starts);
                used
            }
            None => BTreeSet::new(),
        };
        if raw_device && used.contains("dir") {
            let span = template::word_span(&src.text, command.span(), "dir");
            diags.push(
                src.at(span, "`dir` is a filesystem's directory, but this recipe says `uses_storage = \"device\"`: it reads the raw device, with no filesystem mounted for it")
                    .with_help("read `device`, or say `uses_storage = true` for a test that writes files"),
            );
        }
        for storage_var in ["dir", "device"] {
            if !uses_storage && used.contains(storage_var) {
                let span = template::word_span(&src.text, command.span(), storage_var);
                diags.push(
                    src.at(span, format!("`{storage_var}` belongs to the cell's storage, but this recipe says `uses_storage = false`"))
                        .with_help("use `workdir` for files that do not belong to the storage under test, or set `uses_storage = true`"),
                );
            }
        }
        if used.contains("device") {
            uses_device.set(true);
        }
        // The addresses of the cell's link are the network's too.
        let addresses = [
            crate::network::addresses::BIND_ADDRESS,
            crate::network::addresses::CONTROLLER_ADDRESS,
        ];
        if addresses.iter().any(|a| used.contains(*a)) {
            uses_addresses.set(true);
        }
        if let Some(var) = ["host"]
            .iter()
            .chain(&addresses)
            .find(|v| used.contains(**v))
            && host_at.borrow().is_none()
        {
            *host_at.borrow_mut() = Some(template::word_span(&src.text, command.span(), var));
        }
        if used.contains("secrets") {
            super::secrets::check_use(src, command, &secrets, on, diags);
        }
        for name in used.intersection(&private) {
            let span = template::word_span(&src.text, command.span(), name);
            diags.push(
                src.at(span, format!("`{name}` names a private file: no command may read it, or the shell would open it following links"))
                    .with_help(format!("give the file to the step on its stdin: `input = \"{name}\"`")),
            );
        }
        super::tmpfs::refuse_use_without_table(src, command, &used, raw.tmpfs.is_some(), diags);
        Step {
            on,
            command: command.get_ref().clone(),
            input: None,
            timeout: timeout
                .as_ref()
                .and_then(|t| match units::parse_duration(t.get_ref()) {
                    Ok(d) => Some(d),
                    Err(e) => {
                        diags.push(src.at_value(t, e));
                        None
                    }
                }),
        }
    };
    let requires: Vec<Step> = raw
        .requires
        .iter()
        .map(|s| {
            super::secrets::refuse_on(src, s, "requires", diags);
            check_step(&s.on, &s.command, &s.timeout, diags)
        })
        .collect();
    let with_input = |s: &raw::Step, diags: &mut Vec<Diagnostic>| {
        let param = input(src, s.input.as_ref(), &params, diags);
        let input = match super::secrets::step_input(src, s, param, &secrets, diags) {
            Some(crate::model::StepInput::Param(p)) if private.contains(&p) => {
                Some(crate::model::StepInput::Private(p))
            }
            other => other,
        };
        Step {
            input,
            ..check_step(&s.on, &s.command, &s.timeout, diags)
        }
    };
    let mut setup: Vec<Step> = Vec::new();
    let mut setup_after_services: Vec<Step> = Vec::new();
    for s in &raw.setup {
        let after = super::secrets::after_services(src, s, diags);
        let step = with_input(s, diags);
        if after {
            setup_after_services.push(step);
        } else {
            setup.push(step);
        }
    }
    let run_raw = raw.run.get_ref();
    let run = check_step(&run_raw.on, &run_raw.command, &run_raw.timeout, diags);
    let run_per_member = super::members::run(src, run_raw, run.on, diags);
    let teardown: Vec<Step> = raw
        .teardown
        .iter()
        .map(|s| {
            super::secrets::refuse_on(src, s, "teardown", diags);
            with_input(s, diags)
        })
        .collect();
    let before_run: Vec<Step> = raw
        .before_run
        .iter()
        .map(|s| {
            if let Some(i) = &s.input {
                diags.push(src.at_value(i, "`input` streams a file to a setup or teardown step, not to one before every run"));
            }
            check_step(&s.on, &s.command, &s.timeout, diags)
        })
        .collect();

    let mut service_names = std::collections::BTreeSet::new();
    let services: Vec<ServiceSpec> = raw
        .services
        .iter()
        .map(|sv| {
            let name = sv.name.get_ref();
            let plain = !name.is_empty()
                && !name.starts_with('.')
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
            if !plain {
                diags.push(src.at_value(
                    &sv.name,
                    format!("bad service name `{name}`: expected letters, digits, `-`, `_` or `.`"),
                ));
            } else if !service_names.insert(name.clone()) {
                diags.push(src.at_value(&sv.name, format!("service `{name}` is declared twice")));
            }
            let step = check_step(&sv.on, &sv.command, &None, diags);
            let ready = sv
                .ready
                .as_ref()
                .map(|r| check_step(&sv.on, r, &None, diags).command);
            ServiceSpec {
                name: name.clone(),
                on: step.on,
                command: step.command,
                ready_timeout: ready_timeout(src, sv, diags),
                ready,
            }
        })
        .collect();

    let parser = super::parser::validate(src, &raw, diags);

    if let Some(d) = &raw.description
        && let Err(e) = names::control_free(d.get_ref(), true)
    {
        diags.push(src.at_value(d, format!("`description` {e}")));
    }
    let metrics = super::metrics::metrics(src, &raw, parser.as_ref(), diags);
    super::members::metrics(src, &raw, run_per_member, &metrics, diags);

    // String parameters that begin a shell word: there a value starting with `-` would
    // be read as an option, so such a value is refused (here and in scenarios).
    let option_params: BTreeSet<String> = word_starts
        .borrow()
        .iter()
        .flat_map(|expr| identifiers(expr))
        .filter(|name| matches!(params.get(name), Some(ParamValue::Str(_))))
        .collect();
    for (key, value) in &raw.params {
        if option_params.contains(key.get_ref()) {
            refuse_option_like(src, key.get_ref(), value, diags);
        }
    }
    let strings = |v: &[Spanned<String>], what: &str, diags: &mut Vec<Diagnostic>| -> Vec<String> {
        v.iter()
            .map(|s| {
                if s.get_ref().trim().is_empty() || s.get_ref().contains(char::is_whitespace) {
                    diags.push(src.at_value(
                        s,
                        format!(
                            "bad {what} `{}`: expected one name without spaces",
                            s.get_ref()
                        ),
                    ));
                }
                s.get_ref().clone()
            })
            .collect()
    };
    let sides: BTreeSet<Side> = setup
        .iter()
        .chain(&setup_after_services)
        .chain(&before_run)
        .chain([&run])
        .chain(&teardown)
        .chain(&requires)
        .map(|s| s.on)
        .chain(services.iter().map(|s| s.on))
        .collect();
    super::members::peer(src, &raw, &sides, &params, diags);
    if let Some(first) = raw.secrets.first()
        && !sides.contains(&Side::Controller)
    {
        diags.push(
            src.at_value(first, "secrets are files in the cell's directory on the controller, but no step of this recipe runs there to make them")
                .with_help("make each secret with a `[[setup]]` step `on = \"controller\"`"),
        );
    }
    let needs = super::sides::needs(src, raw.needs.as_ref(), &sides, diags);
    let facts = super::sides::facts(src, &raw.facts, diags);
    let exclusive = strings(&raw.exclusive, "resource", diags);
    let param_patterns =
        super::patterns::recipe(src, &raw.param_patterns, &raw.params, &params, diags);
    let uses_network = uses_network(src, raw.uses_network.as_ref(), host_at.into_inner(), diags);
    let tmpfs = super::tmpfs::validate(src, raw.tmpfs.as_ref(), &params, diags);
    let mut needs = needs;
    super::tmpfs::add_needs(tmpfs.as_ref(), &mut needs);

    if diags.len() > start {
        return None;
    }
    Some(Recipe {
        name: TestName::new(src.stem.clone()),
        file: src.rel.clone(),
        // `config::gather_recipes` says where it came from.
        source: crate::model::RecipeSource::default(),
        description: raw.description.map(Spanned::into_inner).unwrap_or_default(),
        needs,
        facts,
        exclusive,
        uses_storage,
        params,
        param_patterns,
        series: raw.series.as_ref().is_some_and(|s| *s.get_ref()),
        tmpfs,
        setup,
        setup_after_services,
        secrets,
        before_run,
        run,
        run_per_member,
        parser: parser?,
        teardown,
        services,
        uses_device: uses_device.get() || raw_device,
        raw_device,
        uses_network,
        uses_addresses: uses_addresses.get(),
        requires,
        option_params,
        metrics,
    })
}

/// A step's `input`: the name of a string parameter holding a controller path.
fn input(
    src: &Source,
    input: Option<&Spanned<String>>,
    params: &BTreeMap<String, ParamValue>,
    diags: &mut Vec<Diagnostic>,
) -> Option<String> {
    let input = input?;
    let name = input.get_ref();
    if !matches!(params.get(name), Some(ParamValue::Str(_))) {
        let help = names::help_for(name, params.keys().map(String::as_str), "parameters");
        diags.push(
            src.at_value(
                input,
                format!("`input` = \"{name}\" is not a string parameter of this recipe"),
            )
            .with_help(format!(
                "{help}; `input` names a [params] entry holding a path on the controller"
            )),
        );
        return None;
    }
    Some(name.clone())
}

/// `uses_network`: as declared, else whether a template reads `{{ host }}` (`host_at`,
/// where the first one does). Declared false, a template that reads it is an error: the
/// network axis would leave the test out, and `host` would silently be the SSH host.
fn uses_network(
    src: &Source,
    declared: Option<&Spanned<bool>>,
    host_at: Option<std::ops::Range<usize>>,
    diags: &mut Vec<Diagnostic>,
) -> bool {
    match (declared, host_at) {
        (Some(d), Some(span)) if !*d.get_ref() => {
            diags.push(
                src.at(span, "`host`, `bind_address` and `controller_address` are addresses of the cell's network, but this recipe says `uses_network = false`")
                    .with_help("remove `uses_network = false` (a recipe that reads them uses the network), or use `workdir` and `board` instead"),
            );
            false
        }
        (Some(d), _) => *d.get_ref(),
        (None, at) => at.is_some(),
    }
}

/// `uses_storage`: whether the test touches the cell's storage, and whether it reads
/// the raw device (`"device"`) rather than files on a filesystem (`true`,
/// `"filesystem"`). Absent means `true`.
fn uses_storage(
    src: &Source,
    value: Option<&Spanned<toml::Value>>,
    diags: &mut Vec<Diagnostic>,
) -> (bool, bool) {
    let Some(v) = value else {
        return (true, false);
    };
    match v.get_ref() {
        toml::Value::Boolean(b) => (*b, false),
        toml::Value::String(s) if s == "filesystem" => (true, false),
        toml::Value::String(s) if s == "device" => (true, true),
        other => {
            diags.push(
                src.at_value(
                    v,
                    format!(
                        "`uses_storage` = {other}: expected true, false, \"filesystem\" or \"device\""
                    ),
                )
                .with_help("\"device\" is for tests that read the raw block device (hdparm): they run once per device, whatever the filesystems"),
            );
            (true, false)
        }
    }
}

/// How long a service's `ready` check is retried: 10 s unless `ready_timeout` says.
fn ready_timeout(src: &Source, sv: &raw::Service, diags: &mut Vec<Diagnostic>) -> Duration {
    const DEFAULT: Duration = Duration::from_secs(10);
    const MAX: Duration = Duration::from_secs(3600);
    let Some(t) = &sv.ready_timeout else {
        return DEFAULT;
    };
    if sv.ready.is_none() {
        diags.push(
            src.at_value(
                t,
                "`ready_timeout` without `ready`: there is no check to wait for",
            )
            .with_help("add a `ready` command, e.g. one that checks the port listens"),
        );
    }
    match units::parse_duration(t.get_ref()) {
        Ok(d) if d.is_zero() || d > MAX => {
            diags.push(
                src.at_value(
                    t,
                    format!(
                        "`ready_timeout` = \"{}\": expected more than 0 s and at most 1 h",
                        t.get_ref()
                    ),
                )
                .with_help(
                    "a service that needs longer to start should be started by a setup step",
                ),
            );
            DEFAULT
        }
        Ok(d) => d,
        Err(e) => {
            diags.push(src.at_value(t, format!("bad `ready_timeout`: {e}")));
            DEFAULT
        }
    }
}

/// The identifiers of a template expression (`size | lower` -> size, lower).
fn identifiers(expr: &str) -> Vec<String> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| {
            w.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        })
        .map(str::to_string)
        .collect()
}

/// Refuses a string parameter value starting with `-` for a parameter that begins a
/// shell word in the recipe's commands, where the tool would read it as an option.
pub fn refuse_option_like(
    src: &Source,
    name: &str,
    value: &Spanned<toml::Value>,
    diags: &mut Vec<Diagnostic>,
) {
    if let toml::Value::String(s) = value.get_ref()
        && s.starts_with('-')
    {
        diags.push(
            src.at_value(
                value,
                format!("parameter `{name}` = `{s}` starts with `-`, and the recipe puts `{name}` at the start of a shell word, where a command would take it as an option"),
            )
            .with_help(format!("use a value that does not start with `-`, or have the recipe pass it glued to its option, like `--{name}={{{{ {name} }}}}`")),
        );
    }
}

/// `needs.apt`: names that reach `apt-get install` as root, so only names in Debian's
/// grammar (policy 5.6.1: two or more of `a-z 0-9 + - .`, starting alphanumeric), with
/// an optional `:arch`. Never an option (`-o...`), a path (`./x.deb`), or the `pkg-`
/// (remove) and `pkg+` forms.
pub(super) fn packages(
    src: &Source,
    v: &[Spanned<String>],
    diags: &mut Vec<Diagnostic>,
) -> Vec<String> {
    v.iter()
        .map(|s| {
            let name = s.get_ref();
            if !is_debian_package(name) {
                diags.push(
                    src.at_value(
                        s,
                        format!(
                            "bad package `{}`: expected a Debian package name",
                            name.escape_debug()
                        ),
                    )
                    .with_help(
                        "lowercase letters, digits, `+`, `-` and `.`, at least two, starting \
                         with a letter or digit and not ending in `-` or `+` (optionally \
                         `:arch`), e.g. `fio` or `libssl3:arm64`",
                    ),
                );
            }
            name.clone()
        })
        .collect()
}

/// `needs.dnf`, `needs.apk`, `needs.pacman`: names that reach the package manager as
/// root. RPM, apk and pacman names share a plain grammar: a letter or digit, then
/// letters, digits and `+ - . _ @`; never an option, a path or a URL.
pub(super) fn packages_of(
    src: &Source,
    manager: crate::model::PackageManager,
    v: &[Spanned<String>],
    diags: &mut Vec<Diagnostic>,
) -> Vec<String> {
    if manager == crate::model::PackageManager::Apt {
        return packages(src, v, diags);
    }
    v.iter()
        .map(|s| {
            let name = s.get_ref();
            if !is_plain_package(name) {
                diags.push(
                    src.at_value(
                        s,
                        format!(
                            "bad package `{}`: expected a {manager} package name",
                            name.escape_debug()
                        ),
                    )
                    .with_help(
                        "letters, digits, `+`, `-`, `.`, `_` and `@`, starting with a letter \
                         or digit, at most 128, e.g. `fio` or `perl-Time-HiRes`",
                    ),
                );
            }
            name.clone()
        })
        .collect()
}

/// A package name for dnf, apk or pacman (see `packages_of`).
pub fn is_plain_package(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || b"+-._@".contains(&c))
}

pub fn is_debian_package(s: &str) -> bool {
    let (name, arch) = match s.split_once(':') {
        Some((n, a)) => (n, Some(a)),
        None => (s, None),
    };
    let b = name.as_bytes();
    let name_ok = b.len() >= 2
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"+-.".contains(&c))
        && !name.ends_with(['-', '+']);
    let arch_ok = arch.is_none_or(|a| {
        !a.is_empty()
            && a.bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
            && !a.starts_with('-')
            && !a.ends_with('-')
    });
    name_ok && arch_ok
}

/// A parameter value: a TOML integer, float, boolean or string.
pub fn param_value(
    src: &Source,
    value: &Spanned<toml::Value>,
    diags: &mut Vec<Diagnostic>,
) -> Option<ParamValue> {
    match value.get_ref() {
        toml::Value::Integer(i) => Some(ParamValue::Int(*i)),
        toml::Value::Float(f) if f.is_finite() => Some(ParamValue::Float(*f)),
        toml::Value::Boolean(b) => Some(ParamValue::Bool(*b)),
        toml::Value::String(s) => Some(ParamValue::Str(s.clone())),
        other => {
            diags.push(src.at_value(
                value,
                format!(
                    "a parameter is an integer, a finite float, a boolean or a string, not {}",
                    other.type_str()
                ),
            ));
            None
        }
    }
}

pub(super) fn side(
    src: &Source,
    on: Option<&Spanned<String>>,
    diags: &mut Vec<Diagnostic>,
) -> Side {
    let Some(on) = on else { return Side::Board };
    match on.get_ref().as_str() {
        "board" => Side::Board,
        "controller" => Side::Controller,
        "members" => Side::Members,
        "peer" => Side::Peer,
        other => {
            diags.push(
                src.at_value(on, format!("unknown side `{other}`; expected `board`, `controller`, `members` or `peer`"))
                    .with_help("`board` runs the command on the board under test (a cluster's control member), `controller` on this machine, `members` on every member of the system under test, `peer` on the board the `peer` parameter names"),
            );
            Side::Board
        }
    }
}

/// The most characters a metric's label may have: it heads a table column.
pub(super) const MAX_LABEL_CHARS: usize = 80;

/// A `label`: one line of text a report shows, neither empty nor long.
pub(super) fn metric_label(
    src: &Source,
    label: Option<&Spanned<String>>,
    diags: &mut Vec<Diagnostic>,
) -> Option<String> {
    let label = label?;
    check_label(src, label, "label", diags);
    Some(label.get_ref().trim().to_string())
}

/// Checks one line of text a report shows (a label, a table title): no control
/// character, not empty, at most `MAX_LABEL_CHARS`.
pub(super) fn check_label(
    src: &Source,
    text: &Spanned<String>,
    what: &str,
    diags: &mut Vec<Diagnostic>,
) {
    let t = text.get_ref();
    if let Err(e) = names::control_free(t, false) {
        diags.push(src.at_value(text, format!("`{what}` {e}")));
    } else if t.trim().is_empty() {
        diags.push(src.at_value(
            text,
            format!("`{what}` must not be empty: it is what the report shows"),
        ));
    } else if t.chars().count() > MAX_LABEL_CHARS {
        diags.push(src.at_value(
            text,
            format!(
                "`{what}` has {} characters; at most {MAX_LABEL_CHARS} fit a table",
                t.chars().count()
            ),
        ));
    }
}
