"""The command line: Typer commands, table/CSV/JSON output and progress; the top stage."""
