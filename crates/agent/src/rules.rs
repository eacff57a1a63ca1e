//! Tool rules (Letta's `tool_rules`) enforced by the loop.
//!
//! Two levers: before a model call the tools offered are narrowed to what the rules allow next
//! ([`Rules::allowed`]), and each call the model makes anyway is checked ([`Rules::check`]); a
//! call that breaks a rule is answered with a `Failed` result naming the rule, so the model can
//! correct itself and every call still gets exactly one result. After a call runs,
//! [`Rules::record`] updates the run's history, and [`Rules::after`] says whether the rules end
//! the run (`exit_loop`) or keep it going (`continue_loop`).
//!
//! Letta counts a "step" as one whole run of its loop; so do `max_count_per_step` and
//! `run_first` here (per user message, not per model call).

use engram_core::ToolRule;
use std::collections::HashMap;

/// The rules of one agent and what its current run has called so far.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    rules: Vec<ToolRule>,
    /// Calls that ran this run, per tool.
    counts: HashMap<String, u32>,
    /// The last tool that ran this run.
    last: Option<String>,
    /// Whether any tool ran this run yet.
    any: bool,
}

/// What the rules say after a call ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct After {
    /// An `exit_loop` rule: end the run.
    pub terminal: bool,
    /// A `continue_loop` rule: take another step.
    pub keep_going: bool,
}

impl Rules {
    /// The rules of an agent, at the start of a run.
    pub(crate) fn new(rules: &[ToolRule]) -> Self {
        Self {
            rules: rules.iter().filter(|r| r.is_enforced()).cloned().collect(),
            ..Self::default()
        }
    }

    /// Of `offered` (the agent's tools), those the next call may use; all of them when no rule
    /// narrows the choice. Never empty while `offered` is not (an impossible set of rules
    /// falls back to the checks of [`check`](Self::check)).
    pub(crate) fn allowed(&self, offered: &[String]) -> Vec<String> {
        let allowed: Vec<String> = offered
            .iter()
            .filter(|name| self.check(name).is_ok())
            .cloned()
            .collect();
        if allowed.is_empty() {
            offered.to_vec()
        } else {
            allowed
        }
    }

    /// Whether `name` may run now; the error names the rule it breaks.
    pub(crate) fn check(&self, name: &str) -> Result<(), String> {
        if !self.any {
            let first: Vec<&str> = self
                .rules
                .iter()
                .filter_map(|r| match r {
                    ToolRule::RunFirst { tool_name } => Some(tool_name.as_str()),
                    _ => None,
                })
                .collect();
            if !first.is_empty() && !first.contains(&name) {
                return Err(format!(
                    "Tool rule run_first: the first tool of this turn must be {}; call it before '{name}'.",
                    first.join(" or ")
                ));
            }
        }
        if let Some(last) = &self.last {
            for r in &self.rules {
                if let ToolRule::ConstrainChildTools {
                    tool_name,
                    children,
                } = r
                    && tool_name == last
                    && !children.iter().any(|c| c == name)
                {
                    return Err(format!(
                        "Tool rule constrain_child_tools: after '{last}' the next tool must be one of {}; '{name}' is not allowed now.",
                        children.join(", ")
                    ));
                }
            }
        }
        for r in &self.rules {
            if let ToolRule::MaxCountPerStep {
                tool_name,
                max_count_limit,
            } = r
                && tool_name == name
                && self.counts.get(name).copied().unwrap_or(0) >= *max_count_limit
            {
                return Err(format!(
                    "Tool rule max_count_per_step: '{name}' may run at most {max_count_limit} time(s) per turn, and that limit is reached."
                ));
            }
        }
        Ok(())
    }

    /// Records that `name` ran, and says what the rules make of it.
    pub(crate) fn record(&mut self, name: &str) -> After {
        *self.counts.entry(name.to_owned()).or_default() += 1;
        self.last = Some(name.to_owned());
        self.any = true;
        let mut after = After::default();
        for r in &self.rules {
            match r {
                ToolRule::ExitLoop { tool_name } if tool_name == name => after.terminal = true,
                ToolRule::ContinueLoop { tool_name } if tool_name == name => {
                    after.keep_going = true
                }
                _ => {}
            }
        }
        after
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn run_first_then_children_then_free() {
        let mut r = Rules::new(&[
            ToolRule::RunFirst {
                tool_name: "a".into(),
            },
            ToolRule::ConstrainChildTools {
                tool_name: "a".into(),
                children: names(&["b"]),
            },
        ]);
        let all = names(&["a", "b", "c"]);
        assert_eq!(r.allowed(&all), names(&["a"]));
        assert!(r.check("c").unwrap_err().contains("run_first"));
        r.record("a");
        assert_eq!(r.allowed(&all), names(&["b"]));
        assert!(r.check("c").unwrap_err().contains("constrain_child_tools"));
        r.record("b");
        assert_eq!(r.allowed(&all), all);
    }

    #[test]
    fn max_count_and_exit_and_continue() {
        let mut r = Rules::new(&[
            ToolRule::MaxCountPerStep {
                tool_name: "a".into(),
                max_count_limit: 1,
            },
            ToolRule::ExitLoop {
                tool_name: "b".into(),
            },
            ToolRule::ContinueLoop {
                tool_name: "a".into(),
            },
        ]);
        assert_eq!(
            r.record("a"),
            After {
                terminal: false,
                keep_going: true
            }
        );
        assert!(r.check("a").unwrap_err().contains("max_count_per_step"));
        assert_eq!(r.allowed(&names(&["a", "b"])), names(&["b"]));
        assert!(r.record("b").terminal);
    }
}
