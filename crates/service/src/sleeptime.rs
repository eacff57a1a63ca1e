//! Sleep-time passes as the service runs them: when (every N user turns, after a compaction,
//! after the agent was idle, or when asked), never more than one per agent at a time, never in
//! the chat's way (a pass runs in a task of its own and does not take the agent's turn), and
//! within budgets (passes and tokens per rolling 24 hours, per agent and over all agents; a
//! pass over budget is skipped, recorded and announced). The pass itself is
//! `engram_agent::sleeptime`; what it wrote is undone through the store's versioned undo.

use engram_agent::{PassRequest, Runtime};
use engram_core::{
    AgentId, Error, PassId, PassStatus, PassTrigger, Result, SleeptimePass, SleeptimeSettings,
};
use engram_store::Store;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Tells every window about a pass that ended or changed (the service's notices).
pub(crate) type Announce = Arc<dyn Fn(&SleeptimePass) + Send + Sync>;

/// The window budgets are counted over.
const BUDGET_WINDOW: chrono::TimeDelta = chrono::TimeDelta::hours(24);

/// Runs passes; cheap to clone (every field is shared).
#[derive(Clone)]
pub(crate) struct Sleeper {
    store: Store,
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
    pub(crate) fn new(store: Store, runtime: Arc<Runtime>, announce: Announce) -> Self {
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
    fn allowance(&self, agent: &AgentId, s: &SleeptimeSettings) -> Result<Allowance> {
        let since = chrono::Utc::now() - BUDGET_WINDOW;
        let budget = self.store.sleeptime().budget()?;
        let own = self.store.sleeptime().usage(Some(agent), since)?;
        let all = self.store.sleeptime().usage(None, since)?;
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
            )?,
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
    fn tokens_money_buys(
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
            None => self.store.agents().get(agent)?.llm.model,
        };
        let Some(price) = self.store.settings().model_price(&model)? else {
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
    /// agent runs; `not_found`; the pass model's configuration errors.
    pub(crate) async fn run(&self, agent: &AgentId, trigger: PassTrigger) -> Result<SleeptimePass> {
        let settings = self.store.sleeptime().settings(agent)?;
        let _claim = self.claim(agent).ok_or_else(|| {
            Error::Conflict("a sleep-time pass of this agent is running; wait for it to end".into())
        })?;
        let pass_id = PassId::new();
        let token_allowance = match self.allowance(agent, &settings)? {
            Allowance::Run(tokens) => tokens,
            Allowance::Skip(reason) => {
                let now = chrono::Utc::now();
                let pass = SleeptimePass {
                    id: pass_id,
                    agent_id: agent.clone(),
                    trigger,
                    status: PassStatus::Skipped,
                    reason: Some(reason),
                    model: String::new(),
                    started_at: now,
                    ended_at: now,
                    messages_read: 0,
                    last_seq: self.store.sleeptime().last_seq(agent)?,
                    model_calls: 0,
                    prompt_tokens: 0,
                    completion_tokens: 0,
                    cost_usd: None,
                    changes: Vec::new(),
                };
                tracing::info!(agent_id = %agent, reason = pass.reason.as_deref(), "sleep-time pass skipped");
                self.store.sleeptime().record_pass(&pass)?;
                self.announce(&pass);
                return Ok(pass);
            }
        };
        let request = PassRequest {
            pass_id,
            agent_id: agent.clone(),
            trigger,
            settings,
            token_allowance,
        };
        let pass = self.runtime.sleeptime_pass(&request, &self.cancel).await?;
        self.announce(&pass);
        Ok(pass)
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
    /// reached or the conversation was compacted, and (re)starts its idle timer.
    pub(crate) fn after_run(&self, agent: &AgentId) {
        let Ok(settings) = self.store.sleeptime().settings(agent) else {
            return;
        };
        if !settings.enabled {
            return;
        }
        match self.store.sleeptime().backlog(agent) {
            Ok((turns, _)) if turns >= settings.frequency => self.spawn(agent, PassTrigger::Turns),
            Ok((turns, compactions)) if turns > 0 && compactions > 0 => {
                self.spawn(agent, PassTrigger::Compaction);
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(agent_id = %agent, error = %e, "sleep-time backlog unread"),
        }
        if let Some(secs) = settings.idle_secs {
            self.restart_idle(agent, Duration::from_secs(u64::from(secs)));
        }
    }

    fn restart_idle(&self, agent: &AgentId, after: Duration) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let me = self.clone();
        let who = agent.clone();
        let task = tokio::spawn(async move {
            tokio::time::sleep(after).await;
            if matches!(me.store.sleeptime().backlog(&who), Ok((turns, _)) if turns > 0) {
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
