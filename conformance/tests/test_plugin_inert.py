"""Installed, the plugin must not change any other test run: no fixtures, no collected tests, no
report, no clash with a project's own ``--provider`` option, until a run asks for a provider."""

from __future__ import annotations

import pytest


def test_other_projects_run_unchanged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_one():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "onnxplug conformance" not in result.stdout.str()
    assert not list(pytester.path.glob("conformance-*.json"))


@pytest.mark.parametrize("fixture", ["provider_class", "conformance", "provider_under_test", "claimed_dtypes"])
def test_no_fixture_leaks_into_other_projects(pytester: pytest.Pytester, fixture: str) -> None:
    pytester.makepyfile(test_uses=f"def test_it({fixture}):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*fixture '{fixture}' not found*"])


def test_a_project_may_own_a_provider_option(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        "def pytest_addoption(parser):\n"
        "    parser.addoption('--provider', default='mine')\n")
    pytester.makepyfile(test_opt="def test_it(request):\n    assert request.config.getoption('provider') == 'cloud'\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--provider", "cloud")
    result.assert_outcomes(passed=1)


def test_the_package_collects_nothing_without_a_provider(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--pyargs", "onnxplug_conformance")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert not list(pytester.path.glob("conformance-*.json"))


def test_help_shows_the_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(["*--onnxplug-provider=NAME*", "*--conformance-json=PATH*"])


def test_provider_spelling_with_pyargs_and_a_bad_provider(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--pyargs", "onnxplug_conformance",
                                           "--provider", "no_such_provider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown provider 'no_such_provider'; installed providers:*numpy*"])
