"""The command line: one module per typer command group, and the options and output they share."""
