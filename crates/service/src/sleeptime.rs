//! Sleep-time passes as the service runs them: when (every N user turns, after a compaction,
//! after the agent was idle, or when asked), never more than one per agent at a time, never in
//! the chat's way (a pass runs in a task of its own and does not take the agent's turn), and
//! within budgets (passes and tokens per rolling 24 hours, per agent and over all agents; a
//! pass over budget is skipped, recorded and announced). The pass itself is
//! `engram_agent::sleeptime`; what it wrote is undone through the store's versioned undo.
//!
//! Everything goes through the storage interface, so passes run the same on a shared server:
//! a pass claims its agent in the database (`SleeptimeStore::claim_pass`), so two replicas
//! whose runs both reach the agent's frequency start one pass between them.

use engram_agent::{PassRequest, Runtime};
use engram_core::{
    AgentId, Error, ModelPrice, PassId, PassStatus, PassTrigger, Result, SleeptimeBudget,
    SleeptimePass, SleeptimeSettings,
};
use engram_store_api::{BUDGET_SETTING, Backend};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Tells every window about a pass that ended or changed (the service's notices).
pub(crate) type Announce = Arc<dyn Fn(&SleeptimePass) + Send + Sync>;

/// The window budgets are counted over.
const BUDGET_WINDOW: chrono::TimeDelta = chrono::TimeDelta::hours(24);

/// How long a pass's claim outlives its time limit: the commit after the model's last word,
/// and the clocks of two replicas.
const CLAIM_MARGIN: Duration = Duration::from_secs(60);

/// Runs passes; cheap to clone (every field is shared).
#[derive(Clone)]
pub(crate) struct Sleeper {
    store: Arc<dyn Backend>,
    runtime: Arc<Runtime>,
    announce: Announce,
    /// Agents with a pass in flight.
    running: Arc<Mutex<HashSet<AgentId>>>,
    /// Each agent's idle timer, restarted by every run.
    idle: Arc<Mutex<HashMap<AgentId, tokio::task::AbortHandle>>>,
    /// Stops passes in flight (process shutdown).
    cancel: CancellationToken,
}

/// An agent's place in `running`; dropping it frees the agent for the next pass.
struct Claim {
    running: Arc<Mutex<HashSet<AgentId>>>,
    agent: AgentId,
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Ok(mut r) = self.running.lock() {
            r.remove(&self.agent);
        }
    }
}

/// Whether a pass may run: the tokens it may spend, or why it is skipped.
enum Allowance {
    Run(Option<u64>),
    Skip(String),
}

impl Sleeper {
    pub(crate) fn new(store: Arc<dyn Backend>, runtime: Arc<Runtime>, announce: Announce) -> Self {
        Self {
            store,
            runtime,
            announce,
            running: Arc::default(),
            idle: Arc::default(),
            cancel: CancellationToken::new(),
        }
    }

    fn claim(&self, agent: &AgentId) -> Option<Claim> {
        let mut running = self.running.lock().ok()?;
        running.insert(agent.clone()).then(|| Claim {
            running: self.running.clone(),
            agent: agent.clone(),
        })
    }

    pub(crate) fn is_running(&self, agent: &AgentId) -> bool {
        self.running
            .lock()
            .map(|r| r.contains(agent))
            .unwrap_or(true)
    }

    /// The budgets' verdict for a pass of `agent` now.
    async fn allowance(&self, agent: &AgentId, s: &SleeptimeSettings) -> Result<Allowance> {
        let since = chrono::Utc::now() - BUDGET_WINDOW;
        let (budget, own, all) = tokio::try_join!(
            budget(&*self.store),
            self.store.pass_usage(Some(agent), since),
            self.store.pass_usage(None, since),
        )?;
        let (own_tokens, all_tokens) = (own.tokens, all.tokens);
        let checks = [
            (
                s.passes_per_day.map(u64::from),
                u64::from(own.passes),
                "this agent's passes",
            ),
            (
                budget.passes_per_day.map(u64::from),
                u64::from(all.passes),
                "passes of all agents",
            ),
            (s.tokens_per_day, own.tokens, "this agent's pass tokens"),
            (
                budget.tokens_per_day,
                all.tokens,
                "pass tokens of all agents",
            ),
        ];
        for (limit, used, what) in checks {
            if let Some(limit) = limit
                && used >= limit
            {
                return Ok(Allowance::Skip(format!(
                    "over budget: {used} of {limit} {what} per 24 hours are used"
                )));
            }
        }
        let money = [
            (s.usd_per_day, own.usd, "this agent's passes"),
            (budget.usd_per_day, all.usd, "passes of all agents"),
        ];
        for (limit, used, what) in money {
            if let Some(limit) = limit
                && used >= limit
            {
                return Ok(Allowance::Skip(format!(
                    "over budget: ${used:.4} of ${limit:.2} for {what} per 24 hours are spent"
                )));
            }
        }
        let left = |limit: Option<u64>, used: u64| limit.map(|l| l.saturating_sub(used));
        let allowance = [
            left(s.tokens_per_day, own_tokens),
            left(budget.tokens_per_day, all_tokens),
            self.tokens_money_buys(
                agent,
                s,
                [
                    s.usd_per_day.map(|l| l - own.usd),
                    budget.usd_per_day.map(|l| l - all.usd),
                ],
            )
            .await?,
        ]
        .into_iter()
        .flatten()
        .min();
        Ok(Allowance::Run(allowance))
    }

    /// The tokens the dollars left (the smallest of `left`) buy at the price of the pass's
    /// model, each token counted at the dearer of its input and output price: so a pass stops
    /// within the money left, not only before it starts. `None` when no money limit is set or
    /// the model has no price (it then costs nothing here).
    async fn tokens_money_buys(
        &self,
        agent: &AgentId,
        s: &SleeptimeSettings,
        left: [Option<f64>; 2],
    ) -> Result<Option<u64>> {
        let Some(dollars) = left.into_iter().flatten().reduce(f64::min) else {
            return Ok(None);
        };
        let model = match &s.llm {
            Some(llm) => llm.model.clone(),
            None => self.store.get_agent(agent).await?.llm.model,
        };
        let Some(price) = ModelPrice::of(&model, self.store.model_prices().await?) else {
            return Ok(None);
        };
        let per_token = price.input_per_mtok.max(price.output_per_mtok) / 1_000_000.0;
        if per_token <= 0.0 {
            return Ok(None);
        }
        // Rounded down: a fraction of a token is not bought.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Ok(Some((dollars.max(0.0) / per_token).floor() as u64))
    }

    pub(crate) fn announce(&self, pass: &SleeptimePass) {
        (self.announce)(pass);
    }

    /// Runs a pass now, in the caller's task. Errors: `conflict` while another pass of the
    /// agent runs (here or on another replica); `not_found`; the pass model's configuration
    /// errors.
    pub(crate) async fn run(&self, agent: &AgentId, trigger: PassTrigger) -> Result<SleeptimePass> {
        let settings = self.store.sleeptime_settings(agent).await?;
        let _claim = self.claim(agent).ok_or_else(busy)?;
        let pass_id = PassId::new();
        let ttl = Duration::from_secs(u64::from(settings.timeout_secs)) + CLAIM_MARGIN;
        if !self.store.claim_pass(agent, &pass_id, ttl).await? {
            return Err(busy());
        }
        let out = self.run_claimed(agent, trigger, &pass_id, settings).await;
        if let Err(e) = self.store.release_pass(agent, &pass_id).await {
            // The claim expires on its own.
            tracing::warn!(agent_id = %agent, error = %e, "sleep-time claim not given back");
        }
        let pass = out?;
        self.announce(&pass);
        Ok(pass)
    }

    /// [`run`](Self::run) once the agent is claimed for `pass_id`.
    async fn run_claimed(
        &self,
        agent: &AgentId,
        trigger: PassTrigger,
        pass_id: &PassId,
        settings: SleeptimeSettings,
    ) -> Result<SleeptimePass> {
        let token_allowance = match self.allowance(agent, &settings).await? {
            Allowance::Run(tokens) => tokens,
            Allowance::Skip(reason) => {
                let now = chrono::Utc::now();
                let pass = SleeptimePass {
                    id: pass_id.clone(),
                    agent_id: agent.clone(),
                    trigger,
                    status: PassStatus::Skipped,
                    reason: Some(reason),
                    model: String::new(),
                    started_at: now,
                    ended_at: now,
                    messages_read: 0,
                    last_seq: self.store.last_read_seq(agent).await?,
                    model_calls: 0,
                    prompt_tokens: 0,
                    completion_tokens: 0,
                    cost_usd: None,
                    changes: Vec::new(),
                };
                tracing::info!(agent_id = %agent, reason = pass.reason.as_deref(), "sleep-time pass skipped");
                self.store.record_pass(&pass).await?;
                return Ok(pass);
            }
        };
        let request = PassRequest {
            pass_id: pass_id.clone(),
            agent_id: agent.clone(),
            trigger,
            settings,
            token_allowance,
        };
        self.runtime.sleeptime_pass(&request, &self.cancel).await
    }

    /// Starts a pass in the background (unless one runs already); errors are logged.
    fn spawn(&self, agent: &AgentId, trigger: PassTrigger) {
        if self.is_running(agent) || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let me = self.clone();
        let agent = agent.clone();
        tokio::spawn(async move {
            if let Err(e) = me.run(&agent, trigger).await
                && !matches!(e, Error::Conflict(_))
            {
                tracing::warn!(agent_id = %agent, error = %e, "sleep-time pass did not run");
            }
        });
    }

    /// After a run of `agent` ended: starts a pass when its frequency of user turns was
    /// reached or the conversation was compacted, and (re)starts its idle timer. The reads
    /// run in a task of their own: the run's end is never held up by them.
    pub(crate) fn after_run(&self, agent: &AgentId) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let me = self.clone();
        let agent = agent.clone();
        tokio::spawn(async move {
            let Ok(settings) = me.store.sleeptime_settings(&agent).await else {
                return;
            };
            if !settings.enabled {
                return;
            }
            match me.store.pass_backlog(&agent).await {
                Ok(b) if b.turns >= settings.frequency => me.spawn(&agent, PassTrigger::Turns),
                Ok(b) if b.turns > 0 && b.compactions > 0 => {
                    me.spawn(&agent, PassTrigger::Compaction);
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(agent_id = %agent, error = %e, "sleep-time backlog unread")
                }
            }
            if let Some(secs) = settings.idle_secs {
                me.restart_idle(&agent, Duration::from_secs(u64::from(secs)));
            }
        });
    }

    fn restart_idle(&self, agent: &AgentId, after: Duration) {
        let me = self.clone();
        let who = agent.clone();
        let task = tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let Ok(b) = me.store.pass_backlog(&who).await else {
                return;
            };
            // A turn that ran since on another replica restarted the wait there.
            let quiet = b.last_message_at.is_none_or(|at| {
                chrono::Utc::now() - at >= chrono::TimeDelta::from_std(after).unwrap_or_default()
            });
            if b.turns > 0 && quiet {
                me.spawn(&who, PassTrigger::Idle);
            }
        });
        if let Ok(mut idle) = self.idle.lock()
            && let Some(old) = idle.insert(agent.clone(), task.abort_handle())
        {
            old.abort();
        }
    }

    /// Stops passes in flight and idle timers (they write nothing).
    pub(crate) fn shut_down(&self) {
        self.cancel.cancel();
        if let Ok(mut idle) = self.idle.lock() {
            for (_, t) in idle.drain() {
                t.abort();
            }
        }
    }
}

/// The `conflict` for a pass asked for while another of the agent runs.
fn busy() -> Error {
    Error::Conflict("a sleep-time pass of this agent is running; wait for it to end".into())
}

/// The budget over every agent's passes (no limits when never set or unreadable as one).
pub(crate) async fn budget(store: &dyn Backend) -> Result<SleeptimeBudget> {
    Ok(store
        .get_setting(BUDGET_SETTING)
        .await?
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default())
}
