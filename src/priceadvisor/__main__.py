from priceadvisor.cli.light import main

main()
