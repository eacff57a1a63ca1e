//! How the window's arguments reach a command: the whole JSON object, parsed at once into one
//! of the service's argument structs.

use crate::error::IpcError;
use engram_core::Error;
use serde::de::DeserializeOwned;
use tauri::Runtime;
use tauri::ipc::{CommandArg, CommandItem, InvokeBody, InvokeError};

/// A command's arguments as one of the service's argument structs: the whole JSON object the
/// window sent (`invoke(name, {agent_id, …})`), parsed at once.
pub struct Args<T>(pub T);

impl<'de, R: Runtime, T: DeserializeOwned> CommandArg<'de, R> for Args<T> {
    fn from_command(command: CommandItem<'de, R>) -> Result<Self, InvokeError> {
        let parsed = match command.message.payload() {
            InvokeBody::Json(v) => T::deserialize(v).map_err(|e| e.to_string()),
            InvokeBody::Raw(_) => Err("expected a JSON object of arguments".to_owned()),
        };
        parsed
            .map(Args)
            .map_err(|e| invalid(format!("{}: {e}", command.name)))
    }
}

/// An `invalid_input` error for the window.
pub(crate) fn invalid(message: String) -> InvokeError {
    InvokeError::from(IpcError::from(Error::invalid(message)))
}
