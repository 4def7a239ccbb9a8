"""Declarations, stable names and seeds: importing a module registers nothing; the loader collects."""

import os
import types

import pytest

from lab.core import registry
from lab.core.records import upper_bound_record


def _record(claim="Z9"):
    return upper_bound_record(
        claim=claim, key="k", statement="s", kind="premise", params={}, measured=0.0, bound=1.0
    )


def test_a_decorator_attaches_a_declaration_and_registers_nothing():
    before = set(registry.declared("check"))

    @registry.register("Z9", name="test.attached")
    def check(seed, tier):
        return _record()

    assert set(registry.declared("check")) == before
    (declaration,) = check.__moe_lab__
    assert declaration.name == "test.attached" and declaration.claims == ("Z9",)
    assert check(1, "quick").claim == "Z9"  # the function itself is unchanged


def test_register_needs_an_explicit_name():
    with pytest.raises(TypeError):
        registry.register("Z9")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="stable name"):
        registry.register("Z9", name="")


def test_collect_finds_declarations_with_the_module_that_defines_them():
    module = types.ModuleType("fake_plugin")

    @registry.register("Z9", name="test.found")
    def one(seed, tier):
        return _record()

    module.one, module.again = one, one
    (declaration, where), again = registry.collect(module)
    assert declaration.func is one and where == __name__ and again == (declaration, where)


def test_two_checks_with_one_name_in_one_package_are_refused(install_plugin):
    source = """
    from lab.core.registry import register

    @register("Z9", name="test.same")
    def one(seed, tier):
        return []

    @register("Z9", name="test.same")
    def two(seed, tier):
        return []
    """
    module = install_plugin("twins", source)
    with pytest.raises(registry.Refusal) as refused:
        registry.checks(["Z9"])
    assert str(refused.value) == (
        f"two checks are named 'test.same': {module} (package twins) and {module} (package twins)"
    )
    assert registry.find("check", "checks.makkuva.check_d1") is not None
    with pytest.raises(registry.Refusal):
        registry.find("check", "test.same")


def test_seed_derives_from_the_name_alone():
    a = registry.Check("test.a", ("Z9",), lambda seed, tier: _record())
    assert registry.derived_seed(0, "test.a") == registry.derived_seed(0, "test.a")
    assert registry.derived_seed(0, "test.a") != registry.derived_seed(0, "test.b")
    assert registry.derived_seed(0, a.name) != registry.derived_seed(1, a.name)


def test_every_check_name_is_unique_and_explicit():
    names = [c.name for c in registry.checks()]
    assert len(names) == len(set(names)) and all(names)


def test_find_loads_the_light_plugins_first_and_every_plugin_for_an_unknown_name():
    """A command or task is found without the science plugins; an unknown name loads them all, then None."""
    light = [
        e for e in registry.entry_points(group=registry.PLUGIN_GROUP) if e.name in registry.LIGHT_PLUGINS
    ]
    assert sorted(e.name for e in light) == sorted(registry.LIGHT_PLUGINS)
    assert registry.find("command", "sweep").name == "sweep"
    assert registry.find("task", "routing-probability").name == "routing-probability"
    assert registry.find("check", "no-such-check") is None
    assert registry.find("check", "checks.makkuva.check_d1").name == "checks.makkuva.check_d1"


def test_find_searches_each_plugin_packages_light_module_before_loading_any_science(monkeypatch):
    """A paper's sweep task is found in its package's `LIGHT_MODULE`: no plugin but the light ones is
    loaded whole."""
    for name, empty in (("_ORIGINS", {}), ("_OWNERS", {}), ("_CONFLICTS", []), ("_LOADED", set())):
        monkeypatch.setattr(registry, name, empty)
    monkeypatch.setattr(registry, "_REGISTRY", {k: {} for k in registry.DECLARATION_KINDS})
    found = registry.find("task", "routing-tightness")
    assert found.run.__module__ == f"lab.chen2022.{registry.LIGHT_MODULE}"
    assert {name for _, name in registry._LOADED if "." not in name} == set(registry.LIGHT_PLUGINS)
    assert registry.find("runner", "tasks").name == "tasks"  # lab.sweeps' runner, light too


def test_a_plugin_installed_after_a_lookup_is_found_even_within_one_folder_time_stamp(
    install_plugin, tmp_path
):
    """The plugin listing is read once per state of the `sys.path` folders; a second install into the
    folder the first went to is found even when the folder keeps its time stamp (a coarse clock), since
    installing calls `importlib.invalidate_caches()`, which clears the listing as it clears the standard
    library's."""
    source = (
        "from lab.core.registry import register\n\n@register('{}', name='{}')\ndef c(s, t):\n    return []\n"
    )
    install_plugin("first-plugin", source.format("S7", "first.check"))
    assert registry.find("check", "first.check") is not None
    stamp = tmp_path.stat().st_mtime_ns
    install_plugin("second-plugin", source.format("S8", "second.check"))
    os.utime(tmp_path, ns=(stamp, stamp))  # the folder as if in one tick of its clock
    assert registry.find("check", "second.check") is not None
    assert registry._plugins() is registry._plugins()  # read once while nothing changes
