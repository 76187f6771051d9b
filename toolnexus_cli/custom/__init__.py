"""The person's own slash commands: found in prompt files, expanded, run as a turn."""
