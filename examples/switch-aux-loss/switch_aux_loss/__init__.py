"""An example moe-lab plugin: claim SW1, Switch Transformer's auxiliary loss under balanced dispatch.

Fedus, Zoph and Shazeer (2022), *Switch Transformers*, eq. (4): with N experts, f_i the fraction of
tokens dispatched (top-1) to expert i and P_i the mean router probability of expert i, the auxiliary
loss is N·Σ f_i P_i, and under uniform routing it equals 1.
"""
