//! A file's key mistakes: serde's messages for an unknown or missing key reworded (a
//! literal `password` explained, a near name suggested), and an unknown key removed from
//! the parsed document, so that deserializing it again finds the next mistake.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

use super::names;

/// Removes the key whose span is `span`, wherever it is nested. Returns whether it was
/// found.
pub(super) fn remove_key_at(table: &mut DeTable<'_>, span: &Range<usize>) -> bool {
    let found = table
        .keys()
        .find(|key| key.span() == *span)
        .map(|key| key.get_ref().to_string());
    if let Some(name) = found {
        return table.remove(name.as_str()).is_some();
    }
    table
        .iter_mut()
        .any(|(_, value)| remove_key_in_value(value.get_mut(), span))
}

fn remove_key_in_value(value: &mut DeValue<'_>, span: &Range<usize>) -> bool {
    match value {
        DeValue::Table(t) => remove_key_at(t, span),
        DeValue::Array(items) => items
            .iter_mut()
            .any(|item| remove_key_in_value(item.get_mut(), span)),
        _ => false,
    }
}

/// Rewords serde's messages for the mistakes people make most: an unknown or missing key.
pub(super) fn explain_toml_message(message: &str) -> (String, Option<String>) {
    let message = message.trim();
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let Some((key, rest)) = rest.split_once('`') else {
            return (message.to_string(), None);
        };
        let expected: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
        if key == "password" && expected.contains(&"password_env") {
            return (
                "a literal `password` is not allowed in a board file".into(),
                Some(
                    "keep the password out of files: put it in an environment variable and set `password_env = \"VARIABLE_NAME\"`"
                        .into(),
                ),
            );
        }
        let list = expected
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let text = if expected.is_empty() {
            format!("unknown key `{key}`: this table takes no keys")
        } else {
            format!("unknown key `{key}`; expected one of {list}")
        };
        let help = names::did_you_mean(key, expected.iter().copied())
            .map(|s| format!("did you mean `{s}`?"));
        return (text, help);
    }
    if let Some(rest) = message.strip_prefix("missing field `")
        && let Some((key, _)) = rest.split_once('`')
    {
        return (format!("missing required key `{key}`"), None);
    }
    (message.to_string(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_messages() {
        let (m, h) = explain_toml_message("unknown field `hots`, expected one of `host`, `port`");
        assert!(m.contains("unknown key `hots`"), "{m}");
        assert_eq!(h.as_deref(), Some("did you mean `host`?"));
        let (m, _) = explain_toml_message(
            "unknown field `password`, expected one of `host`, `password_env`",
        );
        assert!(m.contains("literal `password`"), "{m}");
    }
}
