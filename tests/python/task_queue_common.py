"""The task-queue tools of the Letta memory tutorial, as Engram runs them.

Same names and signatures as the tutorial; the bodies use the `agent_state.memory` API the
tool runner provides instead of calling back into the server with a client.
"""


def task_queue_push(agent_state: "AgentState", task_description: str):
    """
    Push to a task queue stored in core memory.

    Args:
        task_description (str): A description of the next task you must accomplish.

    Returns:
        Optional[str]: None is always returned as this function
        does not produce a response.
    """
    import json  # inside: upsert sends only the function's source

    tasks = json.loads(agent_state.memory.get_block("tasks").value)
    tasks.append(task_description)
    agent_state.memory.update_block_value("tasks", json.dumps(tasks))
    return None


def task_queue_pop(agent_state: "AgentState"):
    """
    Get the next task from the task queue

    Returns:
        Optional[str]: Remaining tasks in the queue
    """
    import json  # inside: upsert sends only the function's source

    tasks = json.loads(agent_state.memory.get_block("tasks").value)
    if len(tasks) == 0:
        return None
    remaining_tasks = json.dumps(tasks[1:])
    agent_state.memory.update_block_value("tasks", remaining_tasks)
    return f"Remaining tasks {remaining_tasks}"
