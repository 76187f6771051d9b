"""The tools a command offers: their sources, workspace, approval, hooks and subagents."""
