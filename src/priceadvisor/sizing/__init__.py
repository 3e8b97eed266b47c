"""Where prices are judged: workload sizing, calibration, rent-vs-buy and the advisor."""
