"""The ids of threads that keep a subagent's transcript: its parent's id, then the call's."""

SUBAGENT_MARK = "/task-"  # in a subagent's thread id, between its parent's and the call's


def subagent_thread(parent: str, call_id: str) -> str:
    """The id of the thread that keeps the transcript of the subagent of `call_id`."""
    return f"{parent}{SUBAGENT_MARK}{call_id}"


def is_subagent_thread(thread: str) -> bool:
    return SUBAGENT_MARK in thread
