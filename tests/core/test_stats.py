"""lab.core.stats.interval_basis: the stored basis of an interval, refused when malformed."""

import pytest

from lab.core.schema import ResultsError
from lab.core.stats import interval_basis
from lab.docs.markdown import basis


def test_interval_basis_is_printed_from_the_record():
    r = {"claim": "B2", "key": "k", "extra": {"interval": interval_basis("Clopper–Pearson", 0.999375, 20000)}}
    assert basis(r) == "99.94 % Clopper–Pearson, n = 20000 samples"
    assert basis(r, "level") == "99.94 %"
    assert basis(r, "size") == "n = 20000 samples"
    runs = {
        "claim": "D2",
        "key": "k",
        "extra": {"interval": interval_basis("Clopper–Pearson", 0.99, 12, "runs")},
    }
    assert basis(runs) == "99 % Clopper–Pearson, n = 12 runs"


@pytest.mark.parametrize(
    ("args", "name"),
    [(("Wald", 0.99, 10), "method"), (("Hoeffding", 1.0, 10), "level"), (("Hoeffding", 0.9, 0), "n")],
)
def test_interval_basis_refuses_bad_input_naming_the_parameter(args, name):
    with pytest.raises(ValueError, match=name):
        interval_basis(*args)


def test_a_record_without_a_basis_stops_the_render():
    with pytest.raises(ResultsError, match=r"B2/k has no extra\.interval"):
        basis({"claim": "B2", "key": "k", "extra": {}})


def test_a_records_law_is_printed_from_its_params():
    from lab.docs.markdown import law

    params = {"alpha": [1.0, 2.0], "gamma": [0.5, 3.0], "beta": [1.0, 2.0], "sigma_p": 1.0, "n": 10}
    assert law(params) == "α ~ U(1, 2), γ ~ U(0.5, 3), β ~ U(1, 2), σ_p = 1"
    with pytest.raises(ResultsError, match="no α and γ"):
        law({"law": "α ~ U(1, 2)"})
