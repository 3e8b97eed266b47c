from priceadvisor.cli.app import main

main()
