//! The service's sleep-time API: settings, budgets, a pass run now, the record of past passes
//! and undo (see `sleeptime` for when passes run by themselves).

use crate::Engram;
use crate::Notice;
use engram_core::{
    AgentId, PassId, PassTrigger, Result, SleeptimeBudget, SleeptimePass, SleeptimeSettings,
};

impl Engram {
    /// The agent's sleep-time settings. Errors: `not_found`.
    pub fn sleeptime_settings(&self, agent: &AgentId) -> Result<SleeptimeSettings> {
        self.store.sleeptime_settings(agent)
    }

    /// Sets the agent's sleep-time settings. Errors: `not_found`; `invalid_input` for a
    /// frequency, step limit or timeout of 0.
    pub fn set_sleeptime_settings(&self, agent: &AgentId, s: &SleeptimeSettings) -> Result<()> {
        self.store.set_sleeptime_settings(agent, s)?;
        self.notify(Notice::AgentChanged {
            agent_id: agent.clone(),
        });
        Ok(())
    }

    /// User turns since the last message a pass read (what counts toward the frequency).
    /// Errors: `not_found`.
    pub fn sleeptime_turns_waiting(&self, agent: &AgentId) -> Result<u32> {
        Ok(self.store.sleeptime_backlog(agent)?.0)
    }

    /// The last message the agent's passes read, or `None` before its first pass.
    /// Errors: `not_found`.
    pub fn sleeptime_last_message(
        &self,
        agent: &AgentId,
    ) -> Result<Option<engram_core::MessageId>> {
        self.store.sleeptime_last_message(agent)
    }

    /// The budget over every agent's passes.
    pub fn sleeptime_budget(&self) -> Result<SleeptimeBudget> {
        self.store.sleeptime_budget()
    }

    /// Sets the budget over every agent's passes.
    pub fn set_sleeptime_budget(&self, budget: &SleeptimeBudget) -> Result<()> {
        self.store.set_sleeptime_budget(budget)
    }

    /// Runs a sleep-time pass of the agent now and waits for it (also when passes are off:
    /// asking is enough). Over budget it is skipped and the record says why. Errors:
    /// `conflict` while a pass of the agent runs; `not_found`; configuration errors of the
    /// pass's model.
    pub async fn run_sleeptime_pass(&self, agent: &AgentId) -> Result<SleeptimePass> {
        self.sleeper.run(agent, PassTrigger::Manual).await
    }

    /// Whether a pass of the agent is running now.
    pub fn sleeptime_running(&self, agent: &AgentId) -> bool {
        self.sleeper.is_running(agent)
    }

    /// The agent's passes, newest first, with their changes ("while you were away").
    pub fn sleeptime_passes(&self, agent: &AgentId, limit: usize) -> Result<Vec<SleeptimePass>> {
        self.store.list_passes(agent, limit)
    }

    /// Undoes one change of a pass (a block edit through the block's versioned undo, a
    /// passage put back as current, an added passage taken away). Errors: `not_found`;
    /// `conflict` when a later edit rewrote what the change wrote.
    pub fn undo_sleeptime_change(&self, pass: &PassId, index: u32) -> Result<SleeptimePass> {
        let p = self.store.undo_pass_change(pass, index)?;
        self.sleeper.announce(&p);
        Ok(p)
    }

    /// Undoes every change of a pass still standing, all or none. Errors as
    /// [`undo_sleeptime_change`](Self::undo_sleeptime_change).
    pub fn undo_sleeptime_pass(&self, pass: &PassId) -> Result<SleeptimePass> {
        let p = self.store.undo_pass(pass)?;
        self.sleeper.announce(&p);
        Ok(p)
    }

    /// Stops passes in flight (they write nothing) and idle timers, before the process exits.
    pub fn stop_sleeptime(&self) {
        self.sleeper.shut_down();
    }
}
