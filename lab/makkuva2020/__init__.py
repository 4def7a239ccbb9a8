"""Makkuva et al. 2020: the gated regression MoE, the losses L4 and L_log, their fits and Fig. 1."""
