//! How long a tool's calls may run: the rule behind each call's server-side deadline.

use std::time::Duration;

use serde_json::Value;

/// When a tool's calls must end; the peer turns it into each call's deadline when the call
/// arrives, and emits [`super::Effect::Deadline`] when that passes.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Timeout {
    /// The same for every call.
    Fixed(Duration),
    /// Seconds given by the call's numeric argument `name`, at most `max`; `default` when the
    /// argument is missing or not a positive number (arguments are validated against the
    /// tool's schema before the handler sees them, which then refuses a bad value).
    Argument {
        /// The argument.
        name: String,
        /// Without the argument.
        default: Duration,
        /// The most the argument may ask for.
        max: Duration,
    },
}

impl Timeout {
    /// The time a call with `arguments` may take.
    pub fn for_call(&self, arguments: &Value) -> Duration {
        match self {
            Timeout::Fixed(d) => *d,
            Timeout::Argument { name, default, max } => arguments
                .get(name)
                .and_then(Value::as_f64)
                .filter(|s| *s > 0.0 && s.is_finite())
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .unwrap_or(*default)
                .min(*max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_argument_rule_takes_the_argument_within_its_bounds() {
        let s = Duration::from_secs;
        let rule = Timeout::Argument {
            name: "timeout".into(),
            default: s(60),
            max: s(600),
        };
        assert_eq!(
            rule.for_call(&json!({"timeout": 2.5})),
            Duration::from_millis(2500)
        );
        assert_eq!(rule.for_call(&json!({"timeout": 1e9})), s(600));
        assert_eq!(rule.for_call(&json!({})), s(60));
        for bad in [json!(-1), json!(0), json!("5"), json!(null)] {
            assert_eq!(rule.for_call(&json!({ "timeout": bad })), s(60));
        }
        assert_eq!(Timeout::Fixed(s(3)).for_call(&json!({"timeout": 1})), s(3));
    }
}
