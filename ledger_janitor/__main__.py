from ledger_janitor.cli import main

main()
