//! Joining a run already in flight after a reload (`attach_run`, same name and arguments as
//! `/app/attach_run`), and forwarding a run's events to the window's channel.

use crate::args::Args;
use crate::error::IpcResult;
use crate::state::Desktop;
use engram_core::RunEvent;
use engram_service::Run;
use engram_service::commands::AttachRunArgs;
use tauri::State;
use tauri::ipc::Channel;

/// Joins the agent's run in flight: streams what it sent so far, then the rest over
/// `on_event`, and resolves `true` after `done`; resolves `false` at once when the agent is
/// not running.
#[tauri::command(rename_all = "snake_case")]
pub async fn attach_run(
    d: State<'_, Desktop>,
    args: Args<AttachRunArgs>,
    on_event: Channel<RunEvent>,
) -> IpcResult<bool> {
    if let Some(remote) = d.remote.current() {
        let args = serde_json::json!({"agent_id": args.0.agent_id});
        let on_event = on_event.clone();
        return Ok(remote
            .run("attach_run", &args, |event| {
                if let Ok(event) = serde_json::from_value::<RunEvent>(event) {
                    let _ = on_event.send(event);
                }
            })
            .await?);
    }
    let agent_id = args.0.agent_id;
    d.engram.agents().get(&agent_id).await?;
    let Some(mut events) = d.engram.runs().attach(&agent_id) else {
        return Ok(false);
    };
    while let Some(event) = events.next().await {
        let _ = on_event.send(event);
    }
    Ok(true)
}

/// Forwards a run's events to the window's channel until the run ends, then resolves with
/// what ended it: every streaming command (`send_message`, `regenerate`, `edit_and_resend`,
/// `resolve_approval`) is this over one `Runs::start`. Errors: the run's, if an
/// approval decision after an earlier one failed.
pub(crate) async fn stream(mut run: Run, on_event: &Channel<RunEvent>) -> IpcResult<()> {
    while let Some(event) = run.events.next().await {
        // A closed window is no reason to stop the run: the history must stay whole.
        let _ = on_event.send(event);
    }
    run.outcome().await?;
    Ok(())
}
