//! What a request may reach, by whose token it carries.
//!
//! The server's own token (the one `engram serve --show-token` prints) is the administrator's
//! and reaches everything, as before users existed. A user's token (`engram user token`)
//! reaches, by default, nothing: only the routes named here, and only for agents the user may
//! use ([`AgentAccess`]) — reading needs `read`, anything else on an agent `write`, deleting it
//! `owner`. Blocks by id are reached by the user who made them and through the agents they
//! are attached to. Folders, tools, MCP servers, groups, imports, searches across agents,
//! listing all blocks stay the administrator's. The window's `/app` API is open command by
//! command ([`Access`]): a user's window lists and makes their own agents, reads and chats
//! with the agents shared with them, and sees notices of those agents only. Listing and
//! creating agents, and creating blocks, are scoped in their handlers (see
//! [`Principal::user`]). A route added later is closed to users until it is named here.
//!
//! An agent a user may not see answers 404, as one that does not exist (so ids cannot be
//! probed); a route closed to users answers 403.

use crate::config::AppState;
use crate::errors::ApiError;
use axum::extract::{FromRequestParts, MatchedPath, RawPathParams, Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use engram_core::{AgentAccess, AgentId, BlockId, Result, User};
use engram_service::Notice;
use engram_service::commands::{Access, CommandDef};

/// Who a request comes from, put into its extensions by the guard.
#[derive(Clone, Debug)]
pub enum Principal {
    /// The server's own token, or a server without tokens (`--no-auth`, loopback only).
    Admin,
    /// A user's token.
    User(User),
}

impl Principal {
    /// The user, when the request is not the administrator's.
    pub fn user(&self) -> Option<&User> {
        match self {
            Self::Admin => None,
            Self::User(u) => Some(u),
        }
    }
}

/// What a user's request needs before it runs.
#[derive(Debug, PartialEq, Eq)]
enum Need {
    /// Nothing: it reveals nothing, or its handler scopes it to the user.
    Nothing,
    /// The route is the administrator's.
    Admin,
    /// `access` to an agent, and optionally `write` on a block it brings in.
    Agent {
        agent: AgentId,
        access: AgentAccess,
        block: Option<BlockId>,
    },
    /// `access` to a block through one of the user's agents.
    Block { block: BlockId, access: AgentAccess },
}

/// Routes open to every user: they reveal nothing of anyone's agents, or are scoped to the
/// user by their handlers.
const OPEN_TO_USERS: &[&str] = &[
    "/v1/health",
    "/v1/health/",
    "/v1/models",
    "/v1/models/",
    "/v1/models/embedding",
    "/v1/models/embedding/",
    "/v1/agents",
    "/v1/agents/",
    "/v1/agents/count",
];

/// What a user's `method` on the route `pattern` (as axum matched it) with path `params`
/// needs.
fn need(method: &Method, pattern: &str, params: &[(&str, &str)]) -> Need {
    if OPEN_TO_USERS.contains(&pattern) {
        return Need::Nothing;
    }
    // The window's API names its agent in the body: each command declares who may call it,
    // and its handler checks that ([`app_command`]); the notice stream is filtered per user.
    if pattern.starts_with("/app/") {
        return Need::Nothing;
    }
    // Making a block of one's own (its handler records the owner); listing all is not.
    if *method == Method::POST && matches!(pattern, "/v1/blocks" | "/v1/blocks/") {
        return Need::Nothing;
    }
    let param = |name: &str| params.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    if let Some(agent) = param("agent_id") {
        // Folders are the administrator's, so an agent's folder routes are too; its files
        // (of folders already attached) are the agent's.
        if param("folder_id").is_some() {
            return Need::Admin;
        }
        let access = if *method == Method::GET {
            AgentAccess::Read
        } else if *method == Method::DELETE && pattern == "/v1/agents/{agent_id}" {
            AgentAccess::Owner
        } else {
            AgentAccess::Write
        };
        return Need::Agent {
            agent: AgentId::from(agent),
            access,
            block: param("block_id").map(BlockId::from),
        };
    }
    if pattern == "/v1/blocks/{block_id}"
        && let Some(block) = param("block_id")
    {
        // Deleting a block takes it from every agent it is shared with: the administrator's.
        let access = match *method {
            Method::GET => AgentAccess::Read,
            Method::PATCH => AgentAccess::Write,
            _ => return Need::Admin,
        };
        return Need::Block {
            block: BlockId::from(block),
            access,
        };
    }
    Need::Admin
}

/// The middleware (inside the guard, so the principal is known): lets the administrator
/// through, and a user only as [`need`] says.
pub(crate) async fn check(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let Some(user) = req
        .extensions()
        .get::<Principal>()
        .and_then(Principal::user)
        .cloned()
    else {
        return next.run(req).await;
    };
    let path = req.uri().path().to_owned();
    let Some(pattern) = req.extensions().get::<MatchedPath>().cloned() else {
        // Not a route: the served UI's files are everyone's, unknown API paths 404 anyway.
        return next.run(req).await;
    };
    let pattern = pattern.as_str();
    if !(pattern.starts_with("/v1") || pattern.starts_with("/app")) {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let params = RawPathParams::from_request_parts(&mut parts, &())
        .await
        .ok();
    let req = Request::from_parts(parts, body);
    let params: Vec<(&str, &str)> = params.iter().flat_map(RawPathParams::iter).collect();
    let verdict = match need(req.method(), pattern, &params) {
        Need::Nothing => Ok(true),
        Need::Admin => Ok(false),
        Need::Agent {
            agent,
            access,
            block,
        } => allowed_agent(&s, &user, &agent, access, block.as_ref()).await,
        Need::Block { block, access } => {
            match s.engram.users().block_access(&block, &user.id).await {
                Ok(Some(has)) => Ok(has >= access),
                Ok(None) => Err(engram_core::Error::not_found("block", block.as_str())),
                Err(e) => Err(e),
            }
        }
    };
    match verdict {
        Ok(true) => next.run(req).await,
        Ok(false) => ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "{} {path} is not open to user '{}'",
                req.method(),
                user.name
            ),
        )
        .into_response(),
        Err(e) => crate::errors::AppError(e).into_response(),
    }
}

/// Whether `user` may do `access` with `agent` (and write `block`, when the route brings one
/// in). An agent they may not see at all is "not found", as one that does not exist.
async fn allowed_agent(
    s: &AppState,
    user: &User,
    agent: &AgentId,
    access: AgentAccess,
    block: Option<&BlockId>,
) -> Result<bool> {
    let users = s.engram.users();
    let Some(has) = users.access(agent, &user.id).await? else {
        return Err(engram_core::Error::not_found("agent", agent.as_str()));
    };
    if has < access {
        return Ok(false);
    }
    match block {
        Some(b) => Ok(users
            .block_access(b, &user.id)
            .await?
            .is_some_and(|a| a >= AgentAccess::Write)),
        None => Ok(true),
    }
}

/// The answer refusing `user` the window's command `def` with `args` (its JSON arguments):
/// 403 for a command that is not theirs, 404 for an agent they may not see; `None` when they
/// may call it.
pub(crate) async fn app_refusal(
    s: &AppState,
    user: &User,
    def: &CommandDef,
    args: &serde_json::Value,
) -> Option<Response> {
    let forbidden = || {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("`{}` is not open to user '{}'", def.name, user.name),
        )
        .into_response()
    };
    let access = match def.access {
        Access::Scoped => return None,
        Access::Admin => return Some(forbidden()),
        Access::Agent(access) => access,
    };
    let Some(agent) = args.get("agent_id").and_then(serde_json::Value::as_str) else {
        let e = engram_core::Error::invalid(format!("{}: agent_id is missing", def.name));
        return Some(crate::errors::AppError(e).into_response());
    };
    match allowed_agent(s, user, &AgentId::from(agent), access, None).await {
        Ok(true) => None,
        Ok(false) => Some(forbidden()),
        Err(e) => Some(crate::errors::AppError(e).into_response()),
    }
}

/// Whether `user` may see `notice`: those of agents they may read, and "the list of agents
/// changed"; nothing of folders, tools, MCP servers or downloads, which are the
/// administrator's.
pub(crate) async fn may_see(s: &AppState, user: &User, notice: &Notice) -> bool {
    let agent = match notice {
        Notice::AgentsChanged => return true,
        Notice::AgentChanged { agent_id }
        | Notice::MemoryChanged { agent_id, .. }
        | Notice::MessagesChanged { agent_id, .. }
        | Notice::ArchivalChanged { agent_id, .. }
        | Notice::SleeptimePass { agent_id, .. } => agent_id,
        _ => return false,
    };
    matches!(s.engram.users().access(agent, &user.id).await, Ok(Some(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_routes_need_what_the_method_does() {
        let a = [("agent_id", "agent-1")];
        let need_of = |m: Method, p: &str| need(&m, p, &a);
        let agent = |access| Need::Agent {
            agent: AgentId::from("agent-1"),
            access,
            block: None,
        };
        assert_eq!(
            need_of(Method::GET, "/v1/agents/{agent_id}/messages"),
            agent(AgentAccess::Read)
        );
        assert_eq!(
            need_of(Method::POST, "/v1/agents/{agent_id}/messages"),
            agent(AgentAccess::Write)
        );
        assert_eq!(
            need_of(Method::DELETE, "/v1/agents/{agent_id}"),
            agent(AgentAccess::Owner)
        );
        assert_eq!(
            need_of(
                Method::DELETE,
                "/v1/agents/{agent_id}/archival-memory/{memory_id}"
            ),
            agent(AgentAccess::Write)
        );
    }

    #[test]
    fn what_is_not_named_is_the_administrators() {
        for p in [
            "/v1/tools",
            "/v1/blocks",
            "/v1/folders/{folder_id}",
            "/v1/agents/import",
            "/v1/messages/search",
            "/v1/groups/{group_id}",
        ] {
            assert_eq!(need(&Method::GET, p, &[]), Need::Admin, "{p}");
        }
        // The window's API is checked command by command, past the route.
        assert_eq!(need(&Method::POST, "/app/{command}", &[]), Need::Nothing);
        let attach = [("agent_id", "agent-1"), ("folder_id", "source-1")];
        assert_eq!(
            need(
                &Method::PATCH,
                "/v1/agents/{agent_id}/folders/attach/{folder_id}",
                &attach
            ),
            Need::Admin
        );
        let block = [("block_id", "block-1")];
        assert_eq!(
            need(&Method::DELETE, "/v1/blocks/{block_id}", &block),
            Need::Admin
        );
    }
}
