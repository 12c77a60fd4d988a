from lockgate.console import main

main()
