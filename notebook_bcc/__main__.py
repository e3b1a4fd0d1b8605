from notebook_bcc.cli import main

main()
