"""The workspace journal: what each tool call changed in the workspace, as values
(changes.py), the contents kept by hash so a change can be undone and redone."""
