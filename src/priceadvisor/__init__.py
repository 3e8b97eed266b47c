"""priceadvisor: live cloud GPU prices, their history, and what your workloads would cost."""

__version__ = "0.1.0"
