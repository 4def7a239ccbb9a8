"""Fixtures of the description and findings tests."""

import pytest

from lab.core.descriptions import DescriptionError


@pytest.fixture
def refuses_in_one_line(tmp_path):
    """`refuses_in_one_line(load, name, text, says)`: `load` refuses a file `name` holding `text` with one
    line that names the file and says `says`."""

    def refuses(load, name: str, text: str, says: str) -> None:
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(DescriptionError) as refused:
            load(path)
        assert str(refused.value).startswith(f"{path}: ") and says in str(refused.value)
        assert "\n" not in str(refused.value)

    return refuses
