"""The `hbh` command: one entry point that gathers the sub-commands of every layer."""
