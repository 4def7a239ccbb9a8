"""The command line, `python -m lab COMMAND`: verify, replicate, docs and the commands plugins declare."""
