"""Floats compared to 12 significant digits: the derived values a results file stores against its writer's
function over the file's data, another CPU's or library's last bits aside."""


def rounded(value):
    """A JSON value with every float to 12 significant digits."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value
