"""Context: keeping requests inside the model's window, and what a thread keeps but does not send.

The thread keeps every message. When a request would pass the policy's threshold (a share
of the model's window, minus the reply's max_tokens), older turns are summarized by the
same model into one record message appended to the thread; `_marks.sendable` sends the
record in their place. Sent verbatim: system messages, the first prompt, pinned messages,
the last prompt, and the newest whole groups that fit (a tool call is never parted from
its results). If the summary request cannot fit, the oldest turns are left out instead,
and the record and event say so. An overflow error from the endpoint compacts once more
and the turn is retried once (_loop.py); then the error says what did not fit.

Token counts: what the endpoint counted for the last reply (the request's prompt tokens,
and the reply's own completion tokens when it reports them) plus characters/4 for what was
added since, or characters/4 for all of it when no reply has been seen. A prompt larger
than the whole window is refused before anything is asked of the model.

One module a job: `keeper` (the state and the decisions), `plan` (what a compaction
summarizes), `pricing` (what tokens cost); internal: `_summary` (asking the model for the
summary), `_marks` (what is kept but not sent, and pins), `_estimate` (token estimates) and
`_windows` (the window and where it comes from).
"""

__all__: list[str] = []
