//! Sleep-time settings in agent files. Letta marks an agent `enable_sleeptime: true` and puts
//! it in a group whose `manager_config` has `manager_type: "sleeptime"`, the agent as
//! `manager_agent_id` and `sleeptime_agent_frequency`; Engram's extension keeps its own
//! settings whole. Import turns either into the agent's live settings; export writes both.

use engram_core::SleeptimeSettings;
use serde_json::{Value, json};

/// A group's field, read from `manager_config` (Letta's files) or from the group itself
/// (Letta's API shape).
fn group_field<'a>(group: &'a Value, key: &str) -> Option<&'a Value> {
    group
        .get("manager_config")
        .and_then(|c| c.get(key))
        .or_else(|| group.get(key))
}

/// The settings a Letta agent file gives agent `local_id`: passes on when it has
/// `enable_sleeptime: true`, every `sleeptime_agent_frequency` user turns of the sleep-time group
/// it manages (the default when none says). `None` when the agent does not ask for passes.
pub(crate) fn from_letta(
    local_id: &str,
    extra: &serde_json::Map<String, Value>,
    groups: &[Value],
) -> Option<SleeptimeSettings> {
    if extra.get("enable_sleeptime") != Some(&Value::Bool(true)) {
        return None;
    }
    let frequency = groups
        .iter()
        .filter(|g| group_field(g, "manager_type").and_then(Value::as_str) == Some("sleeptime"))
        .find(|g| group_field(g, "manager_agent_id").and_then(Value::as_str) == Some(local_id))
        .and_then(|g| group_field(g, "sleeptime_agent_frequency"))
        .and_then(Value::as_u64)
        .and_then(|f| u32::try_from(f).ok())
        .filter(|f| *f > 0);
    let mut s = SleeptimeSettings {
        enabled: true,
        ..SleeptimeSettings::default()
    };
    s.frequency = frequency.unwrap_or(s.frequency);
    Some(s)
}

/// The group Letta's files carry for an agent whose passes are on (id `group-<n>`).
pub(crate) fn letta_group(
    id: &str,
    agent_local_id: &str,
    name: &str,
    s: &SleeptimeSettings,
) -> Value {
    json!({
        "id": id,
        "agent_ids": [],
        "description": format!("Sleep-time passes of {name}"),
        "manager_config": {
            "manager_type": "sleeptime",
            "manager_agent_id": agent_local_id,
            "sleeptime_agent_frequency": s.frequency,
        },
        "project_id": null,
        "shared_block_ids": [],
        "hidden": null,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letta_groups_give_the_frequency_of_the_agent_they_manage() {
        let extra = json!({"enable_sleeptime": true});
        let extra = extra.as_object().unwrap();
        let groups = [
            json!({"id": "group-0", "manager_config": {"manager_type": "sleeptime", "manager_agent_id": "agent-0", "sleeptime_agent_frequency": 3}}),
            json!({"id": "group-1", "manager_type": "sleeptime", "manager_agent_id": "agent-9", "sleeptime_agent_frequency": 7}),
        ];
        assert_eq!(from_letta("agent-0", extra, &groups).unwrap().frequency, 3);
        assert_eq!(from_letta("agent-9", extra, &groups).unwrap().frequency, 7);
        assert_eq!(from_letta("agent-5", extra, &groups).unwrap().frequency, 5);
        assert!(from_letta("agent-0", &serde_json::Map::new(), &groups).is_none());
        let written = letta_group(
            "group-0",
            "agent-0",
            "Ezra",
            &from_letta("agent-0", extra, &groups).unwrap(),
        );
        assert_eq!(
            from_letta("agent-0", extra, &[written]).unwrap().frequency,
            3
        );
    }
}
