//! Noticing a model that only repeats itself, so the run ends with
//! [`StopReason::NoProgress`](engram_core::StopReason::NoProgress) instead of at the step limit.
//!
//! An effect is what one tool call did: `name\0arguments\0status\0result` (time left out).

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

/// The call part (tool and arguments) of an effect.
fn call_of(effect: &str) -> &str {
    let mut ends = effect.match_indices('\0').map(|(i, _)| i);
    match (ends.next(), ends.next()) {
        (Some(_), Some(end)) => &effect[..end],
        _ => effect,
    }
}

/// How often each effect and each call happened in one run.
#[derive(Default)]
pub(super) struct Repeats {
    effects: HashMap<String, u32>,
    calls: HashMap<String, u32>,
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
                    .all(|e| self.calls.get(call_of(e)).is_some_and(|n| *n >= SAME_CALL)))
    }

    /// Counts a step's effects.
    pub fn record(&mut self, effects: Vec<String>) {
        for e in effects {
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
    fn a_step_with_something_new_is_not_a_repeat() {
        let mut r = Repeats::default();
        let old = effect("{\"query\":\"x\"}", "none");
        r.record(vec![old.clone(), old.clone()]);
        assert!(r.only_repeats(std::slice::from_ref(&old)));
        assert!(!r.only_repeats(&[old, effect("{\"query\":\"y\"}", "none")]));
        assert!(!r.only_repeats(&[]), "no tool calls: the loop decides");
    }
}
