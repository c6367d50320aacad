from ledger_janitor.entry import main

main()
