from priceadvisor.cli import main

main()
