from lockgate.cli import main

main()
