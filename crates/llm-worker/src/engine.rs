//! The generator: one thread that owns the llama.cpp model and context and answers one request
//! at a time. Prompts are rendered with the model's own chat template through llama.cpp's
//! OpenAI-compatible template code (tools, tool choice, tool-call grammar and parser); models
//! whose template cannot call tools answer in the JSON format of [`crate::api`] under a grammar
//! made from the tool schemas. The KV cache of the last prompt is kept: a request that starts
//! like the previous one (the system message and memory stay the same across the steps of a
//! run) decodes only the tokens after the common prefix.

use crate::api::{self, ChatRequest, JsonAnswer, ToolCallOut, ToolMode, Usage};
use anyhow::{Context as _, Result, anyhow};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{
    AddBos, ChatTemplateResult, GrammarTriggerType, LlamaChatTemplate, LlamaModel, VocabType,
};
use llama_cpp_2::openai::OpenAIChatTemplateParams;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use serde_json::{Value, json};
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::mpsc;

/// The context size (tokens) used when `--ctx` is not given, unless the model was trained on
/// less: enough for an agent's memory and recent messages, small enough for a laptop's memory.
pub const DEFAULT_CTX: u32 = 4096;

/// Tokens decoded per `llama_decode` call while reading a prompt.
const BATCH: u32 = 512;

/// How the worker loads its model.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The GGUF file.
    pub model: PathBuf,
    /// Context size in tokens; `None`: the model's training context, at most [`DEFAULT_CTX`].
    pub ctx: Option<u32>,
    /// CPU threads; `None`: half the logical CPUs (see [`default_threads`]).
    pub threads: Option<u32>,
}

/// What the model is, once loaded.
#[derive(Clone, Debug)]
pub struct ModelFacts {
    /// The context size in force, in tokens.
    pub n_ctx: u32,
    /// The context the model was trained on, in tokens.
    pub n_ctx_train: u32,
}

/// A request for the generator, with where its output goes.
pub struct Job {
    /// The request as read.
    pub request: ChatRequest,
    /// Events in order; the generator stops when the receiver is gone (the client left).
    pub events: mpsc::UnboundedSender<Event>,
}

/// What the generator reports about one job.
#[derive(Debug)]
pub enum Event {
    /// The prompt was read and fits; text follows.
    Started,
    /// A piece of the answer as an OpenAI `delta` object (`content`, `reasoning_content` or
    /// `tool_calls`).
    Delta(Value),
    /// The answer is complete.
    Finished {
        /// The whole assistant message in OpenAI form.
        message: Value,
        /// `stop`, `length` or `tool_calls`.
        finish_reason: &'static str,
        /// Token counts.
        usage: Usage,
    },
    /// The request cannot be answered (before `Started`) or failed while generating.
    Failed(Failure),
}

/// Why a request failed, as the HTTP layer reports it.
#[derive(Debug)]
pub struct Failure {
    /// 400 for requests the model cannot take (too long, unreadable), 500 for faults.
    pub status: u16,
    /// The OpenAI error code (`context_length_exceeded`, `invalid_request_error`,
    /// `server_error`).
    pub code: &'static str,
    /// One line for people.
    pub message: String,
}

impl Failure {
    fn bad_request(message: impl Into<String>) -> Self {
        Self {
            status: 400,
            code: "invalid_request_error",
            message: message.into(),
        }
    }

    fn internal(e: &anyhow::Error) -> Self {
        Self {
            status: 500,
            code: "server_error",
            message: format!("{e:#}"),
        }
    }
}

/// Loads the model and starts the generator thread. Returns what the model is and the queue
/// to send jobs to; the thread ends when every sender is dropped. Errors: the file cannot be
/// loaded as a model, or the context cannot be made (memory).
pub fn start(settings: Settings) -> Result<(ModelFacts, mpsc::UnboundedSender<Job>)> {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (jobs_tx, jobs_rx) = mpsc::unbounded_channel::<Job>();
    std::thread::Builder::new()
        .name("llm".into())
        .spawn(move || {
            let backend = match LlamaBackend::init() {
                Ok(b) => b,
                Err(e) => {
                    let _ = ready_tx.send(Err(anyhow!("cannot start llama.cpp: {e}")));
                    return;
                }
            };
            let model = match LlamaModel::load_from_file(
                &backend,
                &settings.model,
                &LlamaModelParams::default(),
            ) {
                Ok(m) => m,
                Err(e) => {
                    let _ = ready_tx.send(Err(anyhow!(
                        "cannot load {} as a GGUF model: {e}",
                        settings.model.display()
                    )));
                    return;
                }
            };
            let mut generator = match Generator::new(&backend, &model, &settings) {
                Ok(g) => g,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let _ = ready_tx.send(Ok(generator.facts.clone()));
            generator.serve(jobs_rx);
        })
        .context("cannot start the generator thread")?;
    let facts = ready_rx
        .recv()
        .map_err(|_| anyhow!("the generator thread ended while loading the model"))??;
    Ok((facts, jobs_tx))
}

/// The prompt and everything needed to sample and read the answer.
struct Prepared {
    prompt: String,
    /// llama.cpp's template result (parser, grammar, triggers, stops).
    template: ChatTemplateResult,
    /// The JSON format is in use (the template cannot call tools).
    json_format: bool,
    /// The grammar to sample under (the template's, or the JSON format's), if any.
    grammar: Option<String>,
}

struct Generator<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    facts: ModelFacts,
    /// The tokens whose keys and values are in the cache, from position 0.
    cached: Vec<LlamaToken>,
    add_bos: AddBos,
    template: LlamaChatTemplate,
}

impl<'m> Generator<'m> {
    fn new(backend: &LlamaBackend, model: &'m LlamaModel, settings: &Settings) -> Result<Self> {
        let n_ctx_train = model.n_ctx_train().max(1);
        let n_ctx = settings
            .ctx
            .unwrap_or(DEFAULT_CTX)
            .clamp(256, n_ctx_train.max(256));
        let threads = settings.threads.unwrap_or_else(default_threads).max(1) as i32;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(BATCH)
            .with_n_ubatch(BATCH)
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let ctx = model
            .new_context(backend, params)
            .map_err(|e| anyhow!("cannot make a context of {n_ctx} tokens: {e}"))?;
        // The tokenizer's own flag decides whether prompts start with BOS; without one,
        // SentencePiece vocabularies add it and BPE ones do not (llama.cpp's defaults).
        let add_bos = match model
            .meta_val_str("tokenizer.ggml.add_bos_token")
            .as_deref()
        {
            Ok("true") => AddBos::Always,
            Ok(_) => AddBos::Never,
            Err(_) if model.vocab_type() == VocabType::SPM => AddBos::Always,
            Err(_) => AddBos::Never,
        };
        // An empty template makes llama.cpp use the model's own (or ChatML when it has none).
        let template = LlamaChatTemplate::new("").expect("no NUL in an empty string");
        Ok(Self {
            model,
            ctx,
            facts: ModelFacts { n_ctx, n_ctx_train },
            cached: Vec::new(),
            add_bos,
            template,
        })
    }

    fn serve(&mut self, mut jobs: mpsc::UnboundedReceiver<Job>) {
        while let Some(job) = jobs.blocking_recv() {
            let events = job.events.clone();
            if let Err(failure) = self.answer(&job.request, &job.events) {
                let _ = events.send(Event::Failed(failure));
            }
        }
    }

    /// Renders the prompt: natively when the template can call tools (or none are offered),
    /// else in the JSON format.
    fn prepare(&self, req: &ChatRequest) -> Result<Prepared, Failure> {
        let mode = req.tool_mode();
        let messages = Value::Array(req.messages.clone()).to_string();
        let tools = (mode != ToolMode::None).then(|| Value::Array(req.tools.clone()).to_string());
        let native = self.apply(&messages, tools.as_deref(), req.tool_choice_name())?;
        if mode == ToolMode::None || native.grammar.is_some() {
            let grammar = native.grammar.clone();
            return Ok(Prepared {
                prompt: native.prompt.clone(),
                template: native,
                json_format: false,
                grammar,
            });
        }
        // No grammar for `auto` can mean a template that calls tools without a trigger word;
        // asking for `required` tells: a template with a call syntax has a grammar for it.
        if mode == ToolMode::Auto
            && self
                .apply(&messages, tools.as_deref(), "required")?
                .grammar
                .is_some()
        {
            return Ok(Prepared {
                prompt: native.prompt.clone(),
                template: native,
                json_format: false,
                grammar: None,
            });
        }
        let rewritten =
            Value::Array(api::json_format_messages(&req.messages, &req.tools, mode)).to_string();
        let template = self.apply(&rewritten, None, "none")?;
        let grammar = [false, true]
            .into_iter()
            .find_map(|loose| {
                let schema = api::answer_schema(&req.tools, mode, loose);
                llama_cpp_2::json_schema_to_grammar(&schema.to_string()).ok()
            })
            .ok_or_else(|| Failure::bad_request("the tool schemas cannot be made a grammar"))?;
        Ok(Prepared {
            prompt: template.prompt.clone(),
            template,
            json_format: true,
            grammar: Some(grammar),
        })
    }

    fn apply(
        &self,
        messages: &str,
        tools: Option<&str>,
        tool_choice: &str,
    ) -> Result<ChatTemplateResult, Failure> {
        let params = OpenAIChatTemplateParams {
            messages_json: messages,
            tools_json: tools,
            tool_choice: tools.map(|_| tool_choice),
            json_schema: None,
            grammar: None,
            // Thinking, where a model has it, goes to `reasoning_content`.
            reasoning_format: Some("deepseek"),
            chat_template_kwargs: None,
            add_generation_prompt: true,
            use_jinja: true,
            parallel_tool_calls: true,
            enable_thinking: true,
            add_bos: false,
            add_eos: false,
            parse_tool_calls: tools.is_some(),
        };
        self.model
            .apply_chat_template_oaicompat(&self.template, &params)
            .map_err(|e| {
                Failure::bad_request(format!(
                    "the model's chat template cannot render these messages: {e}"
                ))
            })
    }

    /// The sampler: the grammar first (when there is one), then llama.cpp's usual chain
    /// (top-k 40, top-p 0.95, min-p 0.05, temperature), or greedy at temperature 0.
    fn sampler(&self, prepared: &Prepared, req: &ChatRequest) -> Result<LlamaSampler, Failure> {
        let mut chain = Vec::new();
        if let Some(grammar) = &prepared.grammar {
            let t = &prepared.template;
            let lazy = !prepared.json_format && t.grammar_lazy;
            let mut g = if lazy {
                let mut patterns = Vec::new();
                let mut tokens = Vec::new();
                for trigger in &t.grammar_triggers {
                    match trigger.trigger_type {
                        GrammarTriggerType::Token => tokens.extend(trigger.token),
                        GrammarTriggerType::Word => patterns.push(regex::escape(&trigger.value)),
                        GrammarTriggerType::Pattern => patterns.push(trigger.value.clone()),
                        GrammarTriggerType::PatternFull => {
                            let p = &trigger.value;
                            let start = if p.starts_with('^') { "" } else { "^" };
                            let end = if p.ends_with('$') { "" } else { "$" };
                            patterns.push(format!("{start}{p}{end}"));
                        }
                    }
                }
                LlamaSampler::grammar_lazy_patterns(self.model, grammar, "root", &patterns, &tokens)
            } else {
                LlamaSampler::grammar(self.model, grammar, "root")
            }
            .map_err(|e| Failure::bad_request(format!("the tool grammar is invalid: {e}")))?;
            // A template's grammar starts with the generation prompt the prompt already ends
            // with (llama.cpp prefills it the same way); the JSON format's does not.
            if !lazy && !prepared.json_format && !t.generation_prompt.is_empty() {
                let mut prefill = self
                    .model
                    .str_to_token(&t.generation_prompt, AddBos::Never)
                    .unwrap_or_default();
                if let Some(first) = prefill.first()
                    && self
                        .piece(*first, true)
                        .starts_with(|c: char| c.is_whitespace())
                    && !t.generation_prompt.starts_with(|c: char| c.is_whitespace())
                {
                    prefill.remove(0);
                }
                for token in prefill {
                    g.try_accept(token).map_err(|e| {
                        Failure::bad_request(format!("the tool grammar rejects the prompt: {e}"))
                    })?;
                }
            }
            chain.push(g);
        }
        let temperature = req.temperature.unwrap_or(0.8);
        if temperature <= 0.0 {
            chain.push(LlamaSampler::greedy());
        } else {
            chain.extend([
                LlamaSampler::top_k(40),
                LlamaSampler::top_p(0.95, 1),
                LlamaSampler::min_p(0.05, 1),
                LlamaSampler::temp(temperature),
                LlamaSampler::dist(req.seed.unwrap_or_else(random_seed)),
            ]);
        }
        Ok(LlamaSampler::chain_simple(chain))
    }

    fn piece(&self, token: LlamaToken, special: bool) -> String {
        self.model
            .token_to_piece_bytes(token, 64, special, None)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// Puts `tokens` in the cache, reusing the longest prefix already there; afterwards the
    /// logits of the last token are ready. Errors: the decode failed (the cache is cleared).
    fn load_prompt(&mut self, tokens: &[LlamaToken]) -> Result<()> {
        let mut common = self
            .cached
            .iter()
            .zip(tokens)
            .take_while(|(a, b)| a == b)
            .count();
        // The last prompt token is decoded again for its logits.
        common = common.min(tokens.len().saturating_sub(1));
        let kept = self
            .ctx
            .clear_kv_cache_seq(Some(0), Some(common as u32), None)
            .unwrap_or(false);
        if !kept {
            // Some caches (recurrent models) cannot drop a tail: start over.
            self.ctx.clear_kv_cache();
            common = 0;
        }
        self.cached.truncate(common);
        tracing::debug!(reused = common, decoded = tokens.len() - common, "prompt");
        let mut batch = LlamaBatch::new(BATCH as usize, 1);
        let last = tokens.len() - 1;
        for (start, chunk) in tokens[common..].chunks(BATCH as usize).enumerate() {
            batch.clear();
            for (i, token) in chunk.iter().enumerate() {
                let pos = common + start * BATCH as usize + i;
                batch.add(*token, pos as i32, &[0], pos == last)?;
            }
            if let Err(e) = self.ctx.decode(&mut batch) {
                self.ctx.clear_kv_cache();
                self.cached.clear();
                return Err(anyhow!("llama.cpp could not read the prompt: {e}"));
            }
            self.cached.extend_from_slice(chunk);
        }
        Ok(())
    }

    fn answer(
        &mut self,
        req: &ChatRequest,
        events: &mpsc::UnboundedSender<Event>,
    ) -> Result<(), Failure> {
        let prepared = self.prepare(req)?;
        let tokens = self
            .model
            .str_to_token(&prepared.prompt, self.add_bos)
            .map_err(|e| Failure::bad_request(format!("cannot tokenize the prompt: {e}")))?;
        let n_ctx = self.facts.n_ctx as usize;
        if tokens.is_empty() {
            return Err(Failure::bad_request("the prompt is empty"));
        }
        if tokens.len() >= n_ctx {
            return Err(Failure {
                status: 400,
                code: "context_length_exceeded",
                message: format!(
                    "the prompt is {} tokens, which exceeds the available context size of {n_ctx} tokens",
                    tokens.len()
                ),
            });
        }
        let mut sampler = self.sampler(&prepared, req)?;
        self.load_prompt(&tokens)
            .map_err(|e| Failure::internal(&e))?;
        let usage = |completion: usize| Usage {
            prompt_tokens: tokens.len() as u32,
            completion_tokens: completion as u32,
        };
        if events.send(Event::Started).is_err() {
            return Ok(());
        }

        let stops = &prepared.template.additional_stops;
        let preserved: Vec<LlamaToken> = prepared
            .template
            .preserved_tokens
            .iter()
            .filter_map(|t| match self.model.str_to_token(t, AddBos::Never) {
                Ok(ids) if ids.len() == 1 => Some(ids[0]),
                _ => None,
            })
            .collect();
        let mut parse = if prepared.json_format {
            None
        } else {
            Some(prepared.template.streaming_state_oaicompat().map_err(|e| {
                Failure::internal(&anyhow!("cannot start llama.cpp's reply parser: {e}"))
            })?)
        };
        let mut decoder = encoding_rs::UTF_8.new_decoder();
        let mut text = String::new();
        // How much of `text` went to the parser (native) or out as reply text (JSON format).
        let mut shown = 0usize;
        let mut streamed_reply = String::new();
        let mut seen_calls: Vec<(u64, String)> = Vec::new();
        let mut generated = 0usize;
        let mut finish = "length";
        let mut batch = LlamaBatch::new(1, 1);
        let limit = req.token_limit() as usize;
        let mut stopped_at: Option<usize> = None;

        while generated < limit {
            if self.cached.len() >= n_ctx {
                break;
            }
            if events.is_closed() {
                return Ok(());
            }
            let token = sampler.sample(&self.ctx, -1);
            if self.model.is_eog_token(token) {
                finish = "stop";
                break;
            }
            generated += 1;
            let special = preserved.contains(&token);
            let bytes = self
                .model
                .token_to_piece_bytes(token, 64, special, None)
                .or_else(|_| self.model.token_to_piece_bytes(token, 4096, special, None))
                .unwrap_or_default();
            let mut piece = String::with_capacity(bytes.len() + 4);
            let _ = decoder.decode_to_string(&bytes, &mut piece, false);
            text.push_str(&piece);
            if let Some(at) = api::find_stop(&text, stops) {
                text.truncate(at);
                stopped_at = Some(at);
            }
            // Stream what is certain.
            let safe = stopped_at.unwrap_or_else(|| api::safe_prefix_len(&text, stops));
            if prepared.json_format {
                if let Some(reply) = api::partial_reply(&text[..safe])
                    && reply.len() > streamed_reply.len()
                    && reply.starts_with(streamed_reply.as_str())
                {
                    let new = reply[streamed_reply.len()..].to_owned();
                    streamed_reply = reply;
                    let _ = events.send(Event::Delta(json!({"content": new})));
                }
            } else if let Some(state) = parse.as_mut()
                && safe > shown
            {
                match state.update(&text[shown..safe], true) {
                    Ok(deltas) => {
                        for d in deltas {
                            self.send_delta(&d, &mut seen_calls, events);
                        }
                        shown = safe;
                    }
                    Err(e) => tracing::debug!("partial parse: {e}"),
                }
            }
            if stopped_at.is_some() {
                finish = "stop";
                break;
            }
            // Feed the token back for the next one.
            batch.clear();
            let pos = self.cached.len() as i32;
            batch
                .add(token, pos, &[0], true)
                .map_err(|e| Failure::internal(&anyhow!("{e}")))?;
            if let Err(e) = self.ctx.decode(&mut batch) {
                self.ctx.clear_kv_cache();
                self.cached.clear();
                return Err(Failure::internal(&anyhow!(
                    "llama.cpp failed while writing: {e}"
                )));
            }
            self.cached.push(token);
        }
        // What the decoder still holds (an unfinished character at the end).
        let mut tail = String::new();
        let _ = decoder.decode_to_string(&[], &mut tail, true);
        text.push_str(&tail);

        let (content, reasoning, calls) = if prepared.json_format {
            match api::read_json_answer(&text) {
                JsonAnswer::Reply(reply) => (reply, String::new(), Vec::new()),
                JsonAnswer::Call { name, arguments } => (
                    String::new(),
                    String::new(),
                    vec![ToolCallOut {
                        id: new_call_id(),
                        name,
                        arguments,
                    }],
                ),
                // Cut off at the limit: the reply as far as it went, else the raw text.
                JsonAnswer::Raw(raw) => (
                    api::partial_reply(&raw).unwrap_or(raw),
                    String::new(),
                    Vec::new(),
                ),
            }
        } else {
            let parsed = prepared
                .template
                .parse_response_oaicompat(&text, false)
                .ok()
                .and_then(|s| serde_json::from_str::<Value>(&s).ok())
                .unwrap_or_else(|| json!({"content": text}));
            api::read_parsed_message(&parsed, &mut new_call_id)
        };

        // Streaming: what the last partial parse held back.
        if prepared.json_format {
            if content.len() > streamed_reply.len() && content.starts_with(streamed_reply.as_str())
            {
                let _ = events.send(Event::Delta(
                    json!({"content": content[streamed_reply.len()..]}),
                ));
            }
            for (i, call) in calls.iter().enumerate() {
                let _ = events.send(Event::Delta(call.to_delta(i)));
            }
        } else if let Some(state) = parse.as_mut() {
            match state.update(&text[shown.min(text.len())..], false) {
                Ok(deltas) => {
                    for d in deltas {
                        self.send_delta(&d, &mut seen_calls, events);
                    }
                }
                Err(e) => tracing::debug!("final parse: {e}"),
            }
        }
        if !calls.is_empty() && finish == "stop" {
            finish = "tool_calls";
        }
        // The streamed calls' ids are the ones clients saw; the whole message uses the same.
        let calls: Vec<ToolCallOut> = calls
            .into_iter()
            .enumerate()
            .map(|(i, mut c)| {
                if let Some((_, id)) = seen_calls.iter().find(|(idx, _)| *idx == i as u64) {
                    c.id = id.clone();
                }
                c
            })
            .collect();
        let _ = events.send(Event::Finished {
            message: api::assistant_message(&content, &reasoning, &calls),
            finish_reason: finish,
            usage: usage(generated),
        });
        Ok(())
    }

    fn send_delta(
        &self,
        json_text: &str,
        seen: &mut Vec<(u64, String)>,
        events: &mpsc::UnboundedSender<Event>,
    ) {
        let Ok(mut delta) = serde_json::from_str::<Value>(json_text) else {
            return;
        };
        api::fill_call_ids(&mut delta, seen, &mut new_call_id);
        if delta.as_object().is_some_and(|o| !o.is_empty()) {
            let _ = events.send(Event::Delta(delta));
        }
    }
}

static CALL_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A call id unique within the worker's life: `call_`, the clock, and a counter.
fn new_call_id() -> String {
    let n = CALL_COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("call_{:x}{n:04x}", random_seed())
}

/// Half the logical CPUs (about the physical cores, as llama.cpp picks), at least one. ggml's
/// threads wait for each other by spinning, so more threads than free cores is much slower
/// than fewer: on a busy two-core machine one thread wrote ten times faster than two.
fn default_threads() -> u32 {
    std::thread::available_parallelism()
        .map(|n| (n.get() as u32 / 2).max(1))
        .unwrap_or(1)
}

/// A seed from the clock (the sampler's randomness needs no more).
fn random_seed() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
        .unwrap_or(0)
}
