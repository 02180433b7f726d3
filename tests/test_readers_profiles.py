"""Every hand-made profile of tests/helpers/profiles.py is a valid `yoloprof.profile/1` document."""

from __future__ import annotations


import jsonschema
import pytest

from helpers.profiles import cpu_train_profile, gpu_train_profile, infer_profile


@pytest.mark.parametrize("build", [gpu_train_profile, cpu_train_profile, infer_profile])
def test_hand_made_profiles_are_valid(build, schema) -> None:
    jsonschema.validate(build(), schema)
