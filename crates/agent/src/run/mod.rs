//! The agent loop: one user message starts a run of steps; each step compiles the context,
//! calls the model, answers every tool call it returned, and commits all of it in one
//! transaction. The run goes on while the model asks to (heartbeat in the classic loop, tool
//! calls in the tool loop) up to the step limit.
//!
//! The files follow a run's life:
//! - `runtime`: the [`Runtime`] and what it checks before a run writes anything;
//! - `turn`: one run per agent at a time ([`Turn`], [`Claim`]);
//! - `lease`: the agent's lease a run holds, so one run per agent holds across replicas;
//! - `drive`: a run from the user's message to its `Done` event, and how it ended;
//! - `step`: one step in its phases (prepare, call the model, answer the calls, commit);
//! - `call`: the model call itself (streaming, retries, time limit, cancel);
//! - `repeats`: noticing a model that only repeats itself;
//! - `setup`: what a run carries from step to step.

mod call;
mod drive;
mod lease;
mod repeats;
mod runtime;
mod setup;
mod step;
mod turn;

pub use lease::LeaseHold;
pub use runtime::Runtime;
pub(crate) use setup::RunContext;
pub(crate) use step::go_on_after_refusals;
pub use turn::{Claim, Turn};
