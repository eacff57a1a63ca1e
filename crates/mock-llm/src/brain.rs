//! The built-in rule-based model: a stand-in for an LLM that is good enough for end-to-end
//! tests of a memory agent.
//!
//! It is a pure function of the request. It reads the latest message a person typed, what the
//! agent already did this turn (tool calls and results after that message) and the compiled
//! core memory in the system message, and decides the next step: call a tool, or answer.
//!
//! - **Loop style.** When `send_message` is offered it plays the classic MemGPT loop: it speaks
//!   only through `send_message {"message": …}`, and every other call carries
//!   `"request_heartbeat": true` so the loop comes back for the answer. Otherwise plain text is
//!   the reply and the loop continues while it calls tools.
//! - **Memory.** "my name is X" appends `Name: X` to the `human` block (unless X is there);
//!   "my best friend is A and she loves B" appends `Best friend: A` and `A loves B` as two
//!   parallel calls; "what is my name?" / "who is my best friend?" are answered from the block
//!   ("I don't know yet." when it is not there).
//! - **Archival and recall.** "remember that …" / "save to archival: …" →
//!   `archival_memory_insert`; "search your archival memory for Q" / "what do you know about Q"
//!   → `archival_memory_search` then an answer quoting the top hit; "search our conversation
//!   for Q" → `conversation_search` likewise.
//! - **Task queue.** "add task: T" (or "Add 'A' and 'B' as two tasks") → `task_queue_push`
//!   per task; "complete your tasks" / "keep going" →
//!   one `task_queue_pop` per step while the `tasks` block (a JSON list) is non-empty, then
//!   "All tasks are done.".
//! - "slow: …" answers the rest after 5 s (for stop-generation tests); a failed tool result is
//!   apologised for with its message; a summarisation request (no tools, "summar…" in the
//!   prompt) gets a short summary; anything else gets a short echo.

use std::time::Duration;

use serde_json::{Value, json};

use crate::{Call, ChatView, Reply, ToolResultView, ViewCall};

mod intent;

use intent::{Intent, clean_tail, contains_ci, parse_intent, strip_prefix_ci, take_name, truncate};

/// How long a "slow: …" message makes the brain wait before answering.
pub const SLOW_DELAY: Duration = Duration::from_secs(5);

/// Most task pops in one turn, in case the `tasks` block is not refreshed between steps.
const MAX_POPS: usize = 20;

/// The brain's reply to a request (see the module docs for the rules).
pub fn brain(view: &ChatView) -> Reply {
    let classic = view.has_tool("send_message");
    let user = view.last_user_text();
    // "slow:" delays only the first step of a turn, not the follow-ups after tool results.
    if let Some(rest) = user
        .as_deref()
        .and_then(|u| strip_prefix_ci(u.trim(), "slow:"))
        && view.messages.last().is_some_and(|m| m.is_real_user())
    {
        let inner = render(plan(view, Some(rest.trim())), classic);
        return Reply::Delayed(SLOW_DELAY, Box::new(inner));
    }
    render(plan(view, user.as_deref()), classic)
}

/// The next step, before it is dressed for the loop style.
#[derive(Debug, PartialEq)]
enum Step {
    /// Answer the user.
    Say(String),
    /// Call these tools (name, arguments) in one response.
    Calls(Vec<(String, Value)>),
    /// Classic loop only: plain text (inner monologue) with no call, which ends the run.
    Quiet(String),
}

fn render(step: Step, classic: bool) -> Reply {
    match step {
        Step::Say(text) if classic => Reply::ToolCalls(vec![Call::new(
            "send_message",
            json!({"message": text, "request_heartbeat": false}),
        )]),
        Step::Say(text) | Step::Quiet(text) => Reply::Text(text),
        Step::Calls(calls) => Reply::ToolCalls(
            calls
                .into_iter()
                .map(|(name, mut args)| {
                    if classic {
                        args["request_heartbeat"] = json!(true);
                    }
                    Call::new(name, args)
                })
                .collect(),
        ),
    }
}

fn plan(view: &ChatView, user: Option<&str>) -> Step {
    if view.tools.is_empty() && is_summary_request(view) {
        return Step::Say(summarize(view));
    }
    let Some(user) = user else {
        return Step::Say("Hello! How can I help you today?".into());
    };
    let calls = view.turn_calls();
    if view.has_tool("send_message") && calls.iter().any(|c| c.name == "send_message") {
        // Already answered this turn; a plain-text step ends a classic run.
        return Step::Quiet("I have already answered; waiting for the user.".into());
    }
    if let Some(failed) = view.last_tool_results().into_iter().find(|r| !r.ok) {
        return Step::Say(format!("Sorry, that did not work: {}", failed.message));
    }
    let human = view.system_block("human").unwrap_or_default();
    match parse_intent(user) {
        Intent::Name(name) => {
            let content = format!("Name: {name}");
            let known = contains_ci(&human, &name);
            if !known && let Some(call) = memory_append(view, &calls, "human", &content) {
                return Step::Calls(vec![call]);
            }
            if called_with(&calls, &content) || !known {
                Step::Say(format!("Nice to meet you, {name}! I'll remember that."))
            } else {
                Step::Say(format!("I know, {name}! You told me before."))
            }
        }
        Intent::Friend { name, likes } => {
            let mut contents = vec![format!("Best friend: {name}")];
            if let Some((verb, thing)) = &likes {
                contents.push(format!("{name} {verb} {thing}"));
            }
            let pending: Vec<_> = contents
                .iter()
                .filter(|c| !contains_ci(&human, c))
                .filter_map(|c| memory_append(view, &calls, "human", c))
                .collect();
            if !pending.is_empty() {
                return Step::Calls(pending);
            }
            Step::Say(match likes {
                Some((verb, thing)) => {
                    format!("{name} sounds lovely! I'll remember that {name} {verb} {thing}.")
                }
                None => format!("{name} sounds like a great friend! I'll remember that."),
            })
        }
        Intent::AskName => Step::Say(match known_name(&human) {
            Some(name) => format!("Your name is {name}."),
            None => "I don't know yet. What is your name?".into(),
        }),
        Intent::AskFriend => Step::Say(match known_friend(&human) {
            Some((name, Some(thing))) => format!("Your best friend is {name}, who loves {thing}."),
            Some((name, None)) => format!("Your best friend is {name}."),
            None => "I don't know yet. Who is your best friend?".into(),
        }),
        Intent::ArchivalInsert(content) => {
            if !view.has_tool("archival_memory_insert") {
                return Step::Say(format!("I'll keep that in mind: {content}"));
            }
            if !calls.iter().any(|c| c.name == "archival_memory_insert") {
                return Step::Calls(vec![(
                    "archival_memory_insert".into(),
                    json!({"content": content}),
                )]);
            }
            Step::Say("I've saved that to my archival memory.".into())
        }
        Intent::ArchivalSearch(query) => search(
            view,
            &calls,
            "archival_memory_search",
            &query,
            "my archival memory",
        ),
        Intent::ConversationSearch(query) => search(
            view,
            &calls,
            "conversation_search",
            &query,
            "our conversation",
        ),
        Intent::AddTasks(tasks) => {
            let list = tasks.join("; ");
            if !view.has_tool("task_queue_push") {
                return Step::Say(format!("Noted: {list}"));
            }
            // One push per step, in order, each once.
            let pushed = |task: &str| {
                calls.iter().any(|c| {
                    c.name == "task_queue_push"
                        && c.args()["task_description"].as_str() == Some(task)
                })
            };
            if let Some(next) = tasks.iter().find(|t| !pushed(t)) {
                return Step::Calls(vec![(
                    "task_queue_push".into(),
                    json!({"task_description": next}),
                )]);
            }
            match tasks.len() {
                1 => Step::Say(format!("I added the task: {list}")),
                n => Step::Say(format!("I added {n} tasks: {list}")),
            }
        }
        Intent::DoTasks => {
            let tasks: Vec<Value> = view
                .system_block("tasks")
                .and_then(|t| serde_json::from_str(t.trim()).ok())
                .unwrap_or_default();
            let pops = calls.iter().filter(|c| c.name == "task_queue_pop").count();
            let queue_empty = view
                .turn_results()
                .iter()
                .rev()
                .find(|r| r.name == "task_queue_pop")
                .is_some_and(|r| reports_empty_queue(&r.message));
            if view.has_tool("task_queue_pop")
                && !tasks.is_empty()
                && !queue_empty
                && pops < MAX_POPS
            {
                return Step::Calls(vec![("task_queue_pop".into(), json!({}))]);
            }
            Step::Say("All tasks are done.".into())
        }
        Intent::UseTool { name, args } => {
            if !view.has_tool(&name) {
                return Step::Say(format!("I have no tool named {name}."));
            }
            match view.turn_results().iter().rev().find(|r| r.name == name) {
                Some(r) => Step::Say(format!("The tool said: {}", truncate(&r.message, 200))),
                None => Step::Calls(vec![(name, args)]),
            }
        }
        Intent::Echo(text) => Step::Say(format!("Got it! You said: {}", truncate(&text, 200))),
    }
}

/// Whether a call this turn already wrote `content` (under either tool's argument name).
fn called_with(calls: &[ViewCall], content: &str) -> bool {
    calls.iter().any(|c| {
        let args = c.args();
        args.get("content")
            .or_else(|| args.get("new_str"))
            .and_then(Value::as_str)
            == Some(content)
    })
}

/// An append of `content` to block `label` with whichever memory tool is offered, unless one
/// was already made this turn.
fn memory_append(
    view: &ChatView,
    calls: &[ViewCall],
    label: &str,
    content: &str,
) -> Option<(String, Value)> {
    if called_with(calls, content) {
        return None;
    }
    if view.has_tool("core_memory_append") {
        Some((
            "core_memory_append".into(),
            json!({"label": label, "content": content}),
        ))
    } else if view.has_tool("memory_insert") {
        Some((
            "memory_insert".into(),
            json!({"label": label, "new_str": content, "insert_line": -1}),
        ))
    } else {
        None
    }
}

/// `Name: X`, or "name is X" in free text.
fn known_name(human: &str) -> Option<String> {
    for line in human.lines() {
        if let Some(rest) = strip_prefix_ci(line.trim(), "name:") {
            return Some(rest.trim().to_string()).filter(|n| !n.is_empty());
        }
    }
    let lower = human.to_ascii_lowercase();
    let i = lower.find("name is ")?;
    let (name, _) = take_name(&human[i + "name is ".len()..]);
    Some(name).filter(|n| !n.is_empty())
}

/// `Best friend: A` (or "best friend is A") and, if present, what `A loves`.
fn known_friend(human: &str) -> Option<(String, Option<String>)> {
    let mut name = None;
    for line in human.lines() {
        if let Some(rest) = strip_prefix_ci(line.trim(), "best friend:") {
            name = Some(rest.trim().to_string());
            break;
        }
    }
    if name.is_none() {
        let lower = human.to_ascii_lowercase();
        let i = lower.find("best friend is ")?;
        name = Some(take_name(&human[i + "best friend is ".len()..]).0);
    }
    let name = name.filter(|n| !n.is_empty())?;
    let loves = human.lines().find_map(|line| {
        let rest = strip_prefix_ci(line.trim(), &name)?;
        let rest = rest.trim_start();
        strip_prefix_ci(rest, "loves ")
            .or_else(|| strip_prefix_ci(rest, "likes "))
            .map(clean_tail)
    });
    Some((name, loves))
}

fn search(view: &ChatView, calls: &[ViewCall], tool: &str, query: &str, place: &str) -> Step {
    if !view.has_tool(tool) {
        return Step::Say(format!("I can't search {place} right now."));
    }
    if !calls.iter().any(|c| c.name == tool) {
        return Step::Calls(vec![(tool.to_string(), json!({"query": query}))]);
    }
    let result: Option<ToolResultView> = view
        .turn_results()
        .into_iter()
        .rev()
        .find(|r| r.name == tool);
    match result.and_then(|r| top_result(&r.message)) {
        Some(top) => Step::Say(format!(
            "Here is what I found in {place} about {query}: {top}"
        )),
        None => Step::Say(format!(
            "I couldn't find anything about {query} in {place}."
        )),
    }
}

/// The first hit in a search tool's result: a JSON list (possibly after a heading like
/// "Showing 2 of 2 results:"), a `results`-style object, or else the first line of text.
fn top_result(message: &str) -> Option<String> {
    let lower = message.to_ascii_lowercase();
    if lower.contains("no results")
        || lower.contains("nothing found")
        || lower.contains("0 results")
    {
        return None;
    }
    let parsed = serde_json::from_str::<Value>(message.trim())
        .ok()
        .or_else(|| {
            let start = message.find(['[', '{'])?;
            serde_json::Deserializer::from_str(&message[start..])
                .into_iter::<Value>()
                .next()?
                .ok()
        });
    match parsed {
        Some(value) => first_hit(&value),
        None => message
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string),
    }
}

fn first_hit(value: &Value) -> Option<String> {
    match value {
        Value::Array(items) => items.first().and_then(hit_text),
        Value::Object(map) => ["results", "passages", "messages", "hits"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_array))
            .and_then(|items| items.first().and_then(hit_text))
            .or_else(|| hit_text(value)),
        Value::String(s) if !s.trim().is_empty() => top_result(s),
        _ => None,
    }
}

fn hit_text(item: &Value) -> Option<String> {
    match item {
        Value::String(s) => Some(s.clone()),
        Value::Object(map) => ["content", "text", "message", "passage"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str))
            .map(str::to_string)
            .or_else(|| Some(item.to_string())),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Whether a `task_queue_pop` result says there is nothing left ("Remaining tasks []", "None").
fn reports_empty_queue(message: &str) -> bool {
    let m = message.trim();
    m.is_empty() || m.ends_with("[]") || m.eq_ignore_ascii_case("none") || m == "null"
}

/// Whether `view` asks for a summary ("summar…" in the system message or the last user
/// message); callers also check that no tools are offered.
pub(crate) fn is_summary_request(view: &ChatView) -> bool {
    let last = view
        .messages
        .iter()
        .rev()
        .find(|m| m.role == "user")
        .map(|m| m.text.as_str())
        .unwrap_or_default();
    contains_ci(&view.system, "summar") || contains_ci(last, "summar")
}

/// A short summary: the user's first-person statements, or a count of messages. Kept short
/// on purpose, so that compaction driven by the brain really shrinks the context.
fn summarize(view: &ChatView) -> String {
    let statements: Vec<String> = view
        .messages
        .iter()
        .flat_map(|m| m.text.lines())
        .map(str::trim)
        .filter(|l| {
            let lower = l.to_ascii_lowercase();
            (lower.contains("my ") || lower.contains("i ")) && !contains_ci(l, "summar")
        })
        .take(5)
        .map(|l| truncate(l, 100))
        .collect();
    if statements.is_empty() {
        format!(
            "Summary: the user and the assistant exchanged {} messages.",
            view.messages.len()
        )
    } else {
        format!("Summary: the user said: {}", statements.join(" / "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_memory() {
        let human = "Name: Bob\nBest friend: Alya\nAlya loves cherry pie";
        assert_eq!(known_name(human).as_deref(), Some("Bob"));
        assert_eq!(
            known_friend(human),
            Some(("Alya".into(), Some("cherry pie".into())))
        );
        assert_eq!(known_name("The user's name is Bob."), Some("Bob".into()));
        assert_eq!(
            known_friend("Bob's best friend is Alya."),
            Some(("Alya".into(), None))
        );
        assert_eq!(known_name(""), None);
    }

    #[test]
    fn top_results() {
        assert_eq!(
            top_result(r#"[{"timestamp":"t","content":"the code is 1234"},{"content":"x"}]"#)
                .as_deref(),
            Some("the code is 1234")
        );
        assert_eq!(
            top_result("Showing 1 of 1 results: [\"pie recipe\"]").as_deref(),
            Some("pie recipe")
        );
        assert_eq!(
            top_result(r#"{"results":[{"text":"hit"}]}"#).as_deref(),
            Some("hit")
        );
        assert_eq!(top_result("[]"), None);
        assert_eq!(top_result("No results found."), None);
        assert_eq!(
            top_result("first line\nsecond").as_deref(),
            Some("first line")
        );
    }
}
