//! The translated template's `Conditions`, evaluated for the parameter values the policy is
//! derived with (and, through [`holds`] and [`parameter_value`], for the template's tests). Every one must hold, so that every conditional resource (and every `Fn::If`
//! branch) is in the translation whose resource types the policy covers: a condition added to
//! the template that these values leave false fails the generator until a value for it is
//! added to [`super::OPTIONAL_RESOURCES_ON`].
//!
//! Only what the template uses is evaluated: `Fn::Equals`, `Fn::Not`, `Fn::And`, `Fn::Or`,
//! `Condition`, and operands that are literals, `Ref`s to parameters (their given value, else
//! their `Default`) and `Fn::Join`; anything else is refused, never guessed.

use anyhow::{anyhow, bail};
use serde_json::Value;

use crate::cloudformation::Parameters;

/// Deeper than this, a condition is taken to refer to itself.
const MAX_DEPTH: usize = 32;

/// Fails naming the first condition of `doc` that does not hold for `parameters`.
pub(super) fn check_all_hold(doc: &Value, parameters: &Parameters) -> anyhow::Result<()> {
    let eval = Eval { doc, parameters };
    let names = doc
        .get("Conditions")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|c| c.keys());
    for name in names {
        if !eval.condition(name, 0)? {
            bail!(
                "condition {name} is false with the policy's parameter values, so the resources \
                 under it would not count: give it a value in OPTIONAL_RESOURCES_ON"
            );
        }
    }
    Ok(())
}

/// Whether the condition `name` of the template `doc` holds for `parameters` (each
/// parameter's given value, else its `Default`).
pub fn holds(doc: &Value, parameters: &Parameters, name: &str) -> anyhow::Result<bool> {
    Eval { doc, parameters }.condition(name, 0)
}

/// A parameter's value as CloudFormation hands it to the template: its text, or a
/// `CommaDelimitedList` as a list of strings (an empty one is `[""]`).
pub fn parameter_value(doc: &Value, parameters: &Parameters, name: &str) -> anyhow::Result<Value> {
    Ok(match (Eval { doc, parameters }).parameter(name)? {
        Operand::Text(text) => Value::String(text),
        Operand::List(items) => Value::Array(items.into_iter().map(Value::String).collect()),
    })
}

/// What an operand evaluates to.
#[derive(Debug, PartialEq)]
enum Operand {
    Text(String),
    List(Vec<String>),
}

/// A template and the parameter values it is evaluated with.
struct Eval<'a> {
    doc: &'a Value,
    parameters: &'a Parameters,
}

impl Eval<'_> {
    /// The named condition.
    fn condition(&self, name: &str, depth: usize) -> anyhow::Result<bool> {
        if depth > MAX_DEPTH {
            bail!("condition {name} refers to itself");
        }
        let expr = self
            .doc
            .get("Conditions")
            .and_then(|c| c.get(name))
            .ok_or_else(|| anyhow!("no condition {name}"))?;
        self.boolean(expr, depth + 1)
            .map_err(|e| anyhow!("condition {name}: {e}"))
    }

    /// A condition function.
    fn boolean(&self, expr: &Value, depth: usize) -> anyhow::Result<bool> {
        let (function, args) = single_key(expr)?;
        let list = || {
            args.as_array()
                .ok_or_else(|| anyhow!("{function} takes a list: {args}"))
        };
        match function {
            "Fn::Equals" => match list()?.as_slice() {
                [a, b] => Ok(self.operand(a)? == self.operand(b)?),
                other => bail!("Fn::Equals takes two operands, not {}", other.len()),
            },
            "Fn::Not" => match list()?.as_slice() {
                [inner] => Ok(!self.boolean(inner, depth + 1)?),
                other => bail!("Fn::Not takes one condition, not {}", other.len()),
            },
            "Fn::And" => list()?
                .iter()
                .try_fold(true, |all, c| Ok(self.boolean(c, depth + 1)? && all)),
            "Fn::Or" => list()?
                .iter()
                .try_fold(false, |any, c| Ok(self.boolean(c, depth + 1)? || any)),
            "Condition" => {
                let name = args
                    .as_str()
                    .ok_or_else(|| anyhow!("Condition names a condition: {args}"))?;
                self.condition(name, depth + 1)
            }
            other => bail!("{other} is not evaluated here"),
        }
    }

    /// An operand of `Fn::Equals` or `Fn::Join`.
    fn operand(&self, expr: &Value) -> anyhow::Result<Operand> {
        match expr {
            Value::String(s) => Ok(Operand::Text(s.clone())),
            Value::Number(n) => Ok(Operand::Text(n.to_string())),
            Value::Bool(b) => Ok(Operand::Text(b.to_string())),
            Value::Array(items) => items
                .iter()
                .map(|item| match self.operand(item)? {
                    Operand::Text(text) => Ok(text),
                    Operand::List(_) => bail!("a list inside a list: {expr}"),
                })
                .collect::<anyhow::Result<_>>()
                .map(Operand::List),
            Value::Object(_) => self.function_operand(expr),
            Value::Null => bail!("null operand"),
        }
    }

    /// `Ref` to a parameter, or `Fn::Join`.
    fn function_operand(&self, expr: &Value) -> anyhow::Result<Operand> {
        let (function, args) = single_key(expr)?;
        match function {
            "Ref" => {
                let name = args
                    .as_str()
                    .ok_or_else(|| anyhow!("Ref takes a name: {args}"))?;
                self.parameter(name)
            }
            "Fn::Join" => match args.as_array().map(Vec::as_slice) {
                Some([Value::String(separator), items]) => match self.operand(items)? {
                    Operand::List(items) => Ok(Operand::Text(items.join(separator))),
                    Operand::Text(_) => bail!("Fn::Join of a single value: {expr}"),
                },
                _ => bail!("Fn::Join takes [separator, list]: {expr}"),
            },
            other => bail!("{other} is not evaluated here"),
        }
    }

    /// A parameter's value: the one given, else its `Default`; a `CommaDelimitedList` as a
    /// list.
    fn parameter(&self, name: &str) -> anyhow::Result<Operand> {
        let declared = self
            .doc
            .get("Parameters")
            .and_then(|p| p.get(name))
            .ok_or_else(|| {
                anyhow!("Ref {name}: not a parameter (pseudo parameters are not evaluated)")
            })?;
        let value = match self.parameters.get(name) {
            Some(given) => given.to_owned(),
            None => match declared.get("Default") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => bail!("parameter {name} has no value and no default"),
            },
        };
        if declared.get("Type").and_then(Value::as_str) == Some("CommaDelimitedList") {
            Ok(Operand::List(
                value
                    .split(',')
                    .map(|item| item.trim().to_owned())
                    .collect(),
            ))
        } else {
            Ok(Operand::Text(value))
        }
    }
}

/// The one key of an intrinsic function object, and its argument.
fn single_key(expr: &Value) -> anyhow::Result<(&str, &Value)> {
    match expr
        .as_object()
        .map(|o| o.iter().collect::<Vec<_>>())
        .as_deref()
    {
        Some([(key, value)]) => Ok((key.as_str(), value)),
        _ => bail!("not an intrinsic function: {expr}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template() -> Value {
        json!({
            "Parameters": {
                "Url": {"Type": "String", "Default": "disabled"},
                "Email": {"Type": "String", "Default": ""},
                "Reserved": {"Type": "Number", "Default": 50},
                "Arns": {"Type": "CommaDelimitedList", "Default": ""}
            },
            "Conditions": {
                "HasUrl": {"Fn::Equals": [{"Ref": "Url"}, "enabled"]},
                "HasEmail": {"Fn::Not": [{"Fn::Equals": [{"Ref": "Email"}, ""]}]},
                "Reserves": {"Fn::Not": [{"Fn::Equals": [{"Ref": "Reserved"}, 0]}]},
                "HasArns": {"Fn::Not": [{"Fn::Equals": [{"Fn::Join": [",", {"Ref": "Arns"}]}, ""]}]},
                "Both": {"Fn::And": [{"Condition": "HasUrl"}, {"Condition": "HasEmail"}]},
                "Either": {"Fn::Or": [{"Condition": "HasUrl"}, {"Condition": "HasEmail"}]}
            }
        })
    }

    fn holds(parameters: &Parameters, name: &str) -> bool {
        let doc = template();
        Eval {
            doc: &doc,
            parameters,
        }
        .condition(name, 0)
        .unwrap()
    }

    #[test]
    fn defaults_and_given_values() {
        let mut p = Parameters::default();
        assert!(!holds(&p, "HasUrl"));
        assert!(!holds(&p, "HasEmail"));
        assert!(holds(&p, "Reserves"), "50 is not 0");
        assert!(!holds(&p, "HasArns"));
        assert!(!holds(&p, "Either"));
        p.set("Url", "enabled");
        assert!(holds(&p, "HasUrl"));
        assert!(holds(&p, "Either"));
        assert!(!holds(&p, "Both"));
        p.set("Email", "a@example.com").set("Arns", "arn:a,arn:b");
        assert!(holds(&p, "Both"));
        assert!(holds(&p, "HasArns"));
        p.set("Reserved", "0");
        assert!(!holds(&p, "Reserves"));
    }

    #[test]
    fn every_condition_must_hold() {
        let doc = template();
        let mut p = Parameters::default();
        p.set("Url", "enabled").set("Email", "a@example.com");
        let err = check_all_hold(&doc, &p).unwrap_err().to_string();
        assert!(err.contains("HasArns"), "{err}");
        p.set("Arns", "arn:a");
        check_all_hold(&doc, &p).unwrap();
    }

    #[test]
    fn what_is_not_understood_is_refused() {
        let doc = json!({
            "Parameters": {},
            "Conditions": {
                "Region": {"Fn::Equals": [{"Ref": "AWS::Region"}, "us-east-1"]},
                "Loop": {"Condition": "Loop"},
                "Odd": {"Fn::Contains": [["a"], "a"]}
            }
        });
        let p = Parameters::default();
        let eval = Eval {
            doc: &doc,
            parameters: &p,
        };
        for (name, says) in [
            ("Region", "AWS::Region"),
            ("Loop", "refers to itself"),
            ("Odd", "Fn::Contains"),
            ("Missing", "no condition Missing"),
        ] {
            let e = format!("{:#}", eval.condition(name, 0).unwrap_err());
            assert!(e.contains(name) && e.contains(says), "{name}: {e}");
        }
    }
}
