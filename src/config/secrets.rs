//! A recipe's secrets (`secrets = [...]`, the `secrets` template variable,
//! `input_secret`) and the steps that run after its services (`after = "services"`).

use toml::Spanned;

use super::{Source, names, raw, template};
use crate::diag::Diagnostic;
use crate::model::{Side, StepInput};

/// At most this many secrets per recipe: each is a file read after every command.
const MAX_SECRETS: usize = 16;

/// `secrets = ["admin_password", "cookie"]`: file names in the cell's secret
/// directory, so plain names, each once.
pub(super) fn names(
    src: &Source,
    raw: &[Spanned<String>],
    diags: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in raw {
        let name = s.get_ref();
        if !names::is_plain_name(name) || name.len() > 64 {
            diags.push(
                src.at_value(
                    s,
                    format!("bad secret name `{}`: it names a file in the cell's secret directory", name.escape_debug()),
                )
                .with_help("letters, digits, `-`, `_` and `.`, starting with a letter or digit, at most 64"),
            );
        } else if out.contains(name) {
            diags.push(src.at_value(s, format!("secret `{name}` is declared twice")));
        } else {
            out.push(name.clone());
        }
    }
    if let Some(s) = raw.get(MAX_SECRETS) {
        diags.push(src.at_value(
            s,
            format!("at most {MAX_SECRETS} secrets per recipe: each is read after every command"),
        ));
    }
    out
}

/// A template that uses `secrets`: only in a recipe that declares secrets, and only on
/// the controller, where the directory is.
pub(super) fn check_use(
    src: &Source,
    command: &Spanned<String>,
    declared: &[String],
    on: Side,
    diags: &mut Vec<Diagnostic>,
) {
    let span = template::word_span(&src.text, command.span(), "secrets");
    if declared.is_empty() {
        diags.push(
            src.at(
                span,
                "`secrets` is the cell's secret directory, but this recipe declares no `secrets`",
            )
            .with_help("declare them at the top of the recipe: `secrets = [\"cookie\"]`"),
        );
    } else if on == Side::Board {
        diags.push(
            src.at(
                span,
                "`secrets` is a directory on the controller: a board command cannot read it",
            )
            .with_help("give the board command the secret on its stdin: `input_secret = \"NAME\"`"),
        );
    }
}

/// A step's stdin: `input` (a string parameter naming a controller file) or
/// `input_secret` (one of the recipe's secrets), not both.
pub(super) fn step_input(
    src: &Source,
    step: &raw::Step,
    param: Option<String>,
    declared: &[String],
    diags: &mut Vec<Diagnostic>,
) -> Option<StepInput> {
    let Some(secret) = &step.input_secret else {
        return param.map(StepInput::Param);
    };
    let name = secret.get_ref();
    if step.input.is_some() {
        diags.push(src.at_value(
            secret,
            "a step has one stdin: `input` or `input_secret`, not both",
        ));
        return None;
    }
    if !declared.contains(name) {
        let help = names::help_for(name, declared.iter().map(String::as_str), "secrets");
        diags.push(
            src.at_value(
                secret,
                format!("`input_secret` = \"{name}\" is not a secret of this recipe"),
            )
            .with_help(format!("{help}; declare it in `secrets = [...]`")),
        );
        return None;
    }
    Some(StepInput::Secret(name.clone()))
}

/// Whether a `[[setup]]` step runs after the cell's services (`after = "services"`).
pub(super) fn after_services(src: &Source, step: &raw::Step, diags: &mut Vec<Diagnostic>) -> bool {
    let Some(after) = &step.after else {
        return false;
    };
    if after.get_ref() == "services" {
        return true;
    }
    diags.push(
        src.at_value(
            after,
            format!("`after` = \"{}\": expected \"services\"", after.get_ref().escape_debug()),
        )
        .with_help("a setup step runs before the services, or with `after = \"services\"` once they are ready"),
    );
    false
}

/// `after` and `input_secret` belong to setup (and `input_secret` to teardown) steps.
pub(super) fn refuse_on(src: &Source, step: &raw::Step, table: &str, diags: &mut Vec<Diagnostic>) {
    if let Some(a) = &step.after {
        diags.push(
            src.at_value(
                a,
                format!("`after` is for `[[setup]]` steps, not `[[{table}]]`"),
            )
            .with_help(
                "`after = \"services\"` runs a setup step once the cell's services are ready",
            ),
        );
    }
    if table == "requires" {
        for (key, v) in [("input", &step.input), ("input_secret", &step.input_secret)] {
            if let Some(v) = v {
                diags.push(src.at_value(
                    v,
                    format!("`{key}` is for setup and teardown steps, not `[[requires]]`"),
                ));
            }
        }
    }
}
