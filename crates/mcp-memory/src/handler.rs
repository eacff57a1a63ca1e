//! The MCP server handler: tools, resources (one per block) and subscriptions, each a line or
//! two over the service.

use crate::notify::Subscribers;
use crate::seen::Seen;
use crate::tools;
use crate::uri::{URI_PREFIX, path_of as uri_path, uri_of};
use engram_service::Engram;
use engram_service::mcp_memory::{MemoryClient, MemoryError};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// One MCP session's handler (the stdio process, or one HTTP session or request).
#[derive(Clone)]
pub struct MemoryServer {
    engram: Arc<Engram>,
    /// The client on stdio; `None` over HTTP, where the request's token names it.
    client: Option<MemoryClient>,
    /// Record writes under `client.name` even when the client introduced itself otherwise.
    fixed_name: bool,
    subscribers: Arc<Subscribers>,
    seen: Arc<Seen>,
    /// Resources this session subscribed to (older protocols), and its key once registered.
    uris: Arc<Mutex<HashSet<String>>>,
    registered: Arc<Mutex<bool>>,
}

impl MemoryServer {
    /// A handler for `client` (stdio) or for whatever client each HTTP request's token names
    /// (`None`).
    pub(crate) fn new(
        engram: Arc<Engram>,
        client: Option<MemoryClient>,
        fixed_name: bool,
        subscribers: Arc<Subscribers>,
        seen: Arc<Seen>,
    ) -> Self {
        Self {
            engram,
            client,
            fixed_name,
            subscribers,
            seen,
            uris: Arc::default(),
            registered: Arc::default(),
        }
    }

    /// Who is asking: the stdio launch's client (named as it introduced itself unless the
    /// name is fixed), or the client the HTTP layer found for the bearer token.
    fn client(&self, context: &RequestContext<RoleServer>) -> Result<MemoryClient, ErrorData> {
        let client = self.who(context)?;
        let transport = if self.client.is_some() {
            "stdio"
        } else {
            "http"
        };
        self.seen.note(&self.engram, &client.name, transport);
        Ok(client)
    }

    fn who(&self, context: &RequestContext<RoleServer>) -> Result<MemoryClient, ErrorData> {
        if let Some(client) = &self.client {
            if self.fixed_name {
                return Ok(client.clone());
            }
            let name = context
                .peer
                .peer_info()
                .map(|i| i.client_info.name.clone())
                .filter(|n| !n.trim().is_empty());
            return Ok(name.map_or_else(|| client.clone(), |n| client.renamed(&n)));
        }
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<MemoryClient>())
            .cloned()
            .ok_or_else(|| ErrorData::internal_error("no client for this request", None))
    }
}

fn tool_result(result: Result<String, MemoryError>) -> Result<CallToolResponse, ErrorData> {
    Ok(match result {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(MemoryError::Engine(e)) if e.code() == "internal" || e.code() == "storage" => {
            tracing::warn!(%e, "memory server: a tool call failed");
            CallToolResult::error(vec![ContentBlock::text(format!("Engram failed: {e}"))])
        }
        Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
    }
    .into())
}

fn path_of(uri: &str) -> Result<&str, ErrorData> {
    uri_path(uri).ok_or_else(|| {
        ErrorData::resource_not_found(format!("not one of Engram's memory files: {uri}"), None)
    })
}

impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_resources_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new(
            "engram-memory",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(
            "Engram's long-term memory, shared with the user's Engram agents and other AI tools. \
             View /memories with the memory tool at the start of a task; record lasting facts \
             and preferences there; search_memory for older notes.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let client = self.client(&context)?;
        let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
        match tools::call(&self.engram, &client, &request.name, args).await {
            Some(result) => tool_result(result),
            None => Err(ErrorData::invalid_params(
                format!("no tool named '{}'", request.name),
                None,
            )),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let client = self.client(&context)?;
        let files = self
            .engram
            .memory_server()
            .files(&client)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let resources = files
            .into_iter()
            .map(|f| {
                Resource::new(uri_of(&f.path), f.path.clone())
                    .with_description(f.description)
                    .with_mime_type("text/markdown")
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let client = self.client(&context)?;
        let text = self
            .engram
            .memory_server()
            .read(&client, path_of(&request.uri)?)
            .map_err(|e| ErrorData::resource_not_found(e.to_string(), None))?;
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, request.uri).with_mime_type("text/markdown"),
        ])
        .into())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = SubscriptionFilter::new();
        accepted.resources_list_changed = requested.resources_list_changed;
        accepted.resource_subscriptions = requested.resource_subscriptions.as_ref().map(|uris| {
            uris.iter()
                .filter(|u| u.starts_with(URI_PREFIX))
                .cloned()
                .collect()
        });
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let key = self.subscribers.add_listener(context.sink().clone());
        context.cancelled().await;
        self.subscribers.remove_listener(key);
        Ok(())
    }

    #[allow(deprecated)] // older clients (protocol before 2026-07-28) still subscribe this way
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let client = self.client(&context)?;
        self.engram
            .memory_server()
            .read(&client, path_of(&request.uri)?)
            .map_err(|e| ErrorData::resource_not_found(e.to_string(), None))?;
        self.uris
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(request.uri);
        let mut registered = self
            .registered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !*registered {
            self.subscribers
                .add_session(context.peer.clone(), self.uris.clone());
            *registered = true;
        }
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.uris
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&request.uri);
        Ok(())
    }
}
