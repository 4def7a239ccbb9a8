"""Checks of Makkuva et al. 2020: claims D1-D6."""
