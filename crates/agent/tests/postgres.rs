//! The run loop on a server's database: an agent on PostgreSQL takes its turns — core memory
//! edits, archival inserts and searches, a search of its history — through the same runtime
//! the desktop uses, and a second runtime on the same database (another replica) goes on
//! where the first stopped.

use async_trait::async_trait;
use engram_agent::{Embedder, LoopSettings, ModelResolver, Runtime};
use engram_core::{
    Agent, AgentId, EmbeddingConfig, Error, LlmConfig, LoopStyle, NewBlock, NewMessage, Result,
    Role, StopReason, ToolCall, ToolReturn, ToolStatus,
};
use engram_providers::{ChatModel, ChatRequest, ChatResponse, Delta, ProviderError};
use engram_store_api::{
    AgentStore, Backend, BlockStore, ContextStore, LeaseGrant, LeaseStore, MessageStore,
    PassageStore, SeqOrder, StepStore,
};
use engram_store_pg::PgStore;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A model that answers from a script, one reply per call, and keeps every request.
#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<ChatResponse>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl Script {
    fn call(&self, id: &str, name: &str, arguments: serde_json::Value) {
        self.replies.lock().unwrap().push_back(ChatResponse {
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: arguments.to_string(),
            }],
            finish_reason: Some("tool_calls".into()),
            ..ChatResponse::default()
        });
    }

    fn say(&self, text: &str) {
        self.replies.lock().unwrap().push_back(ChatResponse {
            content: text.into(),
            finish_reason: Some("stop".into()),
            ..ChatResponse::default()
        });
    }
}

#[async_trait]
impl ChatModel for Script {
    async fn complete(
        &self,
        req: &ChatRequest,
        _on_delta: &(dyn Fn(Delta) + Send + Sync),
    ) -> std::result::Result<ChatResponse, ProviderError> {
        self.requests.lock().unwrap().push(req.clone());
        let next = self.replies.lock().unwrap().pop_front();
        Ok(next.unwrap_or_else(|| ChatResponse {
            content: "(nothing scripted)".into(),
            ..ChatResponse::default()
        }))
    }
}

struct Models(Arc<Script>);

impl ModelResolver for Models {
    fn chat_model(&self, _: &LlmConfig) -> Result<Arc<dyn ChatModel>> {
        Ok(self.0.clone())
    }

    fn embedder(&self, _: &EmbeddingConfig) -> Result<Embedder> {
        Err(Error::invalid("no embedding model in this test"))
    }
}

fn runtime(store: &PgStore, script: &Arc<Script>) -> Runtime {
    let backend: Arc<dyn Backend> = Arc::new(store.clone());
    let settings = LoopSettings {
        lease_ttl: Duration::from_secs(5),
        lease_wait: Duration::from_secs(5),
        ..LoopSettings::default()
    };
    Runtime::on_backend(backend, None, Arc::new(Models(script.clone())), settings)
}

async fn chat(runtime: &Runtime, agent: &AgentId, text: &str) -> engram_agent::RunOutcome {
    let (events, _seen) = tokio::sync::mpsc::unbounded_channel();
    runtime
        .run(
            agent,
            NewMessage::user(text),
            &events,
            &CancellationToken::new(),
        )
        .await
        .expect("the run")
}

/// The text of the tool result answering `call`.
fn result_of(outcome: &engram_agent::RunOutcome, call: &str) -> ToolReturn {
    let m = outcome
        .messages
        .iter()
        .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call))
        .unwrap_or_else(|| panic!("no result for {call}"));
    ToolReturn::parse(&m.content).expect("a tool result envelope")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_on_postgresql_remembers_searches_and_goes_on_on_another_replica() {
    let url = engram_test_postgres::database().url();
    let store = PgStore::connect(&url).await.unwrap();
    let mut agent = Agent::new("Ana's helper", LlmConfig::new("openai/scripted"));
    agent.loop_style = LoopStyle::ToolLoop;
    agent.tools = engram_agent::tools::default_tools(LoopStyle::ToolLoop);
    let (agent, blocks) = store
        .create_agent(
            &agent,
            &[
                NewBlock::new("persona", "A patient helper."),
                NewBlock::new("human", ""),
            ],
            &[],
        )
        .await
        .unwrap();
    let human = blocks.iter().find(|b| b.label == "human").unwrap().clone();

    // First turn: the model writes to core memory and archival memory, then answers.
    let script = Arc::new(Script::default());
    script.call(
        "c1",
        "core_memory_append",
        serde_json::json!({"label": "human", "content": "Name: Ana"}),
    );
    script.call(
        "c2",
        "archival_memory_insert",
        serde_json::json!({"content": "Ana's cat is called Miso and sleeps on the balcony."}),
    );
    script.say("Nice to meet you, Ana.");
    let first = runtime(&store, &script);
    let outcome = chat(
        &first,
        &agent.id,
        "Hi, I'm Ana. My cat Miso sleeps on the balcony.",
    )
    .await;
    assert_eq!(
        outcome.stop_reason,
        StopReason::EndTurn,
        "{:?}",
        outcome.error
    );
    assert_eq!(result_of(&outcome, "c1").status, ToolStatus::Ok);
    assert_eq!(result_of(&outcome, "c2").status, ToolStatus::Ok);

    // All of it is in the database: the block (by the agent, with history), the passage, the
    // messages in order, three steps, the run.
    let block = store.get_block(&human.id).await.unwrap();
    assert_eq!(block.value, "Name: Ana");
    let history = store.block_history(&human.id, 10).await.unwrap();
    assert_eq!(history.len(), 1);
    assert!(matches!(
        history[0].editor,
        engram_core::Editor::Agent { .. }
    ));
    assert_eq!(store.count_passages(&agent.id).await.unwrap(), 1);
    let messages = store
        .page_messages(&agent.id, None, None, 50, SeqOrder::Asc)
        .await
        .unwrap();
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert_eq!(messages.last().unwrap().content, "Nice to meet you, Ana.");
    let steps = store
        .list_steps(&agent.id, Some(&outcome.run_id))
        .await
        .unwrap();
    assert_eq!(steps.len(), 3);
    let runs = store.list_runs(&agent.id, None).await.unwrap();
    assert_eq!((runs.len(), runs[0].stop_reason), (1, StopReason::EndTurn));
    // The third call's context window showed the edited memory.
    let requests = script.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 3);
    let system = serde_json::to_string(&requests[2].messages[0]).unwrap();
    assert!(system.contains("Name: Ana"), "{system}");

    // The lease was given back: another holder takes it at once.
    let grant = store
        .acquire_lease(&agent.id, "someone else", Duration::from_secs(1))
        .await
        .unwrap();
    let LeaseGrant::Granted(lease) = grant else {
        panic!("the run kept its lease: {grant:?}")
    };
    store.release_lease(&lease).await.unwrap();

    // Second turn, on another replica (its own pool, its own runtime): it searches archival
    // memory and the conversation, both answered from PostgreSQL.
    let replica = PgStore::connect(&url).await.unwrap();
    let script = Arc::new(Script::default());
    script.call(
        "c3",
        "archival_memory_search",
        serde_json::json!({"query": "where does the cat sleep"}),
    );
    script.call(
        "c4",
        "conversation_search",
        serde_json::json!({"query": "Miso"}),
    );
    script.say("Miso sleeps on the balcony.");
    let second = runtime(&replica, &script);
    let outcome = chat(&second, &agent.id, "Where does my cat sleep?").await;
    assert_eq!(
        outcome.stop_reason,
        StopReason::EndTurn,
        "{:?}",
        outcome.error
    );
    let archival = result_of(&outcome, "c3");
    assert_eq!(archival.status, ToolStatus::Ok);
    assert!(archival.message.contains("Miso"), "{}", archival.message);
    let recall = result_of(&outcome, "c4");
    assert_eq!(recall.status, ToolStatus::Ok);
    assert!(
        recall.message.contains("My cat Miso sleeps on the balcony"),
        "{}",
        recall.message
    );
    // The first replica sees the second's turn: one history, in order.
    let all = store
        .page_messages(&agent.id, None, None, 50, SeqOrder::Asc)
        .await
        .unwrap();
    assert_eq!(all.len(), 12);
    assert!(all.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(
        store.in_context_messages(&agent.id).await.unwrap().len(),
        12
    );
    assert_eq!(store.list_runs(&agent.id, None).await.unwrap().len(), 2);
}
