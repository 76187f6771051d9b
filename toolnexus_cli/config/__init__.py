"""The config: the file read and checked, settings, keys, model lists, a repository's layer."""
