//! Sleep-time commands: an agent's settings (the switch and its options), its passes ("while
//! you were away"), a pass run now, and undo of one change or a whole pass.

use super::{Access, AppCall, Caller};
use crate::Engram;
use engram_core::{
    AgentAccess, AgentId, PassId, Result, SleeptimeBudget, SleeptimePass, SleeptimeSettings,
};
use serde::Deserialize;
use std::sync::Arc;
use ts_rs::TS;

/// Passes listed when the window does not say how many.
const DEFAULT_PASSES: usize = 10;

/// `sleeptime_settings`: the agent's sleep-time settings.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SleeptimeSettingsArgs {
    agent_id: AgentId,
}

impl AppCall for SleeptimeSettingsArgs {
    const NAME: &'static str = "sleeptime_settings";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = SleeptimeSettings;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<SleeptimeSettings> {
        e.sleeptime().settings(&self.agent_id).await
    }
}

/// `set_sleeptime_settings`: switches passes on or off and sets their options.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SetSleeptimeSettingsArgs {
    agent_id: AgentId,
    settings: SleeptimeSettings,
}

impl AppCall for SetSleeptimeSettingsArgs {
    const NAME: &'static str = "set_sleeptime_settings";
    const ACCESS: Access = Access::Agent(AgentAccess::Write);
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.sleeptime()
            .set_settings(&self.agent_id, &self.settings)
            .await
    }
}

/// `sleeptime_passes`: the agent's passes, newest first, with their changes.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/", optional_fields = nullable)]
pub struct SleeptimePassesArgs {
    agent_id: AgentId,
    /// At most this many; default 10.
    limit: Option<usize>,
}

impl AppCall for SleeptimePassesArgs {
    const NAME: &'static str = "sleeptime_passes";
    const ACCESS: Access = Access::Agent(AgentAccess::Read);
    type Output = Vec<SleeptimePass>;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<Self::Output> {
        e.sleeptime()
            .passes(&self.agent_id, self.limit.unwrap_or(DEFAULT_PASSES))
            .await
    }
}

/// `run_sleeptime_pass`: a pass now; answers when it ended (skipped when over budget).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct RunSleeptimePassArgs {
    agent_id: AgentId,
}

impl AppCall for RunSleeptimePassArgs {
    const NAME: &'static str = "run_sleeptime_pass";
    const ACCESS: Access = Access::Agent(AgentAccess::Write);
    type Output = SleeptimePass;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<SleeptimePass> {
        e.sleeptime().run_pass(&self.agent_id).await
    }
}

/// `undo_sleeptime_change`: undoes one change of a pass (refused when a later edit rewrote it).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct UndoSleeptimeChangeArgs {
    pass_id: PassId,
    index: u32,
}

impl AppCall for UndoSleeptimeChangeArgs {
    const NAME: &'static str = "undo_sleeptime_change";
    type Output = SleeptimePass;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<SleeptimePass> {
        e.sleeptime().undo_change(&self.pass_id, self.index).await
    }
}

/// `undo_sleeptime_pass`: undoes every change of a pass still standing, all or none.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct UndoSleeptimePassArgs {
    pass_id: PassId,
}

impl AppCall for UndoSleeptimePassArgs {
    const NAME: &'static str = "undo_sleeptime_pass";
    type Output = SleeptimePass;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<SleeptimePass> {
        e.sleeptime().undo_pass(&self.pass_id).await
    }
}

/// `sleeptime_budget`: the limits over every agent's passes per rolling 24 hours.
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SleeptimeBudgetArgs {}

impl AppCall for SleeptimeBudgetArgs {
    const NAME: &'static str = "sleeptime_budget";
    type Output = SleeptimeBudget;
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<SleeptimeBudget> {
        e.sleeptime().budget().await
    }
}

/// `set_sleeptime_budget`: sets the limits over every agent's passes (`null`: no limit).
#[derive(Deserialize, TS)]
#[ts(export, export_to = "args/")]
pub struct SetSleeptimeBudgetArgs {
    budget: SleeptimeBudget,
}

impl AppCall for SetSleeptimeBudgetArgs {
    const NAME: &'static str = "set_sleeptime_budget";
    type Output = ();
    async fn call(self, e: &Arc<Engram>, _: &Caller) -> Result<()> {
        e.sleeptime().set_budget(&self.budget).await
    }
}
