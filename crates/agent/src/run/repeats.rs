//! Noticing a model that only repeats itself, so the run ends with
//! [`StopReason::NoProgress`](engram_core::StopReason::NoProgress) instead of at the step limit.
//!
//! An effect is what one tool call did: `name\0arguments\0status\0result` (time left out),
//! `status` being the `Debug` name of its [`ToolStatus`](engram_core::ToolStatus).

use std::collections::HashMap;

/// How many times a tool effect (call, arguments, result) may happen in a run before a step
/// that only repeats such effects ends the run. Once is allowed: a model may check a result
/// again.
const SAME_EFFECT: u32 = 2;

/// How many times the same call (tool and arguments) may be made in a run, whatever it
/// returned, before a step that only repeats such calls ends the run: a small model searching
/// its history for the same words step after step gets a slightly different result each time
/// (the history grows with its own calls), and would go on to the step limit.
const SAME_CALL: u32 = 3;

/// How many times in a row a tool may fail before a step whose calls only fail again, each
/// of a tool already failing that often, ends the run. Arguments are left out on purpose: a
/// small model retrying a refused date moves the time it writes on by a second each step, so
/// no two of its calls are the same, and the step limit was the only thing that stopped it.
const SAME_TOOL_FAILS: u32 = 3;

/// The status an effect records for a failed call.
const FAILED: &str = "Failed";

/// The call part (tool and arguments) of an effect.
fn call_of(effect: &str) -> &str {
    let mut ends = effect.match_indices('\0').map(|(i, _)| i);
    match (ends.next(), ends.next()) {
        (Some(_), Some(end)) => &effect[..end],
        _ => effect,
    }
}

/// The tool name and whether the call failed.
fn tool_and_failed(effect: &str) -> (&str, bool) {
    let mut parts = effect.split('\0');
    let name = parts.next().unwrap_or_default();
    let status = parts.nth(1).unwrap_or_default();
    (name, status == FAILED)
}

/// How often each effect and each call happened in one run, and how many times in a row
/// each tool has failed.
#[derive(Default)]
pub(super) struct Repeats {
    effects: HashMap<String, u32>,
    calls: HashMap<String, u32>,
    failing: HashMap<String, u32>,
}

impl Repeats {
    /// Whether a step whose tool calls did `effects` only repeated what the run did enough
    /// times already (a step without tool calls never does).
    pub fn only_repeats(&self, effects: &[String]) -> bool {
        !effects.is_empty()
            && (effects
                .iter()
                .all(|e| self.effects.get(e).is_some_and(|n| *n >= SAME_EFFECT))
                || effects
                    .iter()
                    .all(|e| self.calls.get(call_of(e)).is_some_and(|n| *n >= SAME_CALL))
                || effects.iter().all(|e| {
                    let (tool, failed) = tool_and_failed(e);
                    failed
                        && self
                            .failing
                            .get(tool)
                            .is_some_and(|n| *n >= SAME_TOOL_FAILS)
                }))
    }

    /// Counts a step's effects.
    pub fn record(&mut self, effects: Vec<String>) {
        for e in effects {
            let (tool, failed) = tool_and_failed(&e);
            if failed {
                *self.failing.entry(tool.to_owned()).or_default() += 1;
            } else {
                self.failing.remove(tool);
            }
            *self.calls.entry(call_of(&e).to_owned()).or_default() += 1;
            *self.effects.entry(e).or_default() += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effect(args: &str, result: &str) -> String {
        format!("archival_memory_search\0{args}\0ok\0{result}")
    }

    #[test]
    fn the_same_effect_a_third_time_is_a_repeat() {
        let mut r = Repeats::default();
        let step = vec![effect("{\"query\":\"x\"}", "none")];
        assert!(!r.only_repeats(&step));
        r.record(step.clone());
        assert!(!r.only_repeats(&step), "once more is allowed");
        r.record(step.clone());
        assert!(r.only_repeats(&step));
    }

    #[test]
    fn the_same_call_with_new_results_repeats_after_three() {
        let mut r = Repeats::default();
        for n in 0..3 {
            let step = vec![effect("{\"query\":\"x\"}", &format!("result {n}"))];
            assert!(!r.only_repeats(&step), "call {n}");
            r.record(step);
        }
        assert!(r.only_repeats(&[effect("{\"query\":\"x\"}", "result 3")]));
    }

    #[test]
    fn a_tool_failing_again_and_again_with_new_arguments_repeats() {
        let failed = |n: u32| {
            format!(
                "conversation_search\0{{\"start_date\":\"2026-11-28 11:49:{n:02} AM UTC\"}}\0{FAILED}\0not a date"
            )
        };
        let mut r = Repeats::default();
        for n in 0..3 {
            assert!(!r.only_repeats(&[failed(n)]), "failure {n}");
            r.record(vec![failed(n)]);
        }
        assert!(r.only_repeats(&[failed(3)]));
        assert!(
            !r.only_repeats(&[failed(3), effect("{\"query\":\"y\"}", "found")]),
            "a step that also does something else goes on"
        );
    }

    #[test]
    fn a_success_between_failures_starts_the_count_again() {
        let failed = format!("send_message\0{{}}\0{FAILED}\0missing message");
        let ok = |n: u32| format!("send_message\0{{\"message\":\"{n}\"}}\0Ok\0sent");
        let mut r = Repeats::default();
        r.record(vec![failed.clone(), failed.clone()]);
        r.record(vec![ok(1)]);
        r.record(vec![failed.clone()]);
        assert!(
            !r.only_repeats(&[format!(
                "send_message\0{{\"x\":1}}\0{FAILED}\0missing message"
            )]),
            "one failure since the last success"
        );
    }

    #[test]
    fn a_step_with_something_new_is_not_a_repeat() {
        let mut r = Repeats::default();
        let old = effect("{\"query\":\"x\"}", "none");
        r.record(vec![old.clone(), old.clone()]);
        assert!(r.only_repeats(std::slice::from_ref(&old)));
        assert!(!r.only_repeats(&[old, effect("{\"query\":\"y\"}", "none")]));
        assert!(!r.only_repeats(&[]), "no tool calls: the loop decides");
    }
}
