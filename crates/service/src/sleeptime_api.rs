//! The service's sleep-time API: settings, budgets, a pass run now, the record of past passes
//! and undo (see `sleeptime` for when passes run by themselves).

use crate::Notice;
use crate::rooms::Sleeptime;
use engram_core::{
    AgentId, PassId, PassTrigger, Result, SleeptimeBudget, SleeptimePass, SleeptimeSettings,
};

impl Sleeptime<'_> {
    /// The agent's sleep-time settings. Errors: `not_found`.
    pub async fn settings(self, agent: &AgentId) -> Result<SleeptimeSettings> {
        self.engram.backend.sleeptime_settings(agent).await
    }

    /// Sets the agent's sleep-time settings. Errors: `not_found`; `invalid_input` for a
    /// frequency, step limit or timeout of 0.
    pub async fn set_settings(self, agent: &AgentId, s: &SleeptimeSettings) -> Result<()> {
        self.engram.backend.set_sleeptime_settings(agent, s).await?;
        self.engram.notify(Notice::AgentChanged {
            agent_id: agent.clone(),
        });
        Ok(())
    }

    /// User turns since the last message a pass read (what counts toward the frequency).
    /// Errors: `not_found`; `not_available` on a shared server.
    pub fn turns_waiting(self, agent: &AgentId) -> Result<u32> {
        let store = self.engram.local("the sleep-time backlog")?;
        Ok(store.sleeptime().backlog(agent)?.0)
    }

    /// The last message the agent's passes read, or `None` before its first pass.
    /// Errors: `not_found`; `not_available` on a shared server.
    pub fn last_message(self, agent: &AgentId) -> Result<Option<engram_core::MessageId>> {
        let store = self.engram.local("the sleep-time backlog")?;
        store.sleeptime().last_message(agent)
    }

    /// The budget over every agent's passes.
    pub fn budget(self) -> Result<SleeptimeBudget> {
        self.engram.store.sleeptime().budget()
    }

    /// Sets the budget over every agent's passes.
    pub fn set_budget(self, budget: &SleeptimeBudget) -> Result<()> {
        self.engram.store.sleeptime().set_budget(budget)
    }

    /// Runs a sleep-time pass of the agent now and waits for it (also when passes are off:
    /// asking is enough). Over budget it is skipped and the record says why. Errors:
    /// `conflict` while a pass of the agent runs; `not_found`; configuration errors of the
    /// pass's model.
    pub async fn run_pass(self, agent: &AgentId) -> Result<SleeptimePass> {
        self.engram.sleeper.run(agent, PassTrigger::Manual).await
    }

    /// Whether a pass of the agent is running now.
    pub fn running(self, agent: &AgentId) -> bool {
        self.engram.sleeper.is_running(agent)
    }

    /// The agent's passes, newest first, with their changes ("while you were away").
    pub fn passes(self, agent: &AgentId, limit: usize) -> Result<Vec<SleeptimePass>> {
        self.engram.store.sleeptime().list_passes(agent, limit)
    }

    /// Undoes one change of a pass (a block edit through the block's versioned undo, a
    /// passage put back as current, an added passage taken away). Errors: `not_found`;
    /// `conflict` when a later edit rewrote what the change wrote.
    pub fn undo_change(self, pass: &PassId, index: u32) -> Result<SleeptimePass> {
        let p = self
            .engram
            .store
            .sleeptime()
            .undo_pass_change(pass, index)?;
        self.engram.sleeper.announce(&p);
        Ok(p)
    }

    /// Undoes every change of a pass still standing, all or none. Errors as
    /// [`undo_change`](Self::undo_change).
    pub fn undo_pass(self, pass: &PassId) -> Result<SleeptimePass> {
        let p = self.engram.store.sleeptime().undo_pass(pass)?;
        self.engram.sleeper.announce(&p);
        Ok(p)
    }

    /// Stops passes in flight (they write nothing) and idle timers, before the process exits.
    pub fn stop(self) {
        self.engram.sleeper.shut_down();
    }
}
