"""Subcommands of analyses beyond run/report/config: one module per analysis, each registering
its commands with mpilens.cli.command. Adding a module here adds its commands to `mpilens`."""
