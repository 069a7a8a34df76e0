"""Provider options: defaults, onnxruntime-style string values, and refusals that name the option."""

from __future__ import annotations

import pytest
from onnxplug.errors import UnsupportedOptionError

from onnxplug_cupy.options import CupyOptionError, CupyOptions, parse_options
from onnxplug_cupy.provider import CupyProvider


def test_defaults() -> None:
    assert parse_options({}) == CupyOptions(device_id=0, gpu_mem_limit=0, fuse_elementwise=True)


@pytest.mark.parametrize("raw, expected", [
    ({"device_id": "1"}, CupyOptions(device_id=1)),
    ({"device_id": 2}, CupyOptions(device_id=2)),
    ({"gpu_mem_limit": "2147483648"}, CupyOptions(gpu_mem_limit=2147483648)),
    ({"gpu_mem_limit": 1024.0}, CupyOptions(gpu_mem_limit=1024)),
    ({"fuse_elementwise": "0"}, CupyOptions(fuse_elementwise=False)),
    ({"fuse_elementwise": "False"}, CupyOptions(fuse_elementwise=False)),
    ({"fuse_elementwise": "on"}, CupyOptions(fuse_elementwise=True)),
    ({"fuse_elementwise": 0}, CupyOptions(fuse_elementwise=False)),
])
def test_values_as_python_or_onnxruntime_strings(raw: dict, expected: CupyOptions) -> None:
    assert parse_options(raw) == expected


@pytest.mark.parametrize("raw, culprit", [
    ({"device_id": "-1"}, "device_id"),
    ({"device_id": -1}, "device_id"),
    ({"device_id": "gpu0"}, "device_id"),
    ({"device_id": True}, "device_id"),
    ({"device_id": 1.5}, "device_id"),
    ({"gpu_mem_limit": "lots"}, "gpu_mem_limit"),
    ({"fuse_elementwise": "maybe"}, "fuse_elementwise"),
    ({"fuse_elementwise": 2}, "fuse_elementwise"),
])
def test_bad_values_are_refused_naming_the_option(raw: dict, culprit: str) -> None:
    with pytest.raises(CupyOptionError, match=culprit):
        parse_options(raw)


def test_option_errors_are_unsupported_option_errors() -> None:
    assert issubclass(CupyOptionError, UnsupportedOptionError)
    assert issubclass(CupyOptionError, ValueError)


def test_provider_refuses_unknown_options_by_name() -> None:
    # onnxruntime's CUDA options that this provider does not implement are refused, not ignored
    with pytest.raises(UnsupportedOptionError, match="cudnn_conv_algo_search"):
        CupyProvider({"cudnn_conv_algo_search": "EXHAUSTIVE"})


def test_provider_parses_options_without_touching_a_device() -> None:
    provider = CupyProvider({"device_id": "3", "fuse_elementwise": "false"})
    assert provider.settings == CupyOptions(device_id=3, fuse_elementwise=False)
    assert str(provider.device) == "cuda:3"
    assert provider.options["device_id"] == "3"  # what the user passed, as get_provider_options shows
    assert provider.allocator.device == provider.device == provider.data_transfer.device
