"""Numba kernels, each module beside its NumPy twin (`X.py` and `X_numpy.py`), and σ of eq. (3.1)."""
