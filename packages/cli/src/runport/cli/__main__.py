from runport.cli import main

main()
