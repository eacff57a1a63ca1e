//! The service's sleep-time API: settings, budgets, a pass run now, the record of past passes
//! and undo (see `sleeptime` for when passes run by themselves).

use crate::Notice;
use crate::rooms::Sleeptime;
use engram_core::{
    AgentId, PassId, PassTrigger, Result, SleeptimeBudget, SleeptimePass, SleeptimeSettings,
};
use engram_store_api::{BUDGET_SETTING, PassBacklog};

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

    /// What waits for the agent's next pass: user turns since the last message a pass read
    /// (what counts toward the frequency), compactions since, and that last message.
    /// Errors: `not_found`.
    pub async fn backlog(self, agent: &AgentId) -> Result<PassBacklog> {
        self.engram.backend.pass_backlog(agent).await
    }

    /// The budget over every agent's passes.
    pub async fn budget(self) -> Result<SleeptimeBudget> {
        crate::sleeptime::budget(&*self.engram.backend).await
    }

    /// Sets the budget over every agent's passes.
    pub async fn set_budget(self, budget: &SleeptimeBudget) -> Result<()> {
        let value = serde_json::to_string(budget)
            .map_err(|e| engram_core::Error::Internal(format!("a budget as JSON: {e}")))?;
        self.engram
            .backend
            .set_setting(BUDGET_SETTING, &value)
            .await
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
    pub async fn passes(self, agent: &AgentId, limit: usize) -> Result<Vec<SleeptimePass>> {
        self.engram.backend.list_passes(agent, limit).await
    }

    /// Undoes one change of a pass (a block edit through the block's versioned undo, a
    /// passage put back as current, an added passage taken away). Errors: `not_found`;
    /// `conflict` when a later edit rewrote what the change wrote.
    pub async fn undo_change(self, pass: &PassId, index: u32) -> Result<SleeptimePass> {
        let p = self
            .engram
            .backend
            .undo_pass_changes(pass, Some(index))
            .await?;
        self.engram.sleeper.announce(&p);
        Ok(p)
    }

    /// Undoes every change of a pass still standing, all or none. Errors as
    /// [`undo_change`](Self::undo_change).
    pub async fn undo_pass(self, pass: &PassId) -> Result<SleeptimePass> {
        let p = self.engram.backend.undo_pass_changes(pass, None).await?;
        self.engram.sleeper.announce(&p);
        Ok(p)
    }

    /// Stops passes in flight (they write nothing) and idle timers, before the process exits.
    pub fn stop(self) {
        self.engram.sleeper.shut_down();
    }
}
